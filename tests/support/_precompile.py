"""Compile the suite's modules once, on every CPU, before the pytest-xdist workers start.

    python tests/support/_precompile.py [PROCESSES]

Each worker imports every test module to collect it. On a fresh checkout no bytecode exists yet,
so each worker would rewrite the asserts of all the test modules and compile them (6 s of CPU a
worker on a 2-core machine): done here once, in parallel, the workers find it done. The test
modules and conftest.py are compiled as pytest's assertion rewriting does it and cached where it
looks (its own pyc names, checked by source hash); the other modules by `compileall`. A module
already compiled from the same source is left as it is.

pytest's rewriting functions are not public: if they change, this says so and stops, and the
workers compile the modules themselves as before (slower, not wrong).
"""

from __future__ import annotations

import compileall
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ("mcpx_router", "benchmarks", "tests")
REWRITTEN = re.compile(r"[/\\](test_[^/\\]*|conftest)\.py$")
"""The modules pytest rewrites: compiled by `_rewrite`, not by `compileall`."""


class _Quiet:
    """The assertion state pytest's pyc writer reports to."""

    @staticmethod
    def trace(message: str) -> None:
        del message


def _rewrite(path: Path) -> None:
    from _pytest.assertion import rewrite

    cache = rewrite.get_cache_dir(path)
    pyc = cache / (path.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(path, pyc, _Quiet.trace) is not None:
        return
    cache.mkdir(exist_ok=True)
    source_hash, code = rewrite._rewrite_test(path, None)  # no Config: no assertion pass hook
    rewrite._write_pyc(_Quiet(), code, source_hash, pyc)


def _compile_plain(folder: str) -> None:
    compileall.compile_dir(ROOT / folder, rx=REWRITTEN, quiet=1)


def main() -> None:
    tests = sorted(path for path in (ROOT / "tests").rglob("*.py") if REWRITTEN.search(str(path)))
    processes = int(sys.argv[1]) if len(sys.argv) > 1 else None  # dev.py passes its CPU count
    try:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            done = [pool.submit(_compile_plain, folder) for folder in PLAIN]
            done += [pool.submit(_rewrite, path) for path in tests]
            for future in done:
                future.result()
    except (AttributeError, ImportError, TypeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        print(f"precompiling the test modules failed ({reason}); each worker compiles them", file=sys.stderr)


if __name__ == "__main__":
    main()
