"""Peers for the framework tests: our stdio search peers (they log every call they read, and die
on demand), an in-process peer that answers with an image, and the Router options they share;
`called` reads a search peer's log, `within` runs a test's event loop under a watchdog."""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
from mcp.server.mcpserver import MCPServer

from mcpx_router import Reconnect, StdioPeer

from ..support.router_support import HERE

SEARCH = HERE / "search_stdio_server.py"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""
ROUTER_OPTIONS: dict[str, Any] = {
    "reconnect": Reconnect(initial_delay=30, max_delay=30, jitter=0),  # a lost peer stays lost
    "health_interval": None,
}


def search_peer(name: str, log: Path) -> StdioPeer:
    """A stdio peer with a read-only `search(query)`; a query "die@NAME" kills peer NAME mid-call."""
    args = [str(SEARCH), "--name", name, "--read-only"]
    return StdioPeer(sys.executable, args, env={"TINY_SERVER_LOG": str(log)})


def search_group(tmp_path: Path) -> tuple[dict[str, StdioPeer], dict[str, Any]]:
    """Three stdio search peers and the Router options that make their `search` one group."""
    peers = {name: search_peer(name, tmp_path / f"{name}.log") for name in ("web", "news", "docs")}
    options = {
        **ROUTER_OPTIONS,
        "aliases": {"search": [f"{name}/search" for name in peers]},
        "hide_members": True,
    }
    return peers, options


def camera() -> MCPServer:
    """An in-process peer whose `snapshot(room)` answers with a caption and a PNG image."""
    server = MCPServer("camera")

    @server.tool(structured_output=False)
    def snapshot(room: str) -> list[mt.TextContent | mt.ImageContent]:
        """Take a picture of a room."""
        picture = mt.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")
        return [mt.TextContent(type="text", text=f"snapshot of {room}"), picture]

    return server


def called(log: Path) -> list[dict[str, Any]]:
    """The `tools/call` requests a stdio peer read, from its own log."""
    if not log.exists():
        return []
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    return [request["params"] for request in requests if request.get("method") == "tools/call"]


def within(seconds: float, backend: str, main: Callable[[], Awaitable[None]]) -> None:
    """Run `main` on `backend` in its own thread: a regression that blocks its event loop for
    good fails the test when `seconds` have passed instead of hanging the suite."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(main, backend=backend)
        except BaseException as error:
            failure.append(error)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(seconds)
    assert not runner.is_alive(), f"still blocked after {seconds} s"
    if failure:
        raise failure[0]
