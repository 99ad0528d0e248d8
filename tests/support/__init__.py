"""Shared test servers and helpers: in-process and stdio MCP servers, the OpenAI replay server."""
