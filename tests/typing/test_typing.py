"""User code typed with the `openai` SDK's own types passes `mypy --strict`; each misuse is reported.

The user code is `usage_openai.py`, `usage_sync.py` (the blocking facade) and the README's
quickstart; the misuses, `misuse_openai.py`.

mypy runs in-process on both files at once, with the project's configuration and its cache
directory (`.mypy_cache`, shared with the project's own type check), so only a first run on a
fresh checkout analyses the SDKs (about half a minute); later runs take a few seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
README = ROOT / "README.md"
USAGE = HERE / "usage_openai.py"
USAGE_SYNC = HERE / "usage_sync.py"
MISUSE = HERE / "misuse_openai.py"
EXPECTED = re.compile(r"#\s*error:\s*([a-z-]+)\s*$")
REPORTED = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def _expected_errors() -> set[tuple[int, str]]:
    lines = MISUSE.read_text(encoding="utf-8").splitlines()
    return {(n, m.group(1)) for n, line in enumerate(lines, 1) if (m := EXPECTED.search(line))}


@pytest.mark.typecheck
def test_user_code_type_checks_and_every_misuse_is_an_error(tmp_path: Path) -> None:
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert code is not None, "the README has no python block"
    quickstart = tmp_path / "readme_quickstart.py"
    quickstart.write_text(code.group(1), encoding="utf-8")
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--strict",
            "--no-pretty",
            "--show-error-codes",
            str(USAGE),
            str(USAGE_SYNC),
            str(MISUSE),
            str(quickstart),
        ]
    )
    assert stderr == ""
    errors = [REPORTED.match(line) for line in stdout.splitlines() if ": error: " in line]
    assert all(errors), stdout
    user_code = (USAGE.name, USAGE_SYNC.name, quickstart.name)
    in_usage = [m.group(0) for m in errors if m and Path(m["file"]).name in user_code]
    assert in_usage == [], "\n".join(in_usage)
    found = {(int(m["line"]), m["code"]) for m in errors if m and Path(m["file"]).name == MISUSE.name}
    expected = _expected_errors()
    assert len(expected) >= 15
    assert found == expected, stdout
    assert status == 1


def test_the_misuse_file_marks_one_error_per_line_it_expects() -> None:
    # Guards the test above against a comment pattern that silently matches nothing.
    expected = _expected_errors()
    assert {code for _, code in expected} >= {"call-arg", "arg-type", "call-overload", "typeddict-item"}
