"""Keeping a request within the tool budget (pure functions, no I/O).

An API request may carry at most 128 tools, and some deployments reject long descriptions.
These helpers filter tools by name patterns, rank them by lexical relevance to the conversation
(BM25 over names, descriptions and parameter names: no model to download), and cut
descriptions to a length.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, Final

__all__ = ["MAX_TOOLS_PER_REQUEST", "conversation_text", "matches", "rank", "shorten"]

MAX_TOOLS_PER_REQUEST: Final = 128
"""The most tools one OpenAI request may carry."""

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_K1, _B = 1.2, 0.75


def matches(name: str, include: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    """Whether a tool name passes glob `include` patterns (None: all) and no `exclude` pattern."""
    if include is not None and not any(fnmatchcase(name, p) for p in include):
        return False
    return not (exclude and any(fnmatchcase(name, p) for p in exclude))


def tokens(text: str) -> list[str]:
    """Lower-case words of `text`, splitting snake_case, kebab-case, dotted and camelCase names."""
    return [w.lower() for w in _WORD.findall(text)]


def tool_text(name: str, description: str, parameters: Mapping[str, Any]) -> str:
    properties = parameters.get("properties")
    names = " ".join(properties) if isinstance(properties, Mapping) else ""
    # The name counts twice: it is the strongest hint of what a tool does.
    return f"{name} {name} {description} {names}"


def rank(documents: Sequence[str], query: str) -> list[int]:
    """Indices of `documents`, most relevant to `query` first (BM25; ties keep their order)."""
    docs = [Counter(tokens(d)) for d in documents]
    terms = set(tokens(query))
    if not docs or not terms:
        return list(range(len(documents)))
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / len(docs) or 1.0
    frequency = {t: sum(1 for d in docs if t in d) for t in terms}
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}

    def score(i: int) -> float:
        d, size = docs[i], lengths[i]
        return sum(
            idf[t] * d[t] * (_K1 + 1) / (d[t] + _K1 * (1 - _B + _B * size / average)) for t in terms if t in d
        )

    scores = [score(i) for i in range(len(docs))]
    return sorted(range(len(docs)), key=lambda i: -scores[i])


def conversation_text(messages: Iterable[Any], *, last: int = 3) -> str:
    """The text of the last few user messages (Chat or Responses input items, dicts or SDK objects)."""
    texts: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)
        if role != "user":
            continue
        content = (
            message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
        )
        texts.append(_content_text(content))
    return " ".join(texts[-last:])


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        parts = []
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            if isinstance(text, str):
                parts.append(text)
        return " ".join(parts)
    return ""


def shorten(description: str, limit: int | None, suffix: str = "") -> str:
    """Cut `description` to `limit` characters, ending in `suffix` (kept whole) after a `…`."""
    if limit is None or len(description) + len(suffix) <= limit:
        return description + suffix
    room = max(0, limit - len(suffix) - 1)
    return description[:room].rstrip() + "…" + suffix
