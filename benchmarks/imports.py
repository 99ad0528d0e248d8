"""What `import mcpx_router` costs, against `import mcp`.

Each import runs in a fresh interpreter, which reports the CPU time (`time.process_time`) of
the import statement alone: interpreter start-up is not counted. Both sides run with the same
warm bytecode cache: a private `PYTHONPYCACHEPREFIX` (so the source tree is not written to,
and `PYTHONDONTWRITEBYTECODE` in the environment cannot make one side compile its sources
every time), filled by two imports of each before measuring.

- subject:  `import mcpx_router` (the whole public API: the adapter, the Router, the errors);
- baseline: `import mcp` (the SDK every peer session comes from).

Rounds alternate the two, which goes first swapping every round; the figure is the median of
per-round ratios. Target: at most 1.1x. A second row, without a target, measures
`from mcpx_router.loop import run_chat` (which loads `openai`) against `import mcp, openai`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

from ._common import Row, Settings, fmt_seconds, median

NAME = "imports"

TARGET = 1.1
ROOT = Path(__file__).resolve().parent.parent
TIMED = "import time; t = time.process_time(); {}; print(time.process_time() - t)"


async def _cpu_time(statement: str, env: dict[str, str]) -> float:
    done = await anyio.run_process([sys.executable, "-c", TIMED.format(statement)], env=env, cwd=ROOT)
    return float(done.stdout.decode().strip())


async def _compare(
    baseline: str, subject: str, rounds: int, env: dict[str, str]
) -> tuple[float, float, float]:
    """Medians of the baseline's and the subject's CPU time, and the median per-round ratio."""
    for _ in range(2):  # fill the bytecode cache for both
        await _cpu_time(baseline, env)
        await _cpu_time(subject, env)
    base: list[float] = []
    subj: list[float] = []
    ratios: list[float] = []
    for i in range(rounds):
        if i % 2:
            s, b = await _cpu_time(subject, env), await _cpu_time(baseline, env)
        else:
            b, s = await _cpu_time(baseline, env), await _cpu_time(subject, env)
        base.append(b)
        subj.append(s)
        ratios.append(s / b)
    return median(base), median(subj), median(ratios)


async def run(settings: Settings) -> list[Row]:
    rounds = 7 if settings.quick else 25
    with tempfile.TemporaryDirectory(prefix="mcpx-bench-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        rows = []
        for metric, baseline, subject, target in (
            ("CPU time of `import mcpx_router` vs `import mcp`", "import mcp", "import mcpx_router", TARGET),
            (
                "CPU time of `from mcpx_router.loop import run_chat` vs `import mcp, openai`",
                "import mcp, openai",
                "from mcpx_router.loop import run_chat",
                None,
            ),
        ):
            b, s, ratio = await _compare(baseline, subject, rounds, env)
            passed = None if target is None else ratio <= target
            verdict = "" if passed is None else (" PASS" if passed else " FAIL")
            print(
                f"  {metric}: {fmt_seconds(s)} vs {fmt_seconds(b)}, {ratio:.3f}x ({rounds} rounds){verdict}"
            )
            rows.append(
                Row(
                    NAME,
                    metric,
                    fmt_seconds(b),
                    fmt_seconds(s),
                    f"{ratio:.3f}x",
                    "—" if target is None else f"≤ {target}x",
                    passed,
                )
            )
    return rows
