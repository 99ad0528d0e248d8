"""The deadlock check's cost: a framework tool's sync call into an async Router from a worker
thread (`RouterCalls.call`, what LangChain's `invoke` and DSPy's sync call run) against
`anyio.from_thread.run(router.call, ...)`, the plain hop to the loop thread it replaced.

One Router with the dispatch benchmark's in-process `echo` server, in the benchmark's own event
loop; both variants' calls are made from one worker thread. `RouterCalls.call` looks whether
the loop's thread waits on the caller before it submits the call, and again only when the call
has taken longer than 50 ms (none does here). Blocks of calls alternate, order rotated every
round; the ratio is the median over rounds of (median latency of the subject's block / the
baseline's). Target: ≤ 1.10x.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from mcpx_router import Router
from mcpx_router.integrations._router_calls import RouterCalls

from .._common import Row, Settings, collect, fmt_seconds, median
from ..dispatch import ARGUMENTS, echo_server

NAME = "loopcalls"
TARGET = 1.10


async def run(settings: Settings) -> list[Row]:
    rounds, block = (8, 75) if settings.quick else (30, 100)
    clock = time.perf_counter_ns
    medians: dict[str, list[float]] = {"anyio": [], "checked": []}
    async with Router() as router:
        (public,) = await router.join("echo", echo_server())
        calls = RouterCalls(router)
        token = anyio.lowlevel.current_token()
        plain = functools.partial(anyio.from_thread.run, router.call, public, ARGUMENTS, token=token)
        checked = functools.partial(calls.call, public, ARGUMENTS)
        first = await anyio.to_thread.run_sync(plain)
        assert first.text == (await anyio.to_thread.run_sync(checked)).text

        def timed(call: Callable[[], object]) -> list[float]:
            out = []
            for _ in range(block):
                start = clock()
                call()
                out.append((clock() - start) / 1e9)
            return out

        blocks = {"anyio": plain, "checked": checked}
        order = list(blocks)
        for name in order:
            await anyio.to_thread.run_sync(timed, blocks[name])
        print(f"{rounds} rounds x {block} calls per variant, order rotated")
        for index in range(rounds):
            collect()
            shift = index % 2
            for name in order[shift:] + order[:shift]:
                medians[name].append(median(await anyio.to_thread.run_sync(timed, blocks[name])))
    ratios = [s / a for s, a in zip(medians["checked"], medians["anyio"], strict=True)]
    ratio = median(ratios)
    base, subject = median(medians["anyio"]), median(medians["checked"])
    print(
        f"  RouterCalls.call: {fmt_seconds(subject)} vs anyio.from_thread.run {fmt_seconds(base)}; "
        f"per-round ratios {min(ratios):.3f}-{max(ratios):.3f}, median {ratio:.3f}x"
    )
    return [
        Row(
            NAME,
            f"sync tool call from a worker thread into an async Router ({settings.backend}), "
            "RouterCalls.call vs anyio.from_thread.run",
            fmt_seconds(base),
            fmt_seconds(subject),
            f"{ratio:.3f}x",
            f"≤ {TARGET:.2f}x",
            ratio <= TARGET,
        )
    ]
