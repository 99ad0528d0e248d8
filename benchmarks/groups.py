"""Groups: what a group call, the statistics behind it, and a failover cost.

(a) Sequential latency, interleaved blocks with the order rotated every round (as `dispatch`):
    - plain: `adapter.dispatch([call to echo__echo])` on an adapter with no options (the baseline);
    - group: `adapter.dispatch([call to echo])` on an adapter where `echo` is the group of two
      in-process peers' `echo` (the member chosen by reputation, statistics kept, the answer
      saying which peer served it). Target: ≤ 1.05x plain, as the median of per-round ratios.
(b) Statistics: the cost of recording one call (`Reputation.timed` around an awaitable that is
    already done, so only the bookkeeping is timed, minus the same await without it), against the
    plain dispatch latency of (a) measured in the same run. Target: < 1 %. Beside it, informational:
    `dispatch` on an adapter with `stats=True` against plain, end to end.
(c) Failover: two stdio peers (`benchmarks/_search_server.py`) in a Router group; the chosen
    member dies with the call in hand (a read-only tool, so the call goes on to the other), and
    the time until the other's answer is compared with the same call served at once (by the
    member that then dies). Each trial waits for the dead peer to be reconnected. Informational.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp

from mcpx_router import HealthChanged, OpenAIPeerToolAdapter, Reconnect, Router, StdioPeer, ToolKey
from mcpx_router._dispatch import Outcome
from mcpx_router.groups._reputation import Reputation

from ._common import Row, Settings, collect, fmt_seconds, median
from .dispatch import ARGUMENTS, echo_server, sequential

NAME = "groups"
GROUP_TARGET = 1.05
STATS_TARGET = 0.01
SEARCH = Path(__file__).resolve().parent / "_search_server.py"


def chat_call(name: str) -> list[dict[str, Any]]:
    return [
        {"id": "call_0", "type": "function", "function": {"name": name, "arguments": json.dumps(ARGUMENTS)}}
    ]


async def recording_cost(n: int) -> float:
    """Seconds one recorded call costs beyond awaiting the call itself."""
    reputation = Reputation()
    key = ToolKey("echo", "echo")
    done = Outcome("x", False)

    async def ready() -> Outcome:
        return done

    clock = time.perf_counter
    best_bare = best_timed = float("inf")
    for _ in range(5):
        start = clock()
        for _ in range(n):
            await ready()
        best_bare = min(best_bare, clock() - start)
        start = clock()
        for index in range(n):
            await reputation.timed(key, f"c{index}", ready())
        best_timed = min(best_timed, clock() - start)
    return max(0.0, best_timed - best_bare) / n


async def failover_times(trials: int) -> tuple[list[float], list[float]]:
    """Per trial: a call whose member dies mid-call, and the same call served at once."""
    failed: list[float] = []
    served: list[float] = []
    fast = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0)
    peers = {name: StdioPeer(sys.executable, [str(SEARCH), "--name", name]) for name in ("a", "b")}
    async with Router(auto_groups=True, reconnect=fast, health_interval=None) as router:
        await router.join_all(peers)
        with router.events() as events:
            for _ in range(trials):
                start = time.perf_counter()
                healthy = await router.call("search", {"query": "q", "peer": "a"})
                served.append(time.perf_counter() - start)
                start = time.perf_counter()
                outcome = await router.call("search", {"query": "die@a", "peer": "a"})
                failed.append(time.perf_counter() - start)
                assert healthy.text.endswith("(served by a)"), healthy
                assert "served by b; a failed first" in outcome.text, outcome
                with anyio.fail_after(30):
                    async for event in events:
                        if isinstance(event, HealthChanged) and event.peer == "a" and event.healthy:
                            break
    return failed, served


async def run(settings: Settings) -> list[Row]:
    rounds, block, trials = (8, 75, 3) if settings.quick else (30, 100, 8)
    async with (
        mcp.Client(echo_server()) as one,
        mcp.Client(echo_server()) as two,
        OpenAIPeerToolAdapter() as plain,
        OpenAIPeerToolAdapter(stats=True) as kept,
        OpenAIPeerToolAdapter(aliases={"echo": ["one/echo", "two/echo"]}) as grouped,
    ):
        await plain.add_peer("one", one)
        await kept.add_peer("one", one)
        await grouped.add_peer("one", one)
        await grouped.add_peer("two", two)
        direct, group = chat_call("one__echo"), chat_call("echo")
        expected = (await plain.dispatch(direct))[0]["content"]
        assert (await kept.dispatch(direct))[0]["content"] == expected
        assert (await grouped.dispatch(group))[0]["content"].startswith(expected + "\n\n(served by ")
        variants: dict[str, Callable[[], Awaitable[object]]] = {
            "plain": lambda: plain.dispatch(direct),
            "stats": lambda: kept.dispatch(direct),
            "group": lambda: grouped.dispatch(group),
        }
        print(f"sequential latency: {rounds} rounds x {block} calls per variant, order rotated per round")
        seq = await sequential(variants, rounds, block)
    collect()
    cost = await recording_cost(20_000)
    print(f"failover: {trials} trials, two stdio peers")
    failed, served = await failover_times(trials)

    rows: list[Row] = []
    base = median([x for b in seq["plain"] for x in b])
    for name, label, target in (
        ("group", "group call (2 members) vs a prefixed call, adapter.dispatch", GROUP_TARGET),
        ("stats", "stats=True vs no options, adapter.dispatch (end to end)", None),
    ):
        per_round = [median(s) / median(p) for s, p in zip(seq[name], seq["plain"], strict=True)]
        ratio = median(per_round)
        subject = median([x for b in seq[name] for x in b])
        ok = None if target is None else ratio <= target
        verdict = "" if ok is None else f" (target ≤ {target}x) {'PASS' if ok else 'FAIL'}"
        shown = f"{fmt_seconds(subject)} vs {fmt_seconds(base)}"
        print(f"  {label}: {shown}: median per-round {ratio:.3f}x{verdict}")
        rows.append(
            Row(
                NAME,
                f"sequential latency, {label}",
                fmt_seconds(base),
                fmt_seconds(subject),
                f"{ratio:.3f}x",
                "—" if target is None else f"≤ {target}x",
                ok,
            )
        )
    share = cost / base
    ok = share < STATS_TARGET
    print(
        f"  statistics: {fmt_seconds(cost)} per recorded call = {share:.2%} of a dispatch "
        f"({fmt_seconds(base)})"
    )
    rows.append(
        Row(
            NAME,
            "statistics: recording one call vs one adapter.dispatch",
            fmt_seconds(base),
            fmt_seconds(cost),
            f"{share:.2%}",
            f"< {STATS_TARGET:.0%}",
            ok,
        )
    )
    slow, fast = median(failed), median(served)
    print(
        f"  failover after a member dies mid-call: {fmt_seconds(slow)} vs served at once {fmt_seconds(fast)}"
    )
    rows.append(
        Row(
            NAME,
            "group call whose member dies mid-call (stdio), until the other answers",
            fmt_seconds(fast),
            fmt_seconds(slow),
            f"{slow / fast:.1f}x",
            "—",
            None,
        )
    )
    return rows
