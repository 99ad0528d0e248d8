"""Helpers for the Router tests: our own small peers, waiting for events, counting processes and fds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.abc
import pytest
from mcp.server.mcpserver import Context, MCPServer

from mcpx_router import EventStream, RouterEvent, StdioPeer

HERE = Path(__file__).resolve().parent
TINY = HERE / "tiny_stdio_server.py"
HTTP_SERVER = HERE / "http_peer_server.py"
WAIT = 15.0
"""Seconds any awaited event may take before the test fails."""

E = TypeVar("E", bound=RouterEvent)

ABANDONED_HTTP_STREAMS = [
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <async_generator object (EventSource|PoolByteStream|Response)\."
        ":pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning"),
]
"""The mcp SDK's HTTP transport abandons httpx2 response streams mid-iteration when it closes or its
server dies (a plain `mcp.Client(url, mode="legacy")` does it too); on trio their async generators
are then collected unexhausted, with a ResourceWarning."""


def tiny(*args: str, env: dict[str, str] | None = None, **options: Any) -> StdioPeer:
    """Our standard-library stdio server (tests/support/tiny_stdio_server.py)."""
    return StdioPeer(sys.executable, [str(TINY), *args], env=env, **options)


async def next_event(
    events: EventStream, kind: type[E], where: Callable[[E], bool] = lambda _: True, within: float = WAIT
) -> E:
    """The next event of `kind` that satisfies `where`; fail after `within` seconds."""
    with anyio.fail_after(within):
        async for event in events:
            if isinstance(event, kind) and where(event):
                return event
    raise AssertionError(f"the event stream ended before a {kind.__name__} arrived")


def growing_server(name: str = "grower") -> MCPServer:
    """An in-process server whose `grow(name)` adds a tool and announces it (listen and legacy)."""
    server = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Offer one more tool."""
        server.add_tool(lambda text: text, name=name, description="An added tool.")
        if (ctx.protocol_version or "") >= "2026":
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    async def wait(seconds: float) -> str:
        """Answer after some seconds."""
        await anyio.sleep(seconds)
        return "waited"

    return server


async def file_contains(path: Path, text: str, within: float = WAIT) -> None:
    """Wait until another process has written `text` to `path` (there is no event to await)."""
    file = anyio.Path(path)
    with anyio.fail_after(within):
        while True:
            if await file.exists() and text in await file.read_text():
                return
            await anyio.sleep(0.05)


def child_pids() -> set[int]:
    """Child processes of this process, reaped or not (Linux /proc)."""
    me = os.getpid()
    children: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:  # zombies count: a child that was never reaped leaked too
            children.add(int(entry))
    return children


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpServer:
    """tests/support/http_peer_server.py as a subprocess on a fixed port, to be stopped and started again."""

    def __init__(self, log: Path | None = None, *, sse: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/{'sse' if sse else 'mcp'}"
        self.log = log
        self.sse = sse
        self.process: anyio.abc.Process | None = None

    async def start(self) -> None:
        args = [sys.executable, str(HTTP_SERVER), str(self.port)]
        if self.log is not None:
            args += ["--log", str(self.log)]
        if self.sse:
            args.append("--sse")
        self.process = await anyio.open_process(args, stdin=subprocess.PIPE, stdout=None, stderr=None)
        try:
            await self._wait_until_listening()
        except BaseException:
            await self.kill()
            raise

    async def _wait_until_listening(self) -> None:
        assert self.process is not None
        with anyio.fail_after(WAIT):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", self.port)
                except OSError:
                    if self.process.returncode is not None:
                        raise RuntimeError(
                            f"the HTTP test server exited with {self.process.returncode}"
                        ) from None
                    await anyio.sleep(0.05)
                else:
                    await stream.aclose()
                    return

    async def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with anyio.CancelScope(shield=True):
                process.kill()
                await process.wait()
                await process.aclose()


@asynccontextmanager
async def http_server(log: Path | None = None, *, sse: bool = False) -> AsyncIterator[HttpServer]:
    server = HttpServer(log, sse=sse)
    await server.start()
    try:
        yield server
    finally:
        await server.kill()
