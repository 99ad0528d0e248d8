"""Competitors (`python -m benchmarks --compare`): the dispatch benchmark's calls through other libraries.

The same in-process `MCPServer` and `mcp.Client` as `dispatch.py`, the same floor (the direct
`client.call_tool`) and, in the same interleaved rounds, the adapter and each competitor's MCP
tool wrapper as `_rivals.py` describes. Sequential latency: blocks of calls, the variants'
blocks rotated every round, the ratio the median over rounds of (the variant's block median /
the direct block median). Throughput: 100 concurrent calls per trial (the adapter: `dispatch` of
a batch; a competitor: 100 of its calls started in one task group), trials of every variant back
to back, the ratio the median over trials of direct time / variant time. No targets: these rows
say where the adapter stands, not whether it passes.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp

from mcpx_router import OpenAIPeerToolAdapter

from .. import dispatch
from .._common import Row, Settings, fmt_seconds, median
from . import _rivals

NAME = dispatch.NAME


def _batch(call: _rivals.Call) -> _rivals.Call:
    """100 calls of `call` started in one task group, each keeping its result."""

    async def run() -> list[Any]:
        results: list[Any] = [None] * dispatch.CONCURRENCY

        async def one(index: int) -> None:
            results[index] = await call()

        async with anyio.create_task_group() as tg:
            for index in range(dispatch.CONCURRENCY):
                tg.start_soon(one, index)
        return results

    return run


async def run(settings: Settings) -> list[Row]:
    """The dispatch rows of every competitor found, against the direct call, beside the adapter's."""
    rounds, block, trials = (6, 50, 8) if settings.quick else (20, 100, 20)
    server = dispatch.echo_server()
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(mcp.Client(server))
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        (public,) = await adapter.add_peer(dispatch.PEER, client)
        rivals = await _rivals.open_calls(stack, server, client, "echo", dispatch.ARGUMENTS, settings.backend)
        one = [dispatch.chat_call("call_0", public)]
        batch = [dispatch.chat_call(f"call_{i}", public) for i in range(dispatch.CONCURRENCY)]
        for name, call in rivals.items():
            text = _rivals.text_of(await call())
            assert text == "hellohello", (name, text)

        calls: dict[str, _rivals.Call] = {
            "direct": lambda: client.call_tool("echo", dispatch.ARGUMENTS),
            "adapter.dispatch": lambda: adapter.dispatch(one),
            **rivals,
        }
        print(f"competitors, sequential latency: {rounds} rounds x {block} calls per variant, rotated")
        seq = await dispatch.sequential(calls, rounds, block)
        batches = {name: _batch(call) for name, call in calls.items() if name != "adapter.dispatch"}
        batches["adapter.dispatch"] = lambda: adapter.dispatch(batch)
        print(f"competitors, throughput: {trials} trials of {dispatch.CONCURRENCY} concurrent calls each")
        thr = await dispatch.throughput(batches, trials)

    rows: list[Row] = []
    base = median([x for b in seq["direct"] for x in b])
    for name in calls:
        if name == "direct":
            continue
        subject = median([x for b in seq[name] for x in b])
        ratio = median([median(s) / median(d) for s, d in zip(seq[name], seq["direct"], strict=True)])
        print(f"  {name:18s} {fmt_seconds(subject)} per call vs direct {fmt_seconds(base)}: {ratio:.3f}x")
        rows.append(
            Row(
                NAME,
                f"sequential latency per call, {name}",
                fmt_seconds(base),
                fmt_seconds(subject),
                f"{ratio:.3f}x",
                "—",
                None,
            )
        )
    direct_rate = dispatch.CONCURRENCY / median(thr["direct"])
    for name in calls:
        if name == "direct":
            continue
        rate = dispatch.CONCURRENCY / median(thr[name])
        ratio = median([d / s for d, s in zip(thr["direct"], thr[name], strict=True)])
        print(f"  {name:18s} {rate:,.0f} calls/s vs direct {direct_rate:,.0f}/s: {ratio:.3f}x")
        rows.append(
            Row(
                NAME,
                f"throughput, {dispatch.CONCURRENCY} concurrent calls, {name}",
                f"{direct_rate:,.0f} calls/s",
                f"{rate:,.0f} calls/s",
                f"{ratio:.3f}x",
                "—",
                None,
            )
        )
    return rows
