"""Sync calls into an async router's event loop from other threads (`RouterCalls.call`): they
wait for a loop that is busy, however long, and fail at once, running nothing, when the loop's
thread is blocked waiting on the calling thread (what a synchronous `invoke` on the loop's
thread does: tests/integrations/test_langchain.py runs LangGraph's own agents that way)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from mcpx_router import InProcessPeer, Router, UsageError
from mcpx_router.integrations._router_calls import RouterCalls
from mcpx_router.testing import weather_station

from .peers import ROUTER_OPTIONS, called, search_peer, within

BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """`work` started in a new thread; the list gets what it returned or raised."""
    answer: list[Any] = []

    def run() -> None:
        try:
            answer.append(work())
        except Exception as error:
            answer.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


@BACKENDS
def test_a_loop_that_is_only_busy_is_waited_for(backend: str) -> None:
    async def main() -> None:
        async with Router(**ROUTER_OPTIONS) as router:
            await router.join("weather", InProcessPeer(weather_station()))
            calls = RouterCalls(router)
            thread, answer = in_thread(lambda: calls.call("weather__forecast", {"city": "Oslo"}))
            time.sleep(0.5)  # noqa: ASYNC251  (the loop's thread blocked, not waiting on that thread)
            await anyio.to_thread.run_sync(thread.join)
            [outcome] = answer
            assert outcome.text == "Oslo: snow, 3°C, for the next 3 day(s)"

    within(30, backend, main)


@BACKENDS
def test_a_loop_thread_joining_the_caller_fails_the_call_which_never_runs(
    backend: str, tmp_path: Path
) -> None:
    log = tmp_path / "web.log"

    async def main() -> None:
        async with Router(**ROUTER_OPTIONS) as router:
            await router.join("web", search_peer("web", log))
            calls = RouterCalls(router)
            thread, answer = in_thread(lambda: calls.call("web__search", {"query": "mcp"}))
            thread.join()  # on the loop's thread: the call can never be served
            [error] = answer
            assert isinstance(error, UsageError) and "deadlock" in str(error)
            await anyio.sleep(0.3)
            assert called(log) == []

    within(30, backend, main)


def slow_peer(events: list[str], started: anyio.Event) -> MCPServer:
    server = MCPServer("slow")

    @server.tool()
    async def wait(seconds: float) -> str:
        """Wait, then answer."""
        events.append("started")
        started.set()
        await anyio.sleep(seconds)
        events.append("finished")
        return "waited"

    return server


@BACKENDS
def test_a_call_under_way_when_the_loop_blocks_on_its_caller_is_cancelled(backend: str) -> None:
    events: list[str] = []

    async def main() -> None:
        started = anyio.Event()
        async with Router(**ROUTER_OPTIONS) as router:
            await router.join("slow", InProcessPeer(slow_peer(events, started)))
            calls = RouterCalls(router)
            thread, answer = in_thread(lambda: calls.call("slow__wait", {"seconds": 1}))
            await started.wait()
            thread.join()  # the call is under way, and the loop now waits on its caller
            [error] = answer
            assert isinstance(error, UsageError)
            await anyio.sleep(1.5)
            assert events == ["started"]

    within(30, backend, main)
