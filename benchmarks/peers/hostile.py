"""One peer's huge answer beside ordinary peers: `python -m benchmarks hostile [--backend trio]`.

A Router holds a stdio peer that answers large on purpose (tests/support/hostile_stdio_server.py:
a result of one 50 MB line, and one of 200,000 content blocks) and two ordinary stdio peers. While
one large call runs, the two others are called one after another without pause, and a
`LagProbe` samples how late the event loop wakes up. For each large answer and each round it
reports how long the large call took, the worst latency of the other peers' calls, and the
loop's worst stall; a baseline round with a small answer instead shows what the machine's own
load costs. Targets: the 50 MB answer in at most 1 s; other calls and stalls at most
50 ms. The machine's load average is printed with the figures: they are wall-clock times.

Then a peer of 5,000 tools that says its tools changed every 0.1 s (`--churn`) beside the same two:
for 5 s, the others' calls and the loop as above, with how many calls they made (against as
long a window with the chatty peer gone) and how often the chatty peer was re-listed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio

from mcpx_router import Router, StdioPeer

from ..mcpx._lag import LagProbe

SERVER = Path(__file__).parents[2] / "tests" / "support" / "hostile_stdio_server.py"
CASES = {
    "none (baseline: a small answer)": "h__ok",
    "50 MB in one line": "h__huge",
    "200,000 content blocks": "h__blocks",
}


async def _round(router: Router, tool: str) -> tuple[float, float, float, str]:
    """(seconds the large call took, worst other call, worst loop stall, the answer's start)."""
    probe = LagProbe(interval=0.002)
    latencies: list[float] = []
    done = anyio.Event()
    result: list[tuple[float, str]] = []

    async def others() -> None:
        while not done.is_set():
            for peer in ("plain1", "plain2"):
                start = time.perf_counter()
                outcome = await router.call(f"{peer}__echo", {"text": "hi"})
                latencies.append(time.perf_counter() - start)
                assert outcome.text == "hi", outcome.text

    async def large() -> None:
        await anyio.sleep(0.05)
        start = time.perf_counter()
        outcome = await router.call(tool, {})
        result.append((time.perf_counter() - start, outcome.text[:60]))
        await anyio.sleep(0.05)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe.run)
        tg.start_soon(others)
        await large()
        tg.cancel_scope.cancel()
    seconds, start_of_text = result[0]
    worst_lag = max(late for _, late in probe.samples)
    return seconds, max(latencies), worst_lag, start_of_text


async def main(rounds: int) -> None:
    async with Router(connect_timeout=60, call_timeout=120) as router:
        await router.join("h", StdioPeer(sys.executable, [str(SERVER), "--blocks", "200000", "--mb", "50"]))
        for peer in ("plain1", "plain2"):
            await router.join(peer, StdioPeer(sys.executable, [str(SERVER)]))
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("| large answer | call (s) | worst other call (ms) | worst loop stall (ms) | rounds |")
        print("| --- | --- | --- | --- | --- |")
        for label, tool in CASES.items():
            figures = [await _round(router, tool) for _ in range(rounds)]
            calls = [f[0] for f in figures]
            others = [f[1] * 1000 for f in figures]
            lags = [f[2] * 1000 for f in figures]
            print(
                f"| {label} | median {statistics.median(calls):.2f}, max {max(calls):.2f} "
                f"| median {statistics.median(others):.0f}, max {max(others):.0f} "
                f"| median {statistics.median(lags):.0f}, max {max(lags):.0f} | {rounds} |"
            )
            print(f"  (answer starts: {figures[0][3]!r})", file=sys.stderr)
        await _churning(router)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


async def _window(router: Router, seconds: float) -> tuple[int, float, float]:
    """(calls the ordinary peers answered in `seconds`, the worst of them, the loop's worst stall)."""
    probe = LagProbe(interval=0.002)
    latencies: list[float] = []
    with anyio.move_on_after(seconds):
        async with anyio.create_task_group() as tg:
            tg.start_soon(probe.run)
            while True:
                for peer in ("plain1", "plain2"):
                    start = time.perf_counter()
                    await router.call(f"{peer}__echo", {"text": "hi"})
                    latencies.append(time.perf_counter() - start)
    return len(latencies), max(latencies), max(late for _, late in probe.samples)


async def _churning(router: Router) -> None:
    print(
        "| 5,000 tools, changed every 0.1 s | other calls in 5 s | worst other call (ms) "
        "| worst loop stall (ms) | re-listings |"
    )
    print("| --- | --- | --- | --- | --- |")
    calls, worst, lag = await _window(router, 5.0)
    print(f"| no such peer (baseline) | {calls:,} | {worst * 1000:.0f} | {lag * 1000:.0f} | — |")
    await router.join("chatty", StdioPeer(sys.executable, [str(SERVER), "--many", "5000", "--churn", "0.1"]))
    before = int((await router.call("chatty__listings", {})).text)
    calls, worst, lag = await _window(router, 5.0)
    listings = int((await router.call("chatty__listings", {})).text) - before
    shown = f"{calls:,} | {worst * 1000:.0f} | {lag * 1000:.0f}"
    print(f"| the chatty peer | {shown} | {listings} (50 asked for) |")
    await router.leave("chatty")


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    anyio.run(main, options.rounds, backend=options.backend)
    return 0


if __name__ == "__main__":
    sys.exit(cli())
