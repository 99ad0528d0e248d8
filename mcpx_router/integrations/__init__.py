"""mcpx_router's tools in other agent frameworks, each an optional extra, loaded only when imported.

- `mcpx_router.integrations.agents` (`pip install 'mcpx-router[agents]'`): `RouterMCPServer`,
  a Router or adapter as one of the OpenAI Agents SDK's MCP servers
  (`Agent(mcp_servers=[RouterMCPServer(router)])`).
- `mcpx_router.integrations.pydantic_ai` (`pip install 'mcpx-router[pydantic-ai]'`):
  `RouterToolset`, a Router or adapter as a Pydantic AI toolset
  (`Agent(model, toolsets=[RouterToolset(router)])`).

Each offers the tools the Router publishes now, read again at every turn, and sends every call
through the Router's own dispatch. docs/frameworks.md compares them with each framework's own MCP
support. Nothing here is imported by `import mcpx_router`.
"""
