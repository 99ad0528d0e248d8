"""What the model is told when it calls a function code mode does not offer (no I/O here).

Only `run_python` and `find_tools` are offered, yet a model often calls a tool directly: by its
public name (`drive__move_file`), by its name in a program (`drive.move_file`), or by a name of
its own (`read_dana_email`). The answer is either the direct call run as a one-line program
(`CodeMode(direct_calls=True)`) or what a program would call instead, as signatures.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..model._results import truncate

if TYPE_CHECKING:
    from ._result import ProgramResult
    from ._signatures import ToolFunction

__all__ = ["ran_directly", "search_words", "what_to_call"]


def ran_directly(
    name: str,
    function: ToolFunction,
    arguments: dict[str, Any],
    result: ProgramResult,
    run_name: str,
    limit: int | None,
) -> str:
    """The answer to a direct call of `function` that ran as the one-line program calling it:
    that program, its result as a program's, and the signature when the arguments were refused."""
    head = (
        f"{said(name)} is not one of your functions, so it ran as the program "
        f"`{program(function.qualified, arguments)}` (next time call {run_name}(code): one "
        "program can make several dependent calls)"
    )
    text = f"{head}.\n\n{result.text()}"
    if not result.ok and (not result.calls or result.calls[-1].error_type == "invalid_arguments"):
        text += f"\n\nIts signature:\n{function.signature()}"
    return truncate(text, limit)


def what_to_call(
    name: str, exact: ToolFunction | None, found: Sequence[ToolFunction], run_name: str, find_name: str
) -> str:
    """The answer to a call that is not run: the two functions there are, and the signatures of
    the tool itself (`exact`) or of the closest functions found by the name's words."""
    head = (
        f"Error: {said(name)} is not a function you can call; call {run_name}(code) with a "
        f"program, or {find_name}(query)"
    )
    if not found:
        return f"{head}. Find the functions a program can call by what they do."
    which = "it is" if exact is not None else "the closest are" if len(found) > 1 else "the closest is"
    shown = "\n".join(f.signature() for f in found)
    return f"{head}. In a program, {which}:\n{shown}"


def said(name: str) -> str:
    """A name the model wrote, quoted, cut when long."""
    return repr(name) if len(name) <= 80 else repr(name[:80]) + f" (cut, of {len(name):,} characters)"


def program(qualified: str, arguments: dict[str, Any], limit: int = 300) -> str:
    """The one-line program a direct call stands for, as the model would write it."""
    if all(key.isidentifier() and not keyword.iskeyword(key) for key in arguments):
        shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    else:
        shown = f"**{arguments!r}"
    text = f"{qualified}({shown})"
    return text if len(text) <= limit else text[: limit - 2] + "…)"


def search_words(name: str) -> str:
    """`send_budget_review`, `sendBudgetReview`, `mail.send` as words to rank tools by."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_.\-]+", " ", name[:200]).strip() or name[:200]
