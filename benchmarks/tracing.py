"""What OpenTelemetry costs a tool call: nothing configured, and an SDK configured.

One in-process `MCPServer` tool (the dispatch benchmark's `echo`), one `mcp.Client`, and two
adapters holding that client. The baseline adapter's answerer skips the tracing check altogether
(`run` is its untraced `_run`), as if the library had no tracing; the subject is an adapter as
shipped. Every variant is `await adapter.dispatch([one chat tool call])`.

(a) opentelemetry-api installed (the `mcp` SDK needs it), no tracer provider configured: the
    subject pays one check per call. Blocks of calls alternate, order rotated every round; the
    ratio is the median over rounds of (median latency of the subject's block / the baseline's).
    Target: ≤ 1.02x.
    The check alone is also timed (a million calls of `tracing()`), and its share of the
    baseline's latency reported: the end-to-end ratio is within the machine's noise.
(b) The SDK's `TracerProvider` configured (no span processor, so nothing is exported): the subject
    records an `execute_tool` span per call. Measured after (a), because the `mcp` SDK's tracer
    keeps the first provider it sees: from then on both sides pay the SDK's own span (the
    in-process server's `tools/call` span). Informational, no target.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import mcp
from opentelemetry import trace

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router._tracing import tracing

from ._common import Row, Settings, collect, fmt_seconds, median
from .dispatch import chat_call, echo_server

NAME = "tracing"
TARGET = 1.02

Variant = tuple[Callable[[], None], Callable[[], Awaitable[object]]]


async def _block(fn: Callable[[], Awaitable[object]], n: int) -> list[float]:
    clock = time.perf_counter_ns
    out: list[float] = []
    for _ in range(n):
        start = clock()
        await fn()
        out.append((clock() - start) / 1e9)
    return out


async def _rounds(variants: dict[str, Variant], rounds: int, block: int) -> dict[str, list[float]]:
    """Per variant, the median latency of its block in each round (each block after its setup)."""
    medians: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for name in order:
        setup, fn = variants[name]
        setup()
        await _block(fn, block)
    for index in range(rounds):
        collect()
        shift = index % len(order)
        for name in order[shift:] + order[:shift]:
            setup, fn = variants[name]
            setup()
            medians[name].append(median(await _block(fn, block)))
    return medians


async def run(settings: Settings) -> list[Row]:
    try:  # the SDK comes with the dev extra; the API with `mcp`
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        print("skipped: opentelemetry-sdk is not installed (pip install -e '.[dev]')")
        return []
    rounds, block = (8, 75) if settings.quick else (30, 100)
    provider = TracerProvider()
    previous = trace._TRACER_PROVIDER

    def no_provider() -> None:
        trace._TRACER_PROVIDER = previous

    def sdk() -> None:
        trace._TRACER_PROVIDER = provider

    rows: list[Row] = []
    try:
        async with (
            mcp.Client(echo_server()) as client,
            OpenAIPeerToolAdapter() as plain,
            OpenAIPeerToolAdapter() as shipped,
        ):
            (public,) = await plain.add_peer("echo", client)
            await shipped.add_peer("echo", client)
            answerer = plain._answerer
            untraced = answerer._run

            async def run(call: Any, call_timeout: float | None, turn: Any = None) -> Any:
                return await untraced(call, call_timeout, turn)  # `Answerer.run` without the tracing check

            answerer.run = run  # type: ignore[method-assign]
            one = [chat_call("call_0", public)]
            assert await plain.dispatch(one) == await shipped.dispatch(one)

            print(f"(a) no provider: {rounds} rounds x {block} calls per variant, order rotated")
            a = await _rounds(
                {
                    "plain": (no_provider, lambda: plain.dispatch(one)),
                    "shipped": (no_provider, lambda: shipped.dispatch(one)),
                },
                rounds,
                block,
            )
            print(f"(b) SDK configured: {rounds} rounds x {block} calls per variant, order rotated")
            b = await _rounds(
                {
                    "plain": (sdk, lambda: plain.dispatch(one)),
                    "shipped": (sdk, lambda: shipped.dispatch(one)),
                },
                rounds,
                block,
            )
    finally:
        no_provider()

    no_provider()
    n = 200_000 if settings.quick else 1_000_000
    start = time.perf_counter()
    for _ in range(n):
        tracing()
    check = (time.perf_counter() - start) / n
    base = median(a["plain"])
    print(f"  the check alone: {fmt_seconds(check)} per call, {check / base:.2%} of {fmt_seconds(base)}")
    rows.append(
        Row(
            NAME,
            "the tracing check alone, against a call's latency (no provider)",
            fmt_seconds(base),
            fmt_seconds(base + check),
            f"{(base + check) / base:.4f}x",
            f"≤ {TARGET}x",
            (base + check) / base <= TARGET,
        )
    )
    for label, medians, target in (
        ("no tracer provider configured", a, TARGET),
        ("SDK TracerProvider configured (a span per call)", b, None),
    ):
        ratios = [s / p for s, p in zip(medians["shipped"], medians["plain"], strict=True)]
        ratio = median(ratios)
        base, subject = median(medians["plain"]), median(medians["shipped"])
        ok = None if target is None else ratio <= target
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        print(
            f"  {label}: {fmt_seconds(subject)} vs {fmt_seconds(base)} without tracing; per-round ratios "
            f"{min(ratios):.3f}-{max(ratios):.3f}, median {ratio:.3f}x {verdict}"
        )
        rows.append(
            Row(
                NAME,
                f"adapter.dispatch([1 call]), {label}",
                fmt_seconds(base),
                fmt_seconds(subject),
                f"{ratio:.3f}x",
                "—" if target is None else f"≤ {target}x",
                ok,
            )
        )
    return rows
