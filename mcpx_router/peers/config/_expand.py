"""Environment variables in config values, as MCP hosts write them (pure: the environment is passed in).

    ${VAR}            the value of VAR; an error if VAR is not set (set but empty gives "")
    ${VAR:-default}   the value of VAR, or `default` when VAR is unset or empty (as in POSIX sh)
    ${env:VAR}        VS Code's spelling of ${VAR}
    $${               a literal "${" (the escape, for text that must keep it)

In a run of `$` signs just before a `{`, each `$$` stands for one literal `$` and an odd `$`
left over starts a reference (`$$${VAR}` is a `$` and VAR's value). Any other `$` is kept as it
is: `$VAR`, `pa$$word`, a lone `$`, as the hosts that do not expand them pass them on. Anything
else between `${` and `}` (VS Code's `${input:id}` prompts and `${workspaceFolder}`-style
variables, a malformed name, a nested `${` in a default, no closing `}`) is an error that says
what was not understood, never text passed on silently. A default is taken literally, up to the
first `}`. A value is expanded once: what a variable holds is not expanded again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["ExpansionError", "escape", "expand"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE = re.compile(rf"(?:env:(?P<env>{_NAME})|(?P<name>{_NAME})(?::-(?P<default>[^}}]*))?)\}}")

_DOLLARS = re.compile(r"\$+")
_BEFORE_BRACE = re.compile(r"\$+(?=\{)")

_VSCODE_VARIABLES = frozenset(
    {
        "workspaceFolder",
        "workspaceFolderBasename",
        "workspaceRoot",
        "userHome",
        "pathSeparator",
        "cwd",
        "file",
        "fileDirname",
    }
)
"""VS Code's own variables; they read like names but are not environment variables."""


class ExpansionError(ValueError):
    """A `${...}` reference that cannot be expanded; the message says why (`uses ${X}, which ...`)."""


def expand(text: str, environ: Mapping[str, str] | None = None, *, used: list[str] | None = None) -> str:
    """`text` with its `${...}` references replaced from `environ` (by default `os.environ`).

    The values taken from `environ` (not the defaults written in `text`) are appended to `used`
    when it is given: the config keeps them among its secrets.

    Example:
        >>> expand("Bearer ${TOKEN}", {"TOKEN": "abc"})
        'Bearer abc'
        >>> expand("${PORT:-8000}/$${literal}", {})
        '8000/${literal}'

    Raises:
        ExpansionError: A variable is not set and has no default, or a reference is not understood.
    """
    if "$" not in text:
        return text
    env = os.environ if environ is None else environ
    out: list[str] = []
    i = 0
    while True:
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        run = _DOLLARS.match(text, j).end() - j  # type: ignore[union-attr]
        if not text.startswith("{", j + run):
            out.append(text[j : j + run])  # `$` not before `{`: kept as it is
            i = j + run
            continue
        out.append("$" * (run // 2))
        i = j + run
        if run % 2:
            match = _REFERENCE.match(text, i + 1)
            if match is None:
                raise ExpansionError(_not_understood(text, i - 1))
            value = _value(match, "${" + match.group(0), env)
            if used is not None and value == env.get(match["env"] or match["name"]):
                used.append(value)
            out.append(value)
            i = match.end()


def escape(text: str) -> str:
    """`text` written so that `expand` gives it back unchanged: every `$` just before a `{` is doubled."""
    return _BEFORE_BRACE.sub(lambda m: m.group(0) * 2, text)


def _value(match: re.Match[str], reference: str, env: Mapping[str, str]) -> str:
    name = match["env"] or match["name"]
    value = env.get(name)
    default = match["default"]
    if default is not None:
        if "${" in default:
            raise ExpansionError(f"uses {reference}…: a default cannot hold another ${{...}} reference")
        return value if value else default
    if value is None:
        hint = ""
        if name in _VSCODE_VARIABLES:
            hint = f" (${{{name}}} is a VS Code variable; only environment variables are known here)"
        raise ExpansionError(f"uses {reference}, which is not set{hint}")
    return value


def _not_understood(text: str, start: int) -> str:
    end = text.find("}", start)
    if end < 0:
        shown = text[start : start + 40]
        return f"has {shown!r} with no closing '}}' (write $${{ for a literal ${{)"
    reference = text[start : end + 1]
    if reference.startswith("${input:"):
        return (
            f"uses {reference}, a VS Code input prompt, which cannot be asked for here; put the value in "
            "an environment variable and write ${env:NAME}"
        )
    return (
        f"uses {reference}, which is not a reference this config understands: write ${{NAME}}, "
        "${NAME:-default} or ${env:NAME} (NAME: letters, digits and _), or $${ for a literal ${"
    )
