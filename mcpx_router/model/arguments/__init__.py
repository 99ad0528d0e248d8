"""The arguments a model sends for a tool call: parsed, repaired where the intent is evident,
checked against the peer's input schema, and JSON-string parameters decoded."""
