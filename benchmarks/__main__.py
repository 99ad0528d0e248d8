"""The one entry point: `python -m benchmarks [--quick] [--compare] [--backend trio] [NAME ...]`.

`python -m benchmarks evals ...` runs the tool-selection evaluation (benchmarks/evals, docs/evals.md).

Every figure is a ratio against a baseline measured in the same run, interleaved with it, so
a noisy machine moves both sides alike. The summary at the end is a Markdown table, ready for
docs/benchmarks.md. The exit status is 0 even when a target is missed: these are measurements,
not tests.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
from collections.abc import Awaitable, Callable

import anyio

from . import bench_router, catalogue, dispatch, facade, groups, growth, imports, names, tracing
from ._common import Row, Settings, machine, print_table, revision
from .mcpx import gateway

BENCHMARKS: dict[str, Callable[[Settings], Awaitable[list[Row]]]] = {
    dispatch.NAME: dispatch.run,
    catalogue.NAME: catalogue.run,
    growth.NAME: growth.run,
    bench_router.NAME: bench_router.run,
    names.NAME: names.run,
    imports.NAME: imports.run,
    tracing.NAME: tracing.run,
    facade.NAME: facade.run,
    gateway.NAME: gateway.run,
    groups.NAME: groups.run,
}

# With --compare, the module whose `run` adds the competitors' rows to each of these benchmarks.
COMPARED = {
    dispatch.NAME: ".compare.compare_dispatch",
    catalogue.NAME: ".compare.compare_catalogue",
    bench_router.NAME: ".compare.compare_change",
}


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
    if given[:1] == ["evals"]:  # the tool-selection evaluation has options of its own
        from .evals.cli import main as evals

        return evals(given[1:])
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="Benchmarks of mcpx_router against the plain mcp client."
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
        rows += anyio.run(BENCHMARKS[name], settings, backend=settings.backend)
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
