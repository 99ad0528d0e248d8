"""An MCPServer over stdio for the failover benchmark: a read-only `search` that can crash mid-call.

`search(query)` answers with the server's `--name`; a query `die@NAME` ends the process of that
name before it answers, as a peer that dies with a call in hand.
"""

import argparse
import os

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--name", required=True)
options = parser.parse_args()
server = MCPServer(f"bench-search-{options.name}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def search(query: str) -> str:
    """Search for a query."""
    if query == f"die@{options.name}":
        os._exit(3)
    return f"{options.name}: {query}"


if __name__ == "__main__":
    server.run()
