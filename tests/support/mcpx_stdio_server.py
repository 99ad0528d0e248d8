"""A tiny stdio MCP server for the MCPx bridge tests."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("stdio-echo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def slow_add(a: int, b: int, delay: float = 0.0) -> int:
    """Add two numbers after a delay (seconds)."""
    await anyio.sleep(delay)
    return a + b


@server.tool()
async def count(n: int, ctx: Context) -> int:
    """Report progress n times, then return n."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return n


if __name__ == "__main__":
    server.run("stdio")
