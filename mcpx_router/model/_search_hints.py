"""What a tool-search conversation adds to the answer for a name no tool answers to (pure).

A small model calls tools it imagines (`save_note`, `sum_two_numbers`). The adapter's answer says
no such tool exists and names close spellings; in a conversation with tool search the library can
do better: the name itself, read as words, is a query, and the search finds the tools that do
what it says. The answer then names them and tells the model it can search itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._budget import tokens

__all__ = ["SUGGESTED", "hint", "hinted", "query_of"]

SUGGESTED: Final = 3
"""The most tools an answer to an unknown name suggests."""


def query_of(name: str) -> str:
    """A name as the words it is made of: `save_note`, `saveNote` and `save-note` are "save note"."""
    return " ".join(tokens(name))


def hint(found: Sequence[str], search: str | None, *, offered: bool) -> str:
    """The sentences added for the model: the tools found (`offered`: they are offered from its
    next step on) and how to search; `search` is the search function's name, None for the API's
    own tool search."""
    how = (
        f"call {search} with what you need in your own words"
        if search is not None
        else "use the tool search with what you need in your own words"
    )
    if not found:
        return f"The tool search finds no tool for that name; to find one, {how}."
    listed = ", ".join(repr(name) for name in found)
    then = " (offered from your next step on)" if offered else ""
    return f"The tool search finds for that name: {listed}{then}. To find another tool, {how}."


def hinted(answer: Any, text: str) -> Any:
    """`answer` (a Chat, legacy or Responses answer dict) with `text` after its message; as it is
    when its message is not text."""
    if not isinstance(answer, Mapping):
        return answer
    for key in ("output", "content"):
        message = answer.get(key)
        if isinstance(message, str):
            return {**answer, key: f"{message} {text}"}
    return answer
