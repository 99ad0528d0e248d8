"""The catalogue the tests pin: real servers' tool lists plus the demo peers, in every format.

`python tests/support/default_catalogue.py OUT.json` writes it with whatever `mcpx_router` is
importable; the pinned file was written by the code before groups existed (its `relevant` list again
when ranking began to spread copies apart), so the test proves
that an adapter given no group options still publishes exactly that.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as mt
from mcp.server.lowlevel import Server

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.testing import demo_peers

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "tool_schemas"
PINNED = Path(__file__).resolve().parent / "fixtures" / "pinned" / "default_catalogue.json"


def listed_server(name: str, tools: list[dict[str, Any]]) -> Server[Any]:
    """A lowlevel server that lists exactly `tools` (as JSON) and answers nothing else."""
    listed = [mt.Tool.model_validate(tool) for tool in tools]

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=listed)

    return Server(name, on_list_tools=list_tools)


def servers() -> dict[str, Any]:
    """Peers by id: each fixture server, a copy of one (the same tools under two peers), the demo."""
    out: dict[str, Any] = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["server"]] = listed_server(data["server"], data["tools"])
    time = json.loads((SCHEMAS / "mcp-server-time.json").read_text(encoding="utf-8"))
    out["time-copy"] = listed_server("time-copy", time["tools"])
    out.update(demo_peers())
    return out


async def catalogue(**options: Any) -> dict[str, Any]:
    """Every format of the tool lists of an adapter with `options` holding `servers()`."""
    async with OpenAIPeerToolAdapter(**options) as adapter:
        clients = [mcp.Client(server) for server in servers().values()]
        for client in clients:
            await client.__aenter__()
        try:
            for peer, client in zip(servers(), clients, strict=True):
                await adapter.add_peer(peer, client)
            return {
                "chat": list(adapter.get_openai_tools()),
                "responses": list(adapter.get_responses_tools()),
                "functions": list(adapter.get_openai_functions()),
                "relevant": list(adapter.get_openai_tools(relevant_to="current time in Paris", max_tools=5)),
            }
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else PINNED
    out.write_text(json.dumps(anyio.run(catalogue), indent=1, sort_keys=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
