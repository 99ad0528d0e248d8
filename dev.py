#!/usr/bin/env python3
"""Set-up and tasks for a fresh checkout; needs only Python >= 3.11.

    python3 dev.py demo     # run the demo (creates .venv on first use)
    python3 dev.py test     # lint, type-check and run the whole test suite on asyncio and trio, in parallel
    python3 dev.py test --quick  # the edit-test loop: no lint, no test that starts a process or runs mypy
    python3 dev.py bench    # run the benchmarks and print their ratios
    python3 dev.py bench --compare  # the same, with the competitors of the `bench` extra
    python3 dev.py lint     # ruff and mypy only
    python3 dev.py docs     # serve the documentation site on http://127.0.0.1:8000 (mkdocs.yml)
    python3 dev.py docs --build  # build it into site/ with --strict, as the test suite does
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".installed"


def _run(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True, env=env)


def bootstrap() -> None:
    """Create .venv and install the package with its dev tools, once per pyproject change."""
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may be started by an older python3
        sys.exit(f"mcpx_router needs Python >= 3.11, this is {sys.version.split()[0]}")
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text() != want:
        _run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        _run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
        STAMP.write_text(want)


def lint() -> None:
    _run(PY, "-m", "ruff", "check", "mcpx_router", "tests", "benchmarks", "dev.py")
    _run(PY, "-m", "mypy")


@contextmanager
def servers_installed() -> Iterator[None]:
    """Install the third-party MCP servers the suite starts (under .cache/, once) while the block
    runs: the lint takes one core, the installer waits on the network and the other core, and the
    tests find the servers installed rather than one worker installing them while the others wait."""
    print("+ install the test servers (tests/support/_servers.py), beside the lint", flush=True)
    installer = subprocess.Popen(
        [str(PY), str(ROOT / "tests" / "support" / "_servers.py")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield
    finally:
        output, _ = installer.communicate()
    if installer.returncode != 0:
        sys.exit(f"installing the test servers failed:\n{output}")


def cpus() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers(quick: bool) -> int:
    """Pytest workers per CPU this process may use: two, since much of the suite waits on peers'
    processes and sockets (on 2 cores, 4 workers ran the full suite in 714 s, 2 workers in 894 s);
    three for `--quick`, whose in-process tests wait on timers (rate limits, keepalives) and hold
    little else (on 2 cores, 6 workers ran it in 115 s, 4 in 130 s, 8 in 154 s)."""
    return (3 if quick else 2) * cpus()


def test(rest: list[str]) -> None:
    """The suite on `workers(quick)` processes (pytest-xdist); `--quick` and every other option go to pytest.

    Tests that must not share their resource with a concurrent test carry `xdist_group`
    markers, so `--dist loadgroup` runs each such group on one worker.
    """
    if not any(arg == "-n" or arg.startswith(("-n", "--numprocesses")) for arg in rest):
        rest = ["-n", str(workers("--quick" in rest)), "--dist", "loadgroup", *rest]
    # Each worker imports every test module to collect it: with bytecode writing off, each one
    # rewrites and compiles them all again, every run (3 s of CPU a worker here). Our own
    # __pycache__ folders are ignored by git.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # On a fresh checkout, compile them once on every CPU rather than once in each worker.
    _run(PY, ROOT / "tests" / "support" / "_precompile.py", str(cpus()), env=env)
    _run(PY, "-m", "pytest", *rest, env=env)


def main(argv: list[str]) -> None:
    task, rest = (argv[0], argv[1:]) if argv else ("test", [])
    bootstrap()
    if task == "demo":
        _run(BIN / "mcpx-router", "demo", *rest)
    elif task == "test":
        if "--quick" in rest:
            test(rest)
        else:
            with servers_installed():
                lint()
            test(rest)
    elif task == "lint":
        lint()
    elif task == "bench":
        if "--compare" in rest:
            _run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev,bench]")
        _run(PY, "-m", "benchmarks", *rest)
    elif task == "docs":
        if "--build" in rest:
            _run(PY, "-m", "mkdocs", "build", "--strict", *(a for a in rest if a != "--build"))
        else:
            _run(PY, "-m", "mkdocs", "serve", *rest)
    elif task != "setup":
        sys.exit(f"unknown task {task!r}; use demo, test, bench, lint, docs or setup")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.returncode)
