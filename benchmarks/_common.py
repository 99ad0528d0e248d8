"""Shared pieces: settings, the result row, statistics, formatting, the machine description."""

from __future__ import annotations

import gc
import importlib.metadata
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Settings:
    quick: bool
    backend: str
    participants: tuple[int, ...] | None = None
    """The gateway benchmark's sizes (None: its defaults)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One measured metric: baseline and subject as displayed, their ratio, and the verdict."""

    benchmark: str
    metric: str
    baseline: str
    subject: str
    ratio: str
    target: str
    passed: bool | None
    """None: informational, no target."""

    @property
    def verdict(self) -> str:
        return "—" if self.passed is None else ("PASS" if self.passed else "FAIL")


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: float) -> str:
    if abs(n) < 1024:
        return f"{n:.0f} B"
    if abs(n) < 1024 * 1024:
        return f"{n / 1024:.2f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def collect() -> None:
    """A full collection, so garbage from the previous run is not collected inside the next one."""
    gc.collect()
    gc.collect()


@dataclass(slots=True)
class GcTime:
    """Time spent in, and number of, cyclic garbage collections per generation (0, 1, 2)."""

    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    count: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def total(self) -> float:
        return sum(self.seconds)

    def __str__(self) -> str:
        per_gen = ", ".join(
            f"{n} gen{g} {fmt_seconds(t)}"
            for g, (n, t) in enumerate(zip(self.count, self.seconds, strict=True))
        )
        return f"gc {fmt_seconds(self.total)}: {per_gen}"


@contextmanager
def gc_time() -> Iterator[GcTime]:
    """Account the cyclic collections that run inside the block (via `gc.callbacks`)."""
    spent = GcTime()
    started = 0.0

    def callback(phase: str, info: dict[str, Any]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        else:
            generation = info["generation"]
            spent.seconds[generation] += time.perf_counter() - started
            spent.count[generation] += 1

    gc.callbacks.append(callback)
    try:
        yield spent
    finally:
        gc.callbacks.remove(callback)


def tracked_objects() -> int:
    """How many objects the cyclic collector tracks, after a full collection."""
    collect()
    return len(gc.get_objects())


def revision() -> str:
    """The commit of the working tree, and whether the package has local changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mcpx_router"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"commit {head}" + (" + uncommitted changes in mcpx_router/" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    versions = ", ".join(
        f"{dist} {importlib.metadata.version(dist)}" for dist in ("mcp", "openai", "anyio", "pydantic")
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (
        f"{os.cpu_count()} cores, {cpu_model()}; Python {platform.python_version()} "
        f"({platform.python_implementation()}); {versions}; load average {load}"
    )


def print_table(rows: Sequence[Row]) -> None:
    header = ("benchmark", "metric", "baseline", "subject", "ratio", "target", "result")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        cells = (row.benchmark, row.metric, row.baseline, row.subject, row.ratio, row.target, row.verdict)
        print("| " + " | ".join(cells) + " |")
