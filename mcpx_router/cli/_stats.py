"""`--stats-file` of `call` and `chat`, and `mcpx-router tools --stats`: call statistics kept in a file.

`tools --stats --json` prints {"window": N, "peers": [ROW, ...], "tools": [ROW, ...]}, each ROW
{"peer", "tool" (tools only), "calls", "errors": {kind: n}, "p50", "p95" (seconds or null),
"last_failure": {"kind", "message", "at"} or null, "score", "good", "bad"}.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

from .._console import USAGE, fail
from .._errors import RouterError
from ..groups._reputation import PeerStats, Reputation
from ..groups._stats_file import load_stats
from ._render import print_json, write

__all__ = ["ENV", "add_stats_file", "print_stats", "stats_file"]

ENV = "MCPX_ROUTER_STATS_FILE"


def add_stats_file(
    parser: argparse.ArgumentParser, *, listing: Callable[[argparse.Namespace], int] | None = None
) -> None:
    """`--stats-file FILE`; for `tools` (`listing`: how it runs without `--stats`), `--stats` too."""
    if listing is not None:
        run = listing
        parser.set_defaults(run=lambda args: print_stats(args) if args.stats else run(args))
        parser.add_argument(
            "--stats",
            action="store_true",
            help="print the call statistics kept in the --stats-file (calls, errors by kind, p50/p95 "
            "latency, last failure, feedback score per peer and per tool) instead of connecting",
        )
        told = "the file the statistics of --stats are read from"
    else:
        told = "record the statistics of the calls into this JSON file (loaded first when it exists)"
    parser.add_argument("--stats-file", metavar="FILE", default=None, help=f"{told} (default: ${ENV})")


def stats_file(args: argparse.Namespace) -> str | None:
    """The statistics file the options or the environment name, if any."""
    given: str | None = args.stats_file or os.environ.get(ENV) or None
    return given


def print_stats(args: argparse.Namespace) -> int:
    """`tools --stats`: the statistics of the file, as a table or (`--json`) a document."""
    path = stats_file(args)
    if path is None:
        return fail(f"--stats needs the statistics file: give --stats-file FILE or set {ENV}", USAGE)
    reputation = Reputation()
    try:
        if not load_stats(path, reputation):
            return fail(f"no statistics file at {path!r}: run call or chat with --stats-file {path} first", 1)
    except RouterError as exc:
        return fail(str(exc), USAGE)
    report = reputation.report()
    tools = [s for s in report.tools.values() if _wanted(f"{s.peer}__{s.tool}", args.patterns)]
    peers = [s for s in report.peers.values() if not args.patterns or any(t.peer == s.peer for t in tools)]
    if args.json:
        print_json(
            sys.stdout,
            {
                "window": report.window,
                "peers": [_row(s) for s in peers],
                "tools": [_row(s, s.tool) for s in tools],
            },
        )
        return 0
    header = f"{'':<32} {'calls':>6} {'p50 s':>8} {'p95 s':>8} {'score':>6}  errors; last failure"
    write(sys.stdout, header)
    for stats in peers:
        write(sys.stdout, _line(f"peer {stats.peer}", stats))
        for tool in tools:
            if tool.peer == stats.peer:
                write(sys.stdout, _line(f"  {tool.tool}", tool))
    return 0


def _wanted(name: str, patterns: list[str]) -> bool:
    return not patterns or any(fnmatchcase(name, p) for p in patterns)


def _row(stats: PeerStats, tool: str | None = None) -> dict[str, Any]:
    last = stats.last_failure
    row: dict[str, Any] = {"peer": stats.peer}
    if tool is not None:
        row["tool"] = tool
    row |= {
        "calls": stats.calls,
        "errors": {kind: n for kind, n in stats.errors.items() if n},
        "p50": stats.p50,
        "p95": stats.p95,
        "last_failure": None if last is None else {"kind": last.kind, "message": last.message, "at": last.at},
        "score": round(stats.score, 4),
        "good": stats.good,
        "bad": stats.bad,
    }
    return row


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _line(label: str, stats: PeerStats) -> str:
    errors = ", ".join(f"{kind} {n}" for kind, n in stats.errors.items() if n) or "no errors"
    last = stats.last_failure
    if last is not None:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.at))
        message = last.message.removeprefix("Error: ").splitlines()[0][:80]
        errors += f"; {last.kind} at {when}: {message}"
    figures = f"{stats.calls:>6} {_seconds(stats.p50):>8} {_seconds(stats.p95):>8} {stats.score:>6.2f}"
    return f"{label[:32]:<32} {figures}  {errors}"
