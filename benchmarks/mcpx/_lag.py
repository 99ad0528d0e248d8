"""Event-loop lag probes for the benchmarks: how late a short sleep wakes up, sampled all along.

A task sleeps `INTERVAL` seconds again and again and keeps, for each wake-up, the wall-clock
time (comparable across processes) and how much later than asked it woke: the time the loop was
busy with something else. A stall of the loop shows up as one large sample ending when it ends,
so a slow call can be laid beside the process that stalled. It runs on asyncio and trio (anyio).
The gateway's process can also log its garbage collector's pauses (`GcLog`), the other thing
that holds a loop.
"""

from __future__ import annotations

import gc
import time
from typing import Any

import anyio

INTERVAL = 0.01
STALL = 0.25
"""A lag this long or longer is listed on its own (when it ended, how long)."""


class LagProbe:
    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        """(wall-clock time of the wake-up, seconds late)."""

    async def run(self) -> None:
        interval = self.interval
        while True:
            asked = time.perf_counter()
            await anyio.sleep(interval)
            late = time.perf_counter() - asked - interval
            self.samples.append((round(time.time(), 4), round(max(0.0, late), 4)))


class GcLog:
    """The collector's pauses, by `gc.callbacks`: (wall-clock end, generation, seconds)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, int, float]] = []
        self._start = 0.0

    def __enter__(self) -> GcLog:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            seconds = time.perf_counter() - self._start
            self.pauses.append((round(time.time(), 4), int(info["generation"]), round(seconds, 4)))


def lag_summary(samples: list[tuple[float, float]], start: float, end: float) -> dict[str, object]:
    """The samples of the window [`start`, `end`] (wall clock): p50, p99 and max lag, the time
    stalled `STALL` or longer, and each such stall (seconds into the window it began, length)."""
    lags = sorted(late for at, late in samples if start <= at <= end)
    stalls = [
        (round(at - late - start, 3), late) for at, late in samples if start <= at <= end and late >= STALL
    ]
    if not lags:
        return {"samples": 0}
    return {
        "samples": len(lags),
        "p50": lags[len(lags) // 2],
        "p99": lags[min(len(lags) - 1, int(0.99 * len(lags)))],
        "max": lags[-1],
        "stalled": round(sum(late for _, late in stalls), 3),
        "stalls": stalls[:40],
    }


def gc_summary(pauses: list[tuple[float, int, float]], start: float, end: float) -> dict[str, object]:
    """The collector's pauses within the window: count and seconds by generation, the longest."""
    within = [(gen, seconds) for at, gen, seconds in pauses if start <= at <= end]
    by_gen = {
        str(gen): [sum(1 for g, _ in within if g == gen), round(sum(s for g, s in within if g == gen), 3)]
        for gen in (0, 1, 2)
    }
    return {"collections_seconds": by_gen, "longest": max((s for _, s in within), default=0.0)}
