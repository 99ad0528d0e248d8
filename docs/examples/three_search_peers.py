"""Three search peers behind one `search` function; one of them dies mid-conversation.

Run it: `python docs/examples/three_search_peers.py`. Each peer is this file run as a stdio MCP
server (`--serve NAME`); the peer `web` crashes on its second call, with the call in hand. The
model's tool calls are written out here as it would send them, so the example runs offline.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from mcpx_router import GroupChanged, GroupFailover, HealthChanged, Reconnect, Router, RouterEvent, StdioPeer


def serve(name: str) -> None:
    """One search peer over stdio; `web` ends its process on its second call."""
    server = MCPServer(f"{name}-search")
    calls = 0

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def search(query: str) -> str:
        """Search for documents matching a query."""
        nonlocal calls
        calls += 1
        if name == "web" and calls == 2:
            os._exit(1)  # a crash, with the call in hand
        return f"{name} found 3 results for {query!r}"

    server.run()


def model_call(call_id: str, arguments: dict[str, str]) -> dict[str, object]:
    """A tool call as the model sends it."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps(arguments)},
    }


SHOWING = False


def show(event: RouterEvent) -> None:
    """Print what the Router reports during the conversation."""
    if not SHOWING:
        return
    if isinstance(event, GroupChanged):
        print(f"  [event] group {event.group} {event.kind}: {', '.join(event.members)}")
    elif isinstance(event, GroupFailover):
        print(f"  [event] {event.group}: {event.peer} failed ({event.error_type}), trying {event.next_peer}")
    elif isinstance(event, HealthChanged) and not event.healthy:
        print(f"  [event] {event.peer} lost")


async def main() -> None:
    peers = {name: StdioPeer(sys.executable, [__file__, "--serve", name]) for name in ("web", "news", "docs")}
    aliases = {"search": ["web/search", "news/search", "docs/search"]}
    # A lost peer is tried again after a minute: long enough not to come back during the example.
    async with Router(
        aliases=aliases, hide_members=True, reconnect=Reconnect(initial_delay=60, max_delay=60), on_event=show
    ) as router:
        await router.join_all(peers)
        global SHOWING
        SHOWING = True
        [tool] = [t["function"] for t in router.get_openai_tools() if t["function"]["name"] == "search"]
        print(f"offered: {tool['name']}: {tool['description']}")
        print(f"  preferred peer: {tool['parameters']['properties']['peer']['enum']}")
        turns = [
            model_call("call_1", {"query": "mcp routers"}),
            model_call("call_2", {"query": "peer reputation", "peer": "web"}),
            model_call("call_3", {"query": "failover", "peer": "web"}),
            model_call("call_4", {"query": "load balancing"}),
        ]
        for call in turns:
            print(f"model calls search({call['function']['arguments']})")  # type: ignore[index]
            [answer] = await router.dispatch([call])
            print("  -> " + answer["content"].replace("\n\n", "\n     "))
        SHOWING = False
        print("statistics:")
        for peer, stats in router.stats().peers.items():
            failures = {kind: n for kind, n in stats.errors.items() if n}
            connected = router.status(peer).healthy
            print(f"  {peer}: {stats.calls} calls, failures {failures or 'none'}, connected {connected}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        anyio.run(main)
