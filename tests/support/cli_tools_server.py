"""An MCPServer over stdio whose tools have typed parameters, progress, images and errors.

    python tests/support/cli_tools_server.py

Tools: ``args(name, count=1, flag=False, ratio=0.5, tags=None, color="red")`` answers the JSON of
what it received; ``add(a, b)`` a structured int; ``steps(n)`` reports n progress notifications;
``picture()`` a tiny PNG; ``refuse(reason)`` fails with the reason; ``point(x, y)`` has a schema
with ``"additionalProperties": false``.
"""

from __future__ import annotations

import json
from typing import Literal

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def build() -> MCPServer:
    server = MCPServer("cli-tools")

    @server.tool()
    def args(
        name: str,
        count: int = 1,
        flag: bool = False,
        ratio: float = 0.5,
        tags: list[str] | None = None,
        color: Literal["red", "blue"] = "red",
    ) -> str:
        """Answer the arguments received, as JSON.

        A second line of description.
        """
        received = {"name": name, "count": count, "flag": flag, "ratio": ratio, "tags": tags, "color": color}
        return json.dumps(received, sort_keys=True)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def steps(n: int, ctx: Context) -> str:
        """Report n steps of progress, then answer."""
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"step {step}")
            await anyio.sleep(0.01)
        return f"{n} steps done"

    @server.tool()
    def picture() -> Image:
        """A one-pixel PNG."""
        return Image(data=PNG, format="png")

    @server.tool()
    def refuse(reason: str) -> str:
        """Fail with the reason."""
        raise ValueError(reason)

    @server.tool()
    def point(x: int, y: int) -> str:
        """A point; its schema takes no other parameters."""
        return f"({x}, {y})"

    tool = server._tool_manager.get_tool("point")
    assert tool is not None
    tool.parameters["additionalProperties"] = False
    return server


if __name__ == "__main__":
    build().run("stdio")
