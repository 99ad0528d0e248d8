"""OpenAI's strict mode: its rules and size limits, how an MCP input schema is read, and its
conversion to strict parameters (or the reasons why not), with the nulls it adds taken out again."""
