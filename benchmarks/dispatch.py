"""Dispatch overhead: one tool call through the adapter vs the same call on the `mcp.Client`.

One in-process `MCPServer` with one tool, one `mcp.Client` connected to it, and that very client
object registered in an adapter with its default settings (a 60 s call timeout, arguments
checked against the tool's schema, results rendered as text). Three ways to make the same call:

- direct:   `await client.call_tool("echo", {...})`                      (the baseline)
- dispatch: `await adapter.dispatch([chat tool call dict])`              (arguments as a JSON string,
            as a model sends them; answered with a `{"role": "tool", ...}` message)
- call:     `await adapter.call("echo__echo", {...})`
- group:    `await group.call_tool("echo", {...})`, an `mcp.ClientSessionGroup` holding the client's
            own `ClientSession` (a second baseline: the SDK's multi-server aggregate, which calls
            the session directly, without the `mcp.Client` wrapper)

(a) Sequential latency: blocks of calls, the variants' blocks interleaved and their order rotated
    every round; every call is timed on its own. The ratio is the median over rounds of
    (median latency of the round's adapter block / that of its direct block), so load that
    drifts between rounds cancels out; the pooled medians are printed beside it.
    Target: adapter ≤ 1.05 x direct. Beside it, each adapter variant against the group (no target:
    the adapter does all the group does, the call's default 60 s bound included, and more).
(b) Throughput at 100 concurrent calls: `adapter.dispatch` of a batch of 100 tool calls vs 100
    direct calls started in one task group (each keeping its result, as dispatch does). Trials of
    the two alternate; the ratio is the median over trials of direct time / adapter time (the
    adapter's throughput relative to direct). Target: ≥ 0.95 x direct. The same 100 calls through
    the group run in the same trials; the adapter against it is reported without a target.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp
import mcp_types as mt
from mcp.client.session_group import ClientSessionGroup
from mcp.server.mcpserver import MCPServer

from mcpx_router import OpenAIPeerToolAdapter

from ._common import Row, Settings, collect, fmt_seconds, median, quartiles

NAME = "dispatch"

PEER = "echo"
ARGUMENTS: dict[str, Any] = {"text": "hello", "times": 2}
CONCURRENCY = 100
LATENCY_TARGET = 1.05
THROUGHPUT_TARGET = 0.95


def echo_server() -> MCPServer:
    server = MCPServer("bench-echo")

    @server.tool()
    def echo(text: str, times: int = 1) -> str:
        """Repeat `text` `times` times."""
        return text * times

    return server


def chat_call(call_id: str, name: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(ARGUMENTS)},
    }


async def _time_block(fn: Callable[[], Awaitable[object]], n: int, out: list[float]) -> None:
    clock = time.perf_counter_ns
    for _ in range(n):
        start = clock()
        await fn()
        out.append((clock() - start) / 1e9)


async def sequential(
    variants: dict[str, Callable[[], Awaitable[object]]], rounds: int, block: int
) -> dict[str, list[list[float]]]:
    """Per variant, per round, the latency of every call in that round's block."""
    samples: dict[str, list[list[float]]] = {name: [] for name in variants}
    order = list(variants)
    for name in order:  # warm-up: first-call costs (imports, validators, caches) stay out
        await _time_block(variants[name], block, [])
    for index in range(rounds):
        collect()
        shift = index % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append([])
            await _time_block(variants[name], block, samples[name][-1])
    return samples


async def throughput(
    variants: dict[str, Callable[[], Awaitable[object]]], trials: int
) -> dict[str, list[float]]:
    """Per variant, the time of each trial; trial i of every variant ran back to back."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for name in order:
        await variants[name]()
    for index in range(trials):
        collect()
        shift = index % len(order)
        for name in order[shift:] + order[:shift]:
            start = time.perf_counter()
            await variants[name]()
            times[name].append(time.perf_counter() - start)
    return times


async def run(settings: Settings) -> list[Row]:
    rounds, block, trials = (8, 75, 12) if settings.quick else (30, 100, 40)
    server = echo_server()
    async with mcp.Client(server) as client, OpenAIPeerToolAdapter() as adapter:
        (public,) = await adapter.add_peer(PEER, client)
        group = ClientSessionGroup()
        await group.connect_with_session(mt.Implementation(name=PEER, version="1"), client.session)
        one = [chat_call("call_0", public)]
        batch = [chat_call(f"call_{i}", public) for i in range(CONCURRENCY)]

        # Sanity: all three give the same answer before anything is timed.
        expected = (await client.call_tool("echo", ARGUMENTS)).content[0]
        answers = await adapter.dispatch(one)
        outcome = await adapter.call(public, ARGUMENTS)
        grouped = (await group.call_tool("echo", ARGUMENTS)).content[0]
        assert answers[0]["content"] == outcome.text == getattr(expected, "text", None), (answers, outcome)
        assert getattr(grouped, "text", None) == outcome.text, grouped
        assert len(await adapter.dispatch(batch)) == CONCURRENCY

        print(f"sequential latency: {rounds} rounds x {block} calls per variant, order rotated per round")
        seq = await sequential(
            {
                "direct": lambda: client.call_tool("echo", ARGUMENTS),
                "dispatch": lambda: adapter.dispatch(one),
                "call": lambda: adapter.call(public, ARGUMENTS),
                "group": lambda: group.call_tool("echo", ARGUMENTS),
            },
            rounds,
            block,
        )

        def batch_of(
            call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
        ) -> Callable[[], Awaitable[list[Any]]]:
            async def run_batch() -> list[Any]:
                results: list[Any] = [None] * CONCURRENCY

                async def one_call(index: int) -> None:
                    results[index] = await call_tool("echo", ARGUMENTS)

                async with anyio.create_task_group() as tg:
                    for index in range(CONCURRENCY):
                        tg.start_soon(one_call, index)
                return results

            return run_batch

        print(f"throughput: {trials} alternating trials of {CONCURRENCY} concurrent calls per variant")
        thr = await throughput(
            {
                "direct": batch_of(client.call_tool),
                "dispatch": lambda: adapter.dispatch(batch),
                "group": batch_of(group.call_tool),
            },
            trials,
        )

    rows: list[Row] = []
    pooled = {name: [x for block_ in blocks for x in block_] for name, blocks in seq.items()}
    for name, samples in pooled.items():
        q1, q2, q3 = quartiles(samples)
        print(
            f"  {name:9s} n={len(samples):5d}  median {fmt_seconds(q2)}  "
            f"IQR {fmt_seconds(q1)} - {fmt_seconds(q3)}  mean {fmt_seconds(sum(samples) / len(samples))}"
        )
    base = median(pooled["direct"])
    for name, label in (("dispatch", "adapter.dispatch([1 call])"), ("call", "adapter.call(name, args)")):
        subject = median(pooled[name])
        per_round = [median(s) / median(d) for s, d in zip(seq[name], seq["direct"], strict=True)]
        ratio = median(per_round)
        ok = ratio <= LATENCY_TARGET
        print(
            f"  {label}: {fmt_seconds(subject)} vs direct {fmt_seconds(base)} (pooled medians: "
            f"{subject / base:.3f}x); per-round ratios {min(per_round):.3f}-{max(per_round):.3f}, "
            f"median {ratio:.3f}x (target ≤ {LATENCY_TARGET}x) {'PASS' if ok else 'FAIL'}"
        )
        rows.append(
            Row(
                NAME,
                f"sequential latency per call, {label}",
                fmt_seconds(base),
                fmt_seconds(subject),
                f"{ratio:.3f}x",
                f"≤ {LATENCY_TARGET}x",
                ok,
            )
        )
    group_base = median(pooled["group"])
    for name, label in (("dispatch", "adapter.dispatch([1 call])"), ("call", "adapter.call(name, args)")):
        per_round = [median(s) / median(g) for s, g in zip(seq[name], seq["group"], strict=True)]
        ratio = median(per_round)
        print(
            f"  {label} vs ClientSessionGroup.call_tool {fmt_seconds(group_base)}: "
            f"median per-round ratio {ratio:.3f}x"
        )
        rows.append(
            Row(
                NAME,
                f"sequential latency per call, {label} vs ClientSessionGroup.call_tool",
                fmt_seconds(group_base),
                fmt_seconds(median(pooled[name])),
                f"{ratio:.3f}x",
                "—",
                None,
            )
        )

    for name, trial_times in thr.items():
        q1, q2, q3 = quartiles(trial_times)
        print(
            f"  {name:9s} n={len(trial_times):3d} batches  median {fmt_seconds(q2)}/batch "
            f"(IQR {fmt_seconds(q1)} - {fmt_seconds(q3)}) = {CONCURRENCY / q2:,.0f} calls/s"
        )
    direct_rate = CONCURRENCY / median(thr["direct"])
    adapter_rate = CONCURRENCY / median(thr["dispatch"])
    per_trial = [d / a for d, a in zip(thr["direct"], thr["dispatch"], strict=True)]
    ratio = median(per_trial)
    ok = ratio >= THROUGHPUT_TARGET
    print(
        f"  throughput: adapter {adapter_rate:,.0f}/s vs direct {direct_rate:,.0f}/s (pooled medians: "
        f"{adapter_rate / direct_rate:.3f}x); per-trial ratios {min(per_trial):.3f}-{max(per_trial):.3f}, "
        f"median {ratio:.3f}x (target ≥ {THROUGHPUT_TARGET}x) {'PASS' if ok else 'FAIL'}"
    )
    rows.append(
        Row(
            NAME,
            f"throughput, {CONCURRENCY} concurrent calls (dispatch of a batch)",
            f"{direct_rate:,.0f} calls/s",
            f"{adapter_rate:,.0f} calls/s",
            f"{ratio:.3f}x",
            f"≥ {THROUGHPUT_TARGET}x",
            ok,
        )
    )
    group_rate = CONCURRENCY / median(thr["group"])
    per_group_trial = [g / a for g, a in zip(thr["group"], thr["dispatch"], strict=True)]
    group_ratio = median(per_group_trial)
    print(
        f"  throughput: adapter vs ClientSessionGroup {group_rate:,.0f}/s: "
        f"median per-trial ratio {group_ratio:.3f}x"
    )
    rows.append(
        Row(
            NAME,
            f"throughput, {CONCURRENCY} concurrent calls, dispatch vs ClientSessionGroup.call_tool",
            f"{group_rate:,.0f} calls/s",
            f"{adapter_rate:,.0f} calls/s",
            f"{group_ratio:.3f}x",
            "—",
            None,
        )
    )
    return rows
