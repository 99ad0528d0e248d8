"""The blocking facade's cost: `sync.Router.call` against `await Router.call` on the same kind of peer.

Two Routers, each with the dispatch benchmark's in-process `echo` server: an async one in the
benchmark's own event loop (the baseline), and a `sync.Router` whose loop runs in its own thread
(on the backend the benchmark runs on). The subject's calls are made from a plain worker thread,
as a script's would be (a thread that runs Trio itself pays a helper thread per call besides).
Blocks of calls alternate, order rotated every
round; the ratio is the median over rounds of (median latency of the subject's block / the
baseline's). Informational, no target: the difference is one hop to the loop thread and back.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio.to_thread

from mcpx_router import Router, sync

from ._common import Row, Settings, collect, fmt_seconds, median
from .dispatch import ARGUMENTS, echo_server

NAME = "facade"


async def run(settings: Settings) -> list[Row]:
    rounds, block = (8, 75) if settings.quick else (30, 100)
    backend: sync.Backend = "trio" if settings.backend == "trio" else "asyncio"
    clock = time.perf_counter_ns
    medians: dict[str, list[float]] = {"async": [], "sync": []}
    with sync.Router(backend=backend) as blocking:
        async with Router() as router:
            (public,) = await router.join("echo", echo_server())
            blocking.join("echo", echo_server())
            assert (await router.call(public, ARGUMENTS)).text == blocking.call(public, ARGUMENTS).text

            async def async_block() -> list[float]:
                out = []
                for _ in range(block):
                    start = clock()
                    await router.call(public, ARGUMENTS)
                    out.append((clock() - start) / 1e9)
                return out

            def blocking_block() -> list[float]:
                out = []
                for _ in range(block):
                    start = clock()
                    blocking.call(public, ARGUMENTS)
                    out.append((clock() - start) / 1e9)
                return out

            async def sync_block() -> list[float]:
                return await anyio.to_thread.run_sync(blocking_block)

            blocks: dict[str, Callable[[], Awaitable[list[float]]]] = {
                "async": async_block,
                "sync": sync_block,
            }
            order = list(blocks)
            for name in order:
                await blocks[name]()
            print(f"{rounds} rounds x {block} calls per variant, order rotated")
            for index in range(rounds):
                collect()
                shift = index % 2
                for name in order[shift:] + order[:shift]:
                    medians[name].append(median(await blocks[name]()))
    ratios = [s / a for s, a in zip(medians["sync"], medians["async"], strict=True)]
    ratio = median(ratios)
    base, subject = median(medians["async"]), median(medians["sync"])
    print(
        f"  sync.Router.call: {fmt_seconds(subject)} vs await Router.call {fmt_seconds(base)}; per-round "
        f"ratios {min(ratios):.3f}-{max(ratios):.3f}, median {ratio:.3f}x"
    )
    return [
        Row(
            NAME,
            f"sequential latency per call, sync.Router.call ({backend} loop thread) vs await Router.call",
            fmt_seconds(base),
            fmt_seconds(subject),
            f"{ratio:.3f}x",
            "—",
            None,
        )
    ]
