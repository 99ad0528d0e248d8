"""Each integration loads its own framework when imported, and nothing else does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded_after(statement: str) -> set[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return {name.split(".")[0] for name in json.loads(done.stdout)}


@pytest.mark.parametrize(
    ("module", "framework", "other"),
    [("agents", "agents", "pydantic_ai"), ("pydantic_ai", "pydantic_ai", "agents")],
)
def test_an_integration_loads_its_framework_and_not_the_other(
    module: str, framework: str, other: str
) -> None:
    loaded = _loaded_after(f"import mcpx_router.integrations.{module}")
    assert framework in loaded and other not in loaded


def test_the_integrations_package_loads_no_framework() -> None:
    loaded = _loaded_after("import mcpx_router.integrations")
    assert {"agents", "pydantic_ai", "openai"} & loaded == set()
