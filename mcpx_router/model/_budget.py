"""Keeping a request within the tool budget (pure functions, no I/O).

An API request may carry at most 128 tools, and some deployments reject long descriptions.
These helpers filter tools by name patterns, rank them by lexical relevance to the conversation
(BM25 over names, descriptions and parameters: no model to download), and cut
descriptions to a length. Words are compared by their stems (`_stemming`, Snowball's stemmers:
"commits" finds "commit"), in English unless another language is named.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, Final

from ._stemming import DEFAULT_LANGUAGE, stemmer

__all__ = [
    "COPY_SHARE",
    "MAX_TOOLS_PER_REQUEST",
    "PARAMETER_WEIGHT",
    "IndexPart",
    "LexicalIndex",
    "blend",
    "conversation_text",
    "matches",
    "parameter_text",
    "query_text",
    "rank",
    "rank_parts",
    "rank_scores",
    "score_parts",
    "shorten",
    "spread_copies",
    "terms",
    "tool_text",
]

MAX_TOOLS_PER_REQUEST: Final = 128
"""The most tools one OpenAI request may carry."""

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_RUN = re.compile(r"[^\W_]+")
_K1, _B = 1.2, 0.75
# Words that say nothing about which tool fits; left in, "the" in a query would favour any tool
# whose description happens to use it.
_STOP = frozenset(
    "a an and are as at be by can could do does for from how i in is it me my of on or please "
    "should that the this to was what when where which who why will with would you your".split()
)


def matches(name: str, include: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    """Whether a tool name passes glob `include` patterns (None: all) and no `exclude` pattern."""
    if include is not None and not any(fnmatchcase(name, p) for p in include):
        return False
    return not (exclude and any(fnmatchcase(name, p) for p in exclude))


def tokens(text: str) -> list[str]:
    """Lower-case words of `text`, splitting snake_case, kebab-case, dotted and camelCase names
    (letters of any script: "Änderungen" is one word)."""
    if text.isascii():
        return [w.lower() for w in _WORD.findall(text)]
    words: list[str] = []
    for run in _RUN.findall(text):
        if run.isascii():
            words += [w.lower() for w in _WORD.findall(run)]
        else:
            words += _split_run(run)
    return words


def _split_run(run: str) -> list[str]:
    """A run of letters and digits cut where digits start or end and where camelCase turns."""
    words: list[str] = []
    start = 0
    for i in range(1, len(run)):
        before, here = run[i - 1], run[i]
        if (
            before.isdigit() != here.isdigit()
            or (before.islower() and here.isupper())
            or (before.isupper() and here.isupper() and i + 1 < len(run) and run[i + 1].islower())
        ):
            words.append(run[start:i].lower())
            start = i
    words.append(run[start:].lower())
    return words


def terms(text: str, language: str | None = DEFAULT_LANGUAGE) -> list[str]:
    """The words of `text` that rank: no stop words, each cut to its stem in `language` (a name
    `check_language` accepted; None: the words as they are)."""
    if language is None:
        return [w for w in tokens(text) if w not in _STOP]
    stems = stemmer(language)
    return [stems.get(w) or stems.of(w) for w in tokens(text) if w not in _STOP]


def tool_text(name: str, description: str, parameters: Mapping[str, Any]) -> str:
    """What BM25 reads of a tool at full weight: its name twice (the strongest hint of what it
    does), its description and its parameters' names (`parameter_text`: their descriptions)."""
    properties = parameters.get("properties")
    names = " ".join(str(key) for key in properties) if isinstance(properties, Mapping) else ""
    return f"{name} {name} {description} {names}"


def parameter_text(parameters: Mapping[str, Any]) -> str:
    """The descriptions of a tool's parameters, which BM25 reads at `PARAMETER_WEIGHT`."""
    properties = parameters.get("properties")
    about = (
        schema.get("description") if isinstance(schema, Mapping) else None
        for schema in (properties.values() if isinstance(properties, Mapping) else ())
    )
    return " ".join(text for text in about if isinstance(text, str))


PARAMETER_WEIGHT = 0.5
"""How much a word of a parameter's description counts beside one of the tool's own text. Nor do
these words lengthen the tool's text for BM25 (as fields of BM25F): a tool whose parameters are
described at length ("Accepts: ISO 8601 format (e.g., ...)") is not diluted by them."""


# A URL or path ends before the punctuation that follows it in a sentence.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\S*[^\s.,;:!?'\")]")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[^\s,;:'\"()]*[^\s.,;:!?'\"()]")


def query_text(query: str) -> str:
    """`query` with each URL in it read as the word "url", and each file path that starts at the
    root, the home or the current folder (`/srv/app`, `~/notes.txt`, `./src`) as the word "path".

    They are values the user hands to a tool, and their own words ("blog" of `/home/ana/blog`,
    "pricing" of `https://example.com/pricing`) say nothing of which tool takes them, while tools
    that take one name it: a parameter `url`, `path`, `repo_path`.
    """
    return _PATH.sub(" path ", _URL.sub(" url ", query))


class IndexPart:
    """Some documents tokenised once: one peer's tools, so that a change re-reads only that peer."""

    __slots__ = ("docs", "language", "lengths", "postings", "total")

    def __init__(
        self,
        documents: Iterable[str],
        language: str | None = DEFAULT_LANGUAGE,
        extras: Iterable[str] | None = None,
    ) -> None:
        self.language = language
        self.docs: list[Counter[str]] = [Counter(terms(d, language)) for d in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        # Each document's extra text (its parameters' descriptions) adds its words at
        # PARAMETER_WEIGHT, and nothing to the document's length.
        for doc, extra in zip(self.docs, extras if extras is not None else (), strict=False):
            for term, count in Counter(terms(extra, language)).items():
                doc[term] += PARAMETER_WEIGHT * count  # type: ignore[assignment]
        self.total = sum(self.lengths)
        # Which documents hold each term: scoring touches only those, not the whole catalogue.
        self.postings: dict[str, list[int]] = {}
        for i, doc in enumerate(self.docs):
            for term in doc:
                self.postings.setdefault(term, []).append(i)


def score_parts(parts: Sequence[IndexPart], query: str) -> list[float]:
    """The BM25 score of each document of `parts` (numbered across them, in order) for `query`;
    0.0 for a document that shares no word with it. The parts share one language (the first's)."""
    n = sum(len(part.docs) for part in parts)
    average = (sum(part.total for part in parts) / n if n else 0.0) or 1.0
    words = set(terms(query_text(query), parts[0].language if parts else None))
    counts = {term: sum(len(part.postings.get(term, ())) for part in parts) for term in words}
    scores = [0.0] * n
    offset = 0
    for part in parts:
        for term in words:
            hits = part.postings.get(term)
            if not hits:
                continue
            idf = math.log(1 + (n - counts[term] + 0.5) / (counts[term] + 0.5))
            for i in hits:
                tf = part.docs[i][term]
                norm = _K1 * (1 - _B + _B * part.lengths[i] / average)
                scores[offset + i] += idf * tf * (_K1 + 1) / (tf + norm)
        offset += len(part.docs)
    return scores


def rank_parts(parts: Sequence[IndexPart], query: str) -> list[int]:
    """Indices of the documents of `parts` (numbered across them, in order), most relevant to
    `query` first by BM25 over all of them (ties keep their order)."""
    return rank_scores(score_parts(parts, query), None)[0]


def rank_scores(scores: Sequence[float], copies: Sequence[int] | None) -> tuple[list[int], list[float]]:
    """The documents' indices most relevant first (ties in their order) and their scores in that
    order, copies spread apart when `copies` is given (`spread_copies`)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    ordered = [scores[i] for i in order]
    return (order, ordered) if copies is None else spread_copies(order, ordered, copies)


COPY_SHARE: Final = 0.3
"""How far a copy of a tool ranked above sinks another: this share of the first place's score."""


def spread_copies(
    order: Sequence[int], ordered: Sequence[float], copies: Sequence[int], share: float = COPY_SHARE
) -> tuple[list[int], list[float]]:
    """A ranking that gives its first places to different tools before copies of one.

    `order` holds documents most relevant first and `ordered` their scores in that order;
    `copies[i]` names document `i`'s definition by a number from 0 (documents with the same
    number are copies: one tool that several peers list alike). Each document with a positive
    score ranks as if its score were lower by `share` of the first score for every copy of it
    above, but never below the documents that score nothing (0 or less), which keep their places
    after it: a second copy ranks below the other tools nearly as relevant, not beside the first,
    and above those not relevant at all. Returns both lists in the new order (the scores
    themselves unchanged; ties keep their order). A first score that is not positive changes
    nothing: no document is relevant."""
    top = ordered[0] if ordered else 0.0
    step = share * top if math.isfinite(top) and top > 0 else 0.0
    if step == 0.0:
        return list(order), list(ordered)
    seen = [0] * (max(copies, default=0) + 1)  # copies of each definition placed so far
    lowered: list[float] = []  # each relevant place's score, lowered and negated (a sort key)
    moves = False
    for i, score in zip(order, ordered, strict=True):
        if not score > 0:
            break  # the rest score nothing: they keep their places
        definition = copies[i]
        before = seen[definition]
        seen[definition] = before + 1
        if before:
            moves = True
            lowered.append(min(step * before - score, 0.0))
        else:
            lowered.append(-score)
    if not moves:
        return list(order), list(ordered)
    moved = sorted(range(len(lowered)), key=lowered.__getitem__)
    rest = len(lowered)
    return [order[p] for p in moved] + list(order[rest:]), [ordered[p] for p in moved] + list(ordered[rest:])


def blend(lexical: Sequence[float], semantic: Sequence[float], weight: float) -> list[float]:
    """One score per document from its BM25 score and its embedding similarity, each scaled to
    [0, 1] over the documents (min to max), mixed as `(1 - weight) * lexical + weight * semantic`.

    A list whose scores are all equal (no word of the query in any document) scales to zeros, so it
    neither helps nor hurts; non-finite scores count as the lowest.
    """
    if len(lexical) != len(semantic):
        raise ValueError(f"{len(lexical)} lexical scores but {len(semantic)} semantic ones")
    low, high = _scaled(lexical), _scaled(semantic)
    return [(1 - weight) * a + weight * b for a, b in zip(low, high, strict=True)]


def _scaled(scores: Sequence[float]) -> list[float]:
    finite = [s for s in scores if math.isfinite(s)]
    if not finite:
        return [0.0] * len(scores)
    bottom, top = min(finite), max(finite)
    span = top - bottom
    if span <= 0:
        return [0.0] * len(scores)
    return [(s - bottom) / span if math.isfinite(s) else 0.0 for s in scores]


class LexicalIndex:
    """Documents tokenised once, ranked against many queries with BM25."""

    def __init__(self, documents: Sequence[str], language: str | None = DEFAULT_LANGUAGE) -> None:
        self._part = IndexPart(documents, language)

    def rank(self, query: str) -> list[int]:
        """Indices of the documents, most relevant to `query` first (ties keep their order)."""
        return rank_parts((self._part,), query)


def rank(documents: Sequence[str], query: str, language: str | None = DEFAULT_LANGUAGE) -> list[int]:
    """Indices of `documents`, most relevant to `query` first (BM25; ties keep their order)."""
    return LexicalIndex(documents, language).rank(query)


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
