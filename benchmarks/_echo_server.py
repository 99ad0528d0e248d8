"""An MCPServer over stdio for the Router benchmarks: `echo`, `toggle`, and `--tools N` more tools.

`toggle(name)` adds a tool, or takes it away if it exists, without announcing the change.
"""

import argparse
from typing import Literal

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo")


@server.tool()
def echo(text: str, times: int = 1) -> str:
    """Repeat `text` `times` times."""
    return text * times


def lookup(query: str, region: Literal["eu", "us", "apac"], limit: int = 10) -> str:
    """Look something up."""
    return query


_toggled: set[str] = set()


@server.tool()
def toggle(name: str) -> str:
    """Add the tool `name`, or remove it if it exists (without a notification)."""
    if name in _toggled:
        server.remove_tool(name)
        _toggled.discard(name)
        return "removed"
    server.add_tool(lookup, name=name)
    _toggled.add(name)
    return "added"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0)
    for i in range(parser.parse_args().tools):
        server.add_tool(lookup, name=f"lookup_{i}", description=f"Look something up, way {i}.")
    server.run()
