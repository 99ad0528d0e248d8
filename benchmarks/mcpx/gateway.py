"""One MCPx gateway under load, against a floor: a minimal fan-out server on an ASGI stack.

Three processes: the server (`_gwserver.py`: our `Gateway` served by `run_gateway`, its
WebSockets below ASGI, or the floor, a bare ASGI fan-out app on Hypercorn + wsproto, the stack
the gateway's WebSockets were served by until they moved below ASGI), the load
generator (`_gwload.py`: every participant an `asyncio.Protocol` with a few-line WebSocket codec,
so that one process drives thousands of them cheaply), and this one, which starts them and
reads the results. On a 2-core machine the server and the load each get a core.

For each size (`--participants`, default 100, 1,000 and 5,000; `--quick`: 100 and 1,000), rounds
alternate the floor and the gateway, the order swapped every round, each on a fresh server:

- fill: N participants join one topic (waves of 50; with the gateway each join is announced to
  everyone present, so this is quadratic);
- memory: the server's RSS after the fill minus before it, per participant;
- broadcast: one participant broadcasts ~300-byte MCP notifications, `WINDOW` in flight; frames
  delivered a second, each delivery's latency, and the server's CPU time per delivered frame;
- request/response: up to 50 pairs, each requester keeping one `tools/call`-sized request in
  flight to its responder, which answers at once: round trips a second, their latency, server
  CPU time per round trip.

Each figure is the median over rounds; each ratio the median of per-round gateway/floor ratios.
CPU time per frame is read from /proc for the server process, so other load on the machine
moves it less than it moves the rates. No targets: these are the capacity figures of
docs/scaling.md. `MCPX_BENCH_WINDOW=N` keeps N broadcasts in flight instead of `WINDOW` (to
find the most a server delivers once the window, not the server, no longer sets the pace).
With `MCPX_BENCH_PROFILE=DIR` set, py-spy samples every server run
(100 Hz, without pausing it) into `DIR/<kind>-<size>-<backend>-<round>.txt` (collapsed stacks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from .._common import Row, Settings, fmt_bytes, fmt_seconds, median

NAME = "gateway"

SIZES = (100, 1_000, 5_000)
QUICK_SIZES = (100, 1_000)
WINDOW = 4
PAIRS = 50
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Run:
    """One server under one load: the figures `_gwload` reported, and the server's own ending."""

    kind: str
    participants: int
    raw: dict[str, Any]
    server_status: int | None
    """The server's exit status after the load (0: it shut down cleanly; None: killed)."""

    def rate(self, phase: str) -> float:
        p = self.raw[phase]
        return float(p["count"]) / float(p["seconds"])

    def cpu_per_item(self, phase: str) -> float | None:
        p = self.raw[phase]
        return None if p["server_cpu"] is None or not p["count"] else float(p["server_cpu"]) / p["count"]

    def latency(self, phase: str, q: float) -> float:
        values = sorted(self.raw[phase]["latencies"])
        return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    @property
    def memory_per_participant(self) -> float | None:
        idle, full = self.raw["rss_idle"], self.raw["rss_full"]
        return None if idle is None or full is None else (full - idle) / self.participants

    @property
    def fill_seconds(self) -> float:
        return float(self.raw["fill_seconds"])


def _command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"benchmarks.mcpx.{module}", *args]


async def one_run(
    kind: str,
    participants: int,
    backend: str,
    *,
    seconds: float,
    window: int = WINDOW,
    pairs: int = PAIRS,
    profile: str | None = None,
) -> Run:
    """Start a server (`gateway` or `floor`) on `backend`, load it, stop it; the figures.

    With `profile`, py-spy (installed separately: `pip install py-spy`) samples the server
    while it is under load and writes collapsed stacks to that file."""
    server_args = ["--kind", kind, "--backend", backend, "--participants", str(participants)]
    with tempfile.TemporaryFile() as server_log:
        async with await anyio.open_process(
            _command("_gwserver", *server_args), stdin=subprocess.PIPE, stderr=server_log, cwd=ROOT
        ) as server:
            try:
                assert server.stdout is not None and server.stdin is not None
                with anyio.fail_after(60):
                    line = await BufferedByteReceiveStream(server.stdout).receive_until(b"\n", 4096)
                sampler = await _sample(server.pid, profile) if profile else None
                load = await anyio.run_process(
                    _command(
                        "_gwload",
                        "--url",
                        line.decode().strip(),
                        "--kind",
                        kind,
                        "--participants",
                        str(participants),
                        "--server-pid",
                        str(server.pid),
                        "--seconds",
                        str(seconds),
                        "--window",
                        str(window),
                        "--pairs",
                        str(pairs),
                    ),
                    cwd=ROOT,
                    stderr=None,
                )
                if sampler is not None:
                    sampler.send_signal(signal.SIGINT)
                    await sampler.wait()
                await server.stdin.aclose()
                status: int | None = None
                with anyio.move_on_after(30):
                    status = await server.wait()
            finally:
                if server.returncode is None:
                    server.kill()
                    with anyio.CancelScope(shield=True):
                        await server.wait()
        if status != 0:  # the figures stand; say how the server ended
            server_log.seek(0)
            tail = server_log.read()[-2000:].decode(errors="replace")
            ended = "did not stop within 30 s" if status is None else f"exited with status {status}"
            print(f"  (the {kind} server {ended} after the load; the end of its log:)\n{tail}", flush=True)
    raw = json.loads(load.stdout.decode().strip().splitlines()[-1])
    return Run(kind, participants, raw, status)


async def _sample(pid: int, out: str) -> anyio.abc.Process:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    command = [py_spy, "record", "-p", str(pid), "--format", "raw", "-r", "100", "--nonblocking", "-o", out]
    return await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None)


def _ratio(pairs: list[tuple[float | None, float | None]]) -> str:
    values = [g / f for f, g in pairs if f and g is not None]
    return f"{median(values):.2f}x" if values else "—"


def _med(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _rows(size: int, floors: list[Run], gateways: list[Run]) -> list[Row]:
    both = list(zip(floors, gateways, strict=True))
    rows: list[Row] = []

    def row(metric: str, get: Callable[[Run], float | None], fmt: Callable[[float], str]) -> None:
        f_med, g_med = _med([get(f) for f in floors]), _med([get(g) for g in gateways])
        shown = [fmt(v) if v is not None else "—" for v in (f_med, g_med)]
        ratio = _ratio([(get(f), get(g)) for f, g in both])
        rows.append(Row(NAME, f"{size:,} participants: {metric}", shown[0], shown[1], ratio, "—", None))

    def per_s(unit: str) -> Callable[[float], str]:
        return lambda v: f"{v:,.0f} {unit}/s"

    row("fill the topic (waves of 50)", lambda r: r.fill_seconds, fmt_seconds)
    row("server RSS per participant", lambda r: r.memory_per_participant, fmt_bytes)
    row("broadcast: frames delivered", lambda r: r.rate("broadcast"), per_s("frames"))
    row("broadcast: server CPU per delivered frame", lambda r: r.cpu_per_item("broadcast"), fmt_seconds)
    row("broadcast: delivery latency p50", lambda r: r.latency("broadcast", 0.5), fmt_seconds)
    row("broadcast: delivery latency p99", lambda r: r.latency("broadcast", 0.99), fmt_seconds)
    row("request/response: round trips", lambda r: r.rate("request"), per_s("round trips"))
    row("request/response: server CPU per round trip", lambda r: r.cpu_per_item("request"), fmt_seconds)
    row("request/response: latency p50", lambda r: r.latency("request", 0.5), fmt_seconds)
    row("request/response: latency p99", lambda r: r.latency("request", 0.99), fmt_seconds)
    return rows


def _describe(run: Run) -> str:
    b, r = run.raw["broadcast"], run.raw["request"]

    def busy(p: dict[str, Any]) -> str:
        if p["server_cpu"] is None or not p["count"]:
            server = "?"
        else:
            each = fmt_seconds(p["server_cpu"] / p["count"])
            server = f"{100 * p['server_cpu'] / p['seconds']:.0f}% ({each} each)"
        return f"server CPU {server}, load CPU {100 * p['load_cpu'] / p['seconds']:.0f}%"

    memory = run.memory_per_participant
    return (
        f"  {run.kind:7s} fill {fmt_seconds(run.fill_seconds)}, "
        f"{fmt_bytes(memory) if memory is not None else '?'}/participant; "
        f"broadcast {run.rate('broadcast'):,.0f} frames/s (p50 {fmt_seconds(run.latency('broadcast', 0.5))}, "
        f"p99 {fmt_seconds(run.latency('broadcast', 0.99))}; {busy(b)}); "
        f"{run.raw['pairs']} pairs {run.rate('request'):,.0f} round trips/s "
        f"(p50 {fmt_seconds(run.latency('request', 0.5))}, p99 {fmt_seconds(run.latency('request', 0.99))}; "
        f"{busy(r)})" + (f"; CLOSED BY THE SERVER: {run.raw['closed']}" if run.raw["closed"] else "")
    )


async def run(settings: Settings) -> list[Row]:
    sizes = settings.participants or (QUICK_SIZES if settings.quick else SIZES)
    seconds = 2.0 if settings.quick else 5.0
    window = int(os.environ.get("MCPX_BENCH_WINDOW", WINDOW))
    rows: list[Row] = []
    print(
        f"server on {settings.backend} (its own process), load generator on asyncio (its own process); "
        f"{os.cpu_count()} cores; broadcast window {window}, up to {PAIRS} request/response pairs, "
        f"{seconds:g} s per phase"
    )
    profile_dir = os.environ.get("MCPX_BENCH_PROFILE")
    for size in sizes:
        rounds = 1 if settings.quick or size >= 5_000 else 2 if size >= 1_000 else 3
        floors: list[Run] = []
        gateways: list[Run] = []
        for index in range(rounds):
            order = ("floor", "gateway") if index % 2 == 0 else ("gateway", "floor")
            for kind in order:
                profile = (
                    os.path.join(profile_dir, f"{kind}-{size}-{settings.backend}-{index + 1}.txt")
                    if profile_dir
                    else None
                )
                result = await one_run(
                    kind, size, settings.backend, seconds=seconds, window=window, profile=profile
                )
                (floors if kind == "floor" else gateways).append(result)
                print(f"{size:,} participants, round {index + 1}/{rounds}:")
                print(_describe(result), flush=True)
        rows += _rows(size, floors, gateways)
    return rows
