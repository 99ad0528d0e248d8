"""`python -m benchmarks --help` lists every benchmark, and needs nothing beyond the package and
the `bench` extra: no test tool, no OpenTelemetry SDK (those come with the dev extra)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import BENCHMARKS, COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
DEV_ONLY = (
    "opentelemetry.sdk",
    "pytest",
    "_pytest",
    "hypothesis",
    "trio",
    "nats",
    "uvicorn",
    "mkdocs",
    "griffe",
)
"""What the dev extra installs and the `bench` extra does not: made unimportable below."""
WITHOUT_DEV = """
import runpy, sys
from importlib.abc import MetaPathFinder

class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == top or name.startswith(top + ".") for top in {blocked!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}} (not installed here)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
sys.argv = ["python -m benchmarks", *{argv!r}]
runpy.run_module("benchmarks", run_name="__main__")
"""


def _without_dev(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_DEV.format(blocked=DEV_ONLY, argv=list(argv))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_help_lists_every_benchmark_without_the_dev_extra() -> None:
    done = _without_dev("--help")
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ") and line.split()}
    assert set(BENCHMARKS) | set(COMMANDS) <= listed
    assert "evals" in listed


def test_the_dev_only_packages_are_really_refused() -> None:
    done = _without_dev("tracing_that_is_not_a_benchmark")
    assert done.returncode != 0 and "unknown benchmark" in done.stderr
    refused = subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_DEV.format(blocked=DEV_ONLY, argv=[]).replace(
                'runpy.run_module("benchmarks", run_name="__main__")', "import opentelemetry.sdk.trace"
            ),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "not installed here" in refused.stderr


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_each_benchmark_is_listed_under_its_own_name(name: str) -> None:
    module = importlib.import_module(BENCHMARKS[name][0], "benchmarks")
    assert module.NAME == name
    assert callable(module.run)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_takes_its_own_options(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    assert "usage:" in capsys.readouterr().out
