"""The integrations' examples in docs/frameworks.md type-check with `mypy --strict`, as users' code."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "frameworks.md"


def _examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return [block for block in blocks if "mcpx_router.integrations" in block]


@pytest.mark.typecheck
@pytest.mark.timeout(900)  # a whole mypy run: minutes of CPU on a loaded machine, no waiting
def test_the_examples_type_check(tmp_path: Path) -> None:
    examples = _examples()
    assert len(examples) == 4  # openai-agents, pydantic-ai, LangChain, DSPy
    files = []
    for index, block in enumerate(examples):
        imports = [line for line in block.splitlines() if line.startswith(("from ", "import "))]
        body = [line for line in block.splitlines() if not line.startswith(("from ", "import "))]
        main = "\n\n\nasync def main() -> None:\n" + textwrap.indent("\n".join(body), "    ")
        code = "\n".join(imports) + main
        path = tmp_path / f"example_{index}.py"
        path.write_text(code + "\n", encoding="utf-8")
        files.append(str(path))
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    stdout, stderr, status = api.run([*options, "--strict", "--no-pretty", "--show-error-codes", *files])
    assert status == 0, stdout + stderr
