"""The one entry point: `python -m benchmarks [--quick] [--compare] [--backend trio] [NAME ...]`.

`python -m benchmarks evals|relevance|stemming|layout|callpath|hostile [OPTIONS]` runs one of the benchmarks
with options of their own, the tool-selection evaluation among them (benchmarks/evals,
docs/evals.md). `--help` lists them all. Each benchmark's module is imported only when it runs,
so `--help` needs nothing beyond the package and any one benchmark only what it imports.

Every figure is a ratio against a baseline measured in the same run, interleaved with it, so
a noisy machine moves both sides alike. The summary at the end is a Markdown table, ready for
docs/benchmarks.md. The exit status is 0 even when a target is missed: these are measurements,
not tests.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import logging
import sys
import time
from collections.abc import Callable

import anyio

from ._common import Row, Settings, machine, print_table, revision

BENCHMARKS: dict[str, tuple[str, str]] = {
    "dispatch": (".dispatch", "one tool call through the adapter vs the same call on mcp.Client"),
    "catalogue": (".catalogue", "500 peers x 20 tools registered and published, its memory, its views"),
    "growth": (".growth", "the catalogue's registration and memory from 10 x 10 to 2,000 x 20 tools"),
    "router": (".bench_router", "a Router following one peer's tool-list change; dispatch over stdio"),
    "names": (".names", "answering a call to a name that is not published, at 10,000 tools"),
    "imports": (".imports", "what `import mcpx_router` costs, against `import mcp`"),
    "tracing": (".tracing", "what OpenTelemetry costs a tool call (skipped without opentelemetry-sdk)"),
    "facade": (".facade", "the blocking facade's call against `await Router.call`"),
    "loopcalls": (".integrations.loop_calls", "a framework's sync call into the Router vs the anyio hop"),
    "gateway": (".mcpx.gateway", "one MCPx gateway under load, against a floor (--participants)"),
    "groups": (".groups", "a group call, its statistics, and a failover"),
    "inspector": (".inspector.inspector", "an open inspector page's cost; its endpoints at 5,000 tools"),
    "codemode": (".codemode.codemode", "prompt tokens of a three-call task: code mode vs function calling"),
}
"""The benchmarks run together (`python -m benchmarks [NAME ...]`): each module's `run`, imported
only when it runs, so that `--help` and any one benchmark need only what that one imports."""

COMMANDS: dict[str, tuple[str, str, str]] = {
    "evals": (".evals.cli", "main", "does a real model pick the right tool? (an OpenAI-compatible endpoint)"),
    "relevance": (".ranking.relevance", "main", "recall@k of the tool ranking: BM25 against embeddings"),
    "stemming": (".ranking.stemming", "main", "recall@k of the lexical ranking with and without stemming"),
    "layout": (".layout", "main", "the package's layout: top modules, floors, a tool call's path"),
    "callpath": (".callpath", "cli", "one call's bytecodes by function, against ClientSessionGroup"),
    "hostile": (".peers.hostile", "cli", "a stdio peer's huge answer beside ordinary peers"),
}
"""The benchmarks with options of their own: `python -m benchmarks NAME [OPTIONS]`, one at a time."""

# With --compare, the module whose `run` adds the competitors' rows to each of these benchmarks.
COMPARED = {
    "dispatch": ".compare.compare_dispatch",
    "catalogue": ".compare.compare_catalogue",
    "router": ".compare.compare_change",
}


def _listing() -> str:
    width = max(map(len, [*BENCHMARKS, *COMMANDS]))
    run = [f"  {name:{width}}  {text}" for name, (_, text) in BENCHMARKS.items()]
    alone = [f"  {name:{width}}  {text}" for name, (_, _, text) in COMMANDS.items()]
    return "\n".join(
        [
            "benchmarks run together (default: all of them):",
            *run,
            "",
            "benchmarks with options of their own (python -m benchmarks NAME --help):",
            *alone,
        ]
    )


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected counts such as 100,1000, not {text!r}") from None
    if any(size < 3 for size in sizes):
        raise argparse.ArgumentTypeError("each count must be at least 3")
    return sizes


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] and given[0] in COMMANDS:
        module, function, _ = COMMANDS[given[0]]
        loaded = importlib.import_module(module, __package__)
        entry: Callable[[list[str]], int | None] = getattr(loaded, function)
        return entry(given[1:]) or 0
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmarks of mcpx_router against the plain mcp client.",
        epilog=_listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions: a smoke run, noisier figures"
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="also run the competitors installed by the `bench` extra (docs/benchmarks.md)",
    )
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio", help="anyio backend")
    parser.add_argument(
        "--participants",
        type=_sizes,
        metavar="N[,N...]",
        help="participant counts for the gateway benchmark (default 100,1000,5000; --quick: 100,1000)",
    )
    args = parser.parse_args(argv)
    # Warnings and errors only: an `MCPServer` sets the root logger to INFO on creation, and every
    # HTTP request a benchmark makes would print a line among its figures.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    names = args.names or list(BENCHMARKS)
    settings = Settings(quick=args.quick, backend=args.backend, participants=args.participants)

    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"{command.strip()}  ({datetime.date.today().isoformat()})")
    print(f"machine: {machine()}; anyio backend: {settings.backend}")
    print(f"mcpx_router: {revision()}")
    rows: list[Row] = []
    started = time.perf_counter()
    for name in names:
        print(f"\n== {name} ==")
        benchmark = importlib.import_module(BENCHMARKS[name][0], __package__)
        rows += anyio.run(benchmark.run, settings, backend=settings.backend)
        if args.compare and name in COMPARED:
            print(f"\n== {name}: competitors ==")
            extension = importlib.import_module(COMPARED[name], __package__)
            rows += anyio.run(extension.run, settings, backend=settings.backend)
    print(f"\n== summary ({time.perf_counter() - started:.0f} s) ==")
    print_table(rows)
    missed = [row for row in rows if row.passed is False]
    if missed:
        print(f"\n{len(missed)} target(s) missed: " + "; ".join(row.metric for row in missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
