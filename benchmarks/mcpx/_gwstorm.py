"""A topic filled from empty all at once, as after a gateway restart, with calls running through it.

    python -m benchmarks.mcpx._gwstorm --participants N [--presence batched] [--spread S] [--pairs P]
        [--quiet SHARE] [--generators G] [--profile FILE] [--gc-oldest N]

Starts our gateway (`_gwserver`, its own process; rate limit lifted, presence batches every
0.25 s, the default; its loop-lag probe on) and drives it from processes of their own
(`_gwstorm_part`), each with its own event loop and loop-lag probe, so that a call's latency is
not the load generator's own stalls, and each stall is seen in the process that had it:

1. the pairs' process: `2 * pairs` participants join (one wave) and each requester keeps one
   `tools/call`-sized request in flight to its responder, which answers at once;
2. the storm, over `generators` processes: the other participants connect at random moments
   within `spread` seconds (the jittered reconnects of clients that lost their gateway), all at
   once in flight; with `--quiet SHARE`, that share of them asks for no presence
   (`presence=none`, as workers that only answer do), and its joining is its welcome alone;
3. the fill is over when every storm participant has every frame of its joining: with presence
   per participant, its welcome and one `join` per later participant; with `--presence batched`,
   its welcome and the batch after the newest welcome's roster its process saw (the fill ends
   when the last generator's does).

Prints one JSON object: the fill's seconds (from the storm's first moment), the round trips'
latencies during it (those that came back within it), the frames and bytes the participants
received, the server's CPU seconds, and `lag`: each process's loop lag over the fill (p50, p99,
max, and each stall of 0.25 s or more: seconds into the fill it began, how long), with the
gateway's garbage collections (`gateway_gc`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcpx_router.mcpx.gateway._serve import GC_OLDEST

from ._gwload import cpu_seconds
from ._lag import gc_summary, lag_summary

ROOT = Path(__file__).resolve().parents[2]


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        limit=2**30,
    )


async def _line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    text = (await proc.stdout.readline()).decode().strip()
    if not text:
        raise RuntimeError(f"process {proc.pid} ended early (exit {await proc.wait()})")
    return text


def _tell(proc: asyncio.subprocess.Process, text: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(text.encode() + b"\n")


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    presence = args.presence or "each"
    if args.generators > 1 and presence != "batched":
        raise SystemExit("--generators above 1 needs --presence batched (the fill is judged per process)")
    server = await _spawn(
        "benchmarks.mcpx._gwserver",
        "--kind",
        "gateway",
        "--participants",
        str(args.participants),
        "--lag",
        *(["--profile", args.profile] if args.profile else []),
        "--gc-oldest",
        str(args.gc_oldest),
    )
    parts: list[asyncio.subprocess.Process] = []
    try:
        url = await _line(server)
        common = ["--url", url, "--server-pid", str(server.pid), "--presence", presence]
        pairs = await _spawn(
            "benchmarks.mcpx._gwstorm_part",
            "--role",
            "pairs",
            *common,
            "--first",
            "0",
            "--count",
            str(2 * args.pairs),
        )
        parts.append(pairs)
        await _line(pairs)  # ready: joined, calls not yet begun
        first, storm = 2 * args.pairs, args.participants - 2 * args.pairs
        generators = []
        for g in range(args.generators):
            count = storm // args.generators + (1 if g < storm % args.generators else 0)
            generators.append(
                await _spawn(
                    "benchmarks.mcpx._gwstorm_part",
                    "--role",
                    "storm",
                    *common,
                    "--first",
                    str(first),
                    "--count",
                    str(count),
                    "--spread",
                    str(args.spread),
                    "--quiet",
                    str(args.quiet),
                )
            )
            first += count
        parts += generators
        for proc in generators:
            await _line(proc)  # ready
        _tell(pairs, "go")
        await asyncio.sleep(0.5)  # the calls run before the storm begins
        started = time.time() + 0.5
        for proc in generators:
            _tell(proc, f"go {started}")
        await asyncio.sleep(max(0.0, started - time.time()))
        cpu0 = cpu_seconds(server.pid)
        results = [json.loads(await _line(proc)) for proc in generators]
        cpu1 = cpu_seconds(server.pid)
        ended = max(r["filled_at"] for r in results)
        for proc in parts:
            _tell(proc, "stop")
        pairs_result = json.loads(await _line(pairs))
        lags = [json.loads(await _line(proc))["lag"] for proc in generators]
        _tell(server, "")
        gateway = json.loads(await _line(server))
    finally:
        for proc in [*parts, server]:
            await _end(proc)
    trips = pairs_result["round_trips"]
    latencies = sorted(s for at, s, _ in trips if started <= at <= ended)
    slow = [(round(at - s - started, 3), round(s, 3), pid) for at, s, pid in trips if s > 1.0]
    return {
        "participants": args.participants,
        "gc_oldest": args.gc_oldest,
        "presence": presence,
        "quiet": sum(r["quiet"] for r in results),
        "spread": args.spread,
        "generators": args.generators,
        "connected_seconds": max(r["connected_at"] for r in results) - started,
        "fill_seconds": ended - started,
        "server_cpu": None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
        "frames": sum(r["frames"] for r in results),
        "round_trips": len(latencies),
        "p50": latencies[len(latencies) // 2] if latencies else None,
        "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None,
        "max": latencies[-1] if latencies else None,
        "retries": sum(r["retries"] for r in results),
        "slow": slow,
        "closed": [code for r in [*results, pairs_result] for code in r["closed"]],
        "lag": _lags(gateway["lag"], pairs_result["lag"], lags, started, ended),
        "gateway_gc": gc_summary(gateway["gc"], started, ended),
    }


def _lags(gateway: Any, pairs: Any, storm: list[Any], start: float, end: float) -> dict[str, object]:
    return {
        "gateway": lag_summary(gateway, start, end),
        "pairs": lag_summary(pairs, start, end),
        "storm": [lag_summary(samples, start, end) for samples in storm],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcpx._gwstorm")
    parser.add_argument("--participants", type=int, required=True)
    parser.add_argument("--presence", choices=("batched",))
    parser.add_argument("--spread", type=float, default=5.0, help="seconds the reconnects are spread over")
    parser.add_argument("--pairs", type=int, default=10, help="requester/responder pairs calling meanwhile")
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.0,
        help="share of the storm's participants that ask for no presence (presence=none: workers)",
    )
    parser.add_argument("--generators", type=int, default=1, help="processes the storm is spread over")
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile; its stats to FILE")
    parser.add_argument(
        "--gc-oldest",
        type=int,
        default=GC_OLDEST,
        metavar="N",
        help="the gateway's collector, as `mcpx-router gateway --gc-oldest` (0: as Python sets it)",
    )
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main_async(args))), flush=True)


if __name__ == "__main__":
    main()
