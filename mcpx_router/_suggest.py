"""Published names close to a name the model called that is not published (pure, no I/O).

Built once per catalogue version; a lookup costs microseconds, not a scan of every name. The
suggestions come in this order:

1. the same name but for case and separators (`X__Echo`, `x_echo`, `x-echo`), also after a prefix
   the model added (`functions.x__echo`);
2. when the name is a tool's own name without its peer (`echo`): every published name of a tool
   so named;
3. names one edit away (a letter added, dropped, changed or two swapped), ignoring case;
4. only when those give none, and a part after a separator is a tool's own name, or the last
   part is one edit from one (`wrongpeer__echo`, `ech`): every published name of a tool so named;
5. only when those give none: the (at most three) names most alike by `difflib`'s ratio (at
   least 0.6), scored exactly on the few names that share the most rare letter trigrams with it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable
from difflib import SequenceMatcher

__all__ = ["NameSuggester"]

MOST = 10
"""The most names suggested when that many are equally evident (the tool named by several peers)."""
FEW = 3
"""How many alike names are suggested otherwise."""
_LONGEST = 128
"""Only this many characters of a called name are considered (published names have at most 64)."""
_RAREST = 10
"""How many of a called name's rarest trigrams are looked up to find names alike it."""
_CANDIDATES = 10
"""How many names sharing the most of them are scored exactly."""
_CUTOFF = 0.6
_SEPARATORS = re.compile(r"[_\-.:/ \t\n\r]+")
_DROP_SEPARATORS = str.maketrans("", "", "_-.:/ \t\n\r")


def _squash(text: str) -> str:
    """`text` without case or separators: `X__Echo`, `x_echo` and `x.echo` are all `xecho`."""
    return text.casefold().translate(_DROP_SEPARATORS)


def _grams(text: str) -> set[str]:
    padded = f"\x00{text}\x00"
    return set(map("".join, zip(padded, padded[1:], padded[2:], strict=False)))


class _Keys:
    """Strings with a trigram index: those one edit from a query, and those most alike it.

    The strings are numbered shortest first, so that each trigram's posting (the numbers of the
    strings holding it, ascending) is also ordered by length, and the strings of a range of
    lengths are a slice of it.
    """

    def __init__(self, keys: Iterable[str]) -> None:
        listed = list(keys)
        order = sorted(range(len(listed)), key=lambda i: len(listed[i]))
        self.keys = [listed[i] for i in order]
        self.origin = order
        """The index, in the strings as given, of each string as numbered here."""
        self._lengths = [len(key) for key in self.keys]
        self.grams: dict[str, list[int]] = {}
        grams = self.grams
        for number, key in enumerate(self.keys):
            for gram in _grams(key):
                posting = grams.get(gram)
                if posting is None:
                    grams[gram] = [number]
                else:
                    posting.append(number)

    def _range(self, shortest: int, longest: int) -> tuple[int, int]:
        """The numbers of the strings whose length is within [shortest, longest]."""
        return bisect_left(self._lengths, shortest), bisect_right(self._lengths, longest)

    def _postings(self, query: str, low: int, high: int) -> tuple[int, list[list[int]]]:
        """How many of the query's trigrams no string holds, and the postings of the others
        within numbers [low, high), the shortest first."""
        grams = _grams(query)
        found: list[list[int]] = []
        for gram in grams:
            posting = self.grams.get(gram)
            if posting is not None:
                part = posting[bisect_left(posting, low) : bisect_left(posting, high)]
                if part:
                    found.append(part)
        found.sort(key=len)
        return len(grams) - len(found), found

    def near(self, query: str) -> list[int]:
        """The strings one edit from `query` (their indexes as given).

        One edit takes at most four of a word's trigrams away (a swap of two letters), so such a
        string shares all but four of the query's trigrams: it is in all but four of the postings
        of the query's rarest trigrams, which (for strings of a length within one) are all that
        is read.
        """
        low, high = self._range(len(query) - 1, len(query) + 1)
        keys, origin = self.keys, self.origin
        if len(_grams(query)) <= 4:  # such a short string may share no trigram with its neighbours
            return sorted(origin[n] for n in range(low, high) if _one_apart(query, keys[n]))
        missing, postings = self._postings(query, low, high)
        if missing > 4:
            return []
        top = postings[:8]
        counts: Counter[int] = Counter()
        for posting in top:
            counts.update(posting)
        least = max(1, len(top) - 4 + missing)
        return sorted(origin[n] for n, c in counts.items() if c >= least and _one_apart(query, keys[n]))

    def alike(self, query: str) -> list[tuple[float, int]]:
        """`(-ratio, index as given)` of the strings most alike `query` by difflib's ratio (at least 0.6).

        Only the few strings sharing the most of the query's rarest trigrams are scored, among
        those whose length allows that ratio.
        """
        size = len(query)
        low, high = self._range(-(-3 * size // 7), 7 * size // 3)
        shared: Counter[int] = Counter()
        for posting in self._postings(query, low, high)[1][:_RAREST]:
            shared.update(posting)
        matcher = SequenceMatcher(None, b=query, autojunk=False)
        scored: list[tuple[float, int]] = []
        for n, _ in shared.most_common(_CANDIDATES):
            matcher.set_seq1(self.keys[n])
            if matcher.real_quick_ratio() >= _CUTOFF and matcher.quick_ratio() >= _CUTOFF:
                score = matcher.ratio()
                if score >= _CUTOFF:
                    scored.append((-score, self.origin[n]))
        return sorted(scored)


class NameSuggester:
    """Suggests published names for a name that is not published.

    Args:
        tools: `(public name, the tool's name on its peer)` for every published tool, in
            catalogue order.
    """

    def __init__(self, tools: Iterable[tuple[str, str]]) -> None:
        self.tools = list(tools)
        """The `(public name, tool name)` pairs indexed."""
        self._names: list[str] = []
        self._by_squashed: dict[str, list[int]] = {}
        self._by_tool: dict[str, list[int]] = {}
        """Per tool name (case-folded, and squashed), the names of the tools so named."""
        for index, (name, tool) in enumerate(self.tools):
            self._names.append(name)
            self._by_squashed.setdefault(_squash(name), []).append(index)
            for key in {tool.casefold(), _squash(tool)} - {""}:
                self._by_tool.setdefault(key, []).append(index)
        self._folded = _Keys(name.casefold() for name in self._names)
        self._tool_keys = list(self._by_tool)
        self._tools: _Keys | None = None
        """The tool names indexed, the first time a name is looked up among them."""

    def suggest(self, name: str) -> list[str]:
        """Published names the model may have meant by `name`, the likeliest first (maybe none)."""
        if not self._names or not name:
            return []
        query = name[:_LONGEST].casefold()
        parts = [query, *_suffixes(query)]
        strong: list[int] = []
        for part in parts:
            strong += self._by_squashed.get(_squash(part), ())
        strong += self._tool_named(query)
        strong += self._ranked(query, self._folded.near(query))
        if not strong:
            for part in parts[1:]:
                strong += self._tool_named(part)
        if not strong:
            if self._tools is None:
                self._tools = _Keys(self._tool_keys)
            for i in self._tools.near(_squash(parts[-1])):
                strong += self._by_tool[self._tool_keys[i]]
        if not strong:
            strong = [i for _, i in self._folded.alike(query)[:FEW]]
        chosen = list(dict.fromkeys(strong))
        return [self._names[i] for i in chosen[:MOST]]

    def _tool_named(self, part: str) -> list[int]:
        """The names of the tools whose own name is `part` (ignoring case, or also separators)."""
        return self._by_tool.get(part) or self._by_tool.get(_squash(part)) or []

    def _ranked(self, query: str, indexes: list[int]) -> list[int]:
        """`indexes` with the names most alike `query` first."""
        if len(indexes) <= 1:
            return indexes
        matcher = SequenceMatcher(None, b=query, autojunk=False)
        scores: dict[int, float] = {}
        for i in indexes:
            matcher.set_seq1(self._names[i].casefold())
            scores[i] = matcher.ratio()
        return sorted(indexes, key=lambda i: -scores[i])


def _suffixes(text: str) -> list[str]:
    """What follows each run of separators in `text` (a model's guess at a peer or namespace before it)."""
    return [text[m.end() :] for m in _SEPARATORS.finditer(text) if 0 < m.end() < len(text)]


def _one_apart(a: str, b: str) -> bool:
    """Whether one edit (a letter added, dropped, changed, or two adjacent swapped) turns a into b."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i, n = 0, min(len(a), len(b))
    while i < n and a[i] == b[i]:
        i += 1
    if len(a) > len(b):
        return a[i + 1 :] == b[i:]
    if len(a) < len(b):
        return a[i:] == b[i + 1 :]
    return a[i + 1 :] == b[i + 1 :] or (a[i + 2 :] == b[i + 2 :] and a[i : i + 2] == b[i : i + 2][::-1])
