"""What a tool-search conversation adds to the answer for a name no tool answers to (pure).

A small model calls tools it imagines (`save_note`, `sum_two_numbers`). The adapter's answer says
no such tool exists and names close spellings; in a conversation with tool search the library can
do better: the name itself, read as words, is a query, and the search finds the tools that do
what it says. The answer then names them and tells the model it can search itself.

A hint is an invitation the model acts on, so it must not lead to harm: `save_note` once got
`notes__delete_note` for the one word "note" they share, and the model deleted a note. A tool is
suggested only when its name and description say what the called name says (`meaningful`), a
tool that may change anything only when they say all of it, and a tool that may destroy comes
after every other tool suggested with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any, Final, Protocol, TypeVar

from ._budget import terms, tokens

__all__ = [
    "SUGGESTED",
    "Suggestible",
    "hint",
    "hinted",
    "holds",
    "meaningful",
    "partial_score",
    "partial_words",
    "query_of",
    "tool_words",
]

SUGGESTED: Final = 3
"""The most tools an answer to an unknown name suggests."""


class Suggestible(Protocol):
    """What `meaningful` reads of a tool (a `PublishedTool` is one)."""

    @property
    def tool(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def risk(self) -> int: ...


_T = TypeVar("_T", bound=Suggestible)


def meaningful(name: str, tools: Iterable[_T], *, misspelt: bool = False) -> list[_T]:
    """The tools that may be suggested for the name `name` the model called, in their order but
    those that may destroy last.

    The name's words (stemmed, words such as "the" dropped) are compared with the words of each
    tool's own name and description:

    - a read-only tool (risk 0) needs at least half of them, and two when the name has two or
      more: one shared word ("number" in `sum_two_numbers` and "Delete a note by its number")
      is a coincidence, not a meaning;
    - any other tool (risk 1 or 2, `PublishedTool.risk`) needs every one of them, and a name of
      two words at least: a call it was not meant for may change what the user keeps.

    A tool that may destroy (risk 2) never comes before one that may not. `misspelt`: the name
    is only spelt like the tools' (the close names of a typo), so a word of four letters or more
    also matches a word of the tool's spelt alike (`difflib` ratio 0.75 or more: `raed` and
    `read`, never `save` and `delete`).
    """
    query = {stem: word for word in tokens(name) for stem in terms(word)}  # stem -> the word
    if not query:
        return []
    kept: list[_T] = []
    for tool in tools:
        text = f"{query_of(tool.tool)} {tool.description}"
        stems = set(terms(text))
        shared = {stem for stem in query if stem in stems}
        if misspelt and len(shared) < len(query):
            written = set(tokens(text))
            shared |= {stem for stem, word in query.items() if _spelt_alike(word, written)}
        if tool.risk == 0:
            strong = len(shared) >= min(2, len(query)) and 2 * len(shared) >= len(query)
        else:
            strong = len(query) >= 2 and shared == query.keys()
        if strong:
            kept.append(tool)
    return sorted(kept, key=lambda tool: tool.risk >= 2)


def _spelt_alike(word: str, words: set[str]) -> bool:
    if len(word) < 4:
        return False
    matcher = SequenceMatcher(None, b=word, autojunk=False)
    for other in words:
        if len(other) >= 4:
            matcher.set_seq1(other)
            if matcher.real_quick_ratio() >= 0.75 and matcher.ratio() >= 0.75:
                return True
    return False


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


def partial_words(query: str) -> set[str]:
    """The words of `query` of three letters or more, and their stems: what a search that finds no
    whole word looks for in parts of the tools' words."""
    return {w for w in tokens(query) if len(w) >= 3} | {w for w in terms(query) if len(w) >= 3}


def tool_words(tool: Suggestible) -> tuple[frozenset[str], frozenset[str]]:
    """The words of a tool's own name, and those of its description (for `partial_score`)."""
    return frozenset(tokens(tool.tool)), frozenset(tokens(tool.description))


def partial_score(words: tuple[frozenset[str], frozenset[str]], wanted: Iterable[str]) -> int:
    """How well a tool's words (`tool_words`: of its own name, of its description) hold the
    `wanted` words partly (`holds`): a word of its own name counts twice."""
    named, described = words
    return sum(2 if holds(named, w) else 1 if holds(described, w) else 0 for w in wanted)


def holds(words: frozenset[str], wanted: str) -> bool:
    """Whether a word begins with `wanted`, holds it when it has four letters or more
    (`budgetplan`, `todoist`), or is a word of four letters or more that `wanted` begins with
    (`note` for `notebook`)."""
    return any(
        word.startswith(wanted)
        or (len(wanted) >= 4 and wanted in word)
        or (len(word) >= 4 and wanted.startswith(word))
        for word in words
    )
