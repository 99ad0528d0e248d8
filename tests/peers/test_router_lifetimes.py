"""Nothing outlives the Router: no subprocess, file descriptor, socket or task after leaving."""

from __future__ import annotations

import asyncio

import anyio
import pytest
import sniffio

from mcpx_router import HttpPeer, Router

from ..support.router_support import (
    ABANDONED_HTTP_STREAMS,
    child_pids,
    growing_server,
    http_server,
    open_fds,
    tiny,
)

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]

CYCLES = 200
WORKERS = 4


def _tasks() -> int | None:
    """Live asyncio tasks (trio has no public census; its nurseries make leaks impossible anyway)."""
    if sniffio.current_async_library() == "asyncio":
        return len(asyncio.all_tasks())
    return None


async def test_join_leave_cycles_leave_nothing_behind() -> None:
    async with Router() as router:  # warm up what the event loop creates lazily
        await router.join("warm", tiny())
    fds, children, tasks = open_fds(), child_pids(), _tasks()
    async with Router() as router:

        async def cycles(worker: int) -> None:
            for i in range(CYCLES // WORKERS):
                peer = f"w{worker}-{i}"
                names = await router.join(peer, tiny())
                assert (await router.call(names[0], {"text": peer})).text == peer
                await router.leave(peer)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for worker in range(WORKERS):
                    tg.start_soon(cycles, worker)
        assert router.peers == () and router.adapter.peers == () and router.tools == ()
        assert child_pids() == children
    assert open_fds() == fds
    assert _tasks() == tasks


async def test_leaving_the_block_closes_every_kind_of_peer() -> None:
    async with http_server() as server:
        async with Router() as router:  # warm up
            await router.join("warm", HttpPeer(server.url))
        fds, children, tasks = open_fds(), child_pids(), _tasks()
        async with Router() as router:
            for i in range(3):
                await router.join(f"stdio{i}", tiny())
            await router.join("web-new", HttpPeer(server.url))
            await router.join("web-old", HttpPeer(server.url, mode="legacy"))
            await router.join("inproc", growing_server())
            assert len(child_pids() - children) == 3
            assert open_fds() > fds
        assert child_pids() == children
        assert open_fds() == fds
        assert _tasks() == tasks
