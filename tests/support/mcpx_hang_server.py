"""A stdio MCP server for the MCPx command tests: `echo` answers, `hang` reports progress, then hangs."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("hang", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def hang(ctx: Context) -> str:
    """Report half of the work done, then never answer."""
    await ctx.report_progress(1, 2)
    await anyio.sleep_forever()
    return "unreachable"


if __name__ == "__main__":
    server.run("stdio")
