"""Published names close to a name the model called that is not published (pure, no I/O).

Kept in parts, one per peer, so that a change of one peer's names costs that peer; a lookup costs
microseconds, not a scan of every name. The suggestions come in this order:

1. the same name but for case and separators (`X__Echo`, `x_echo`, `x-echo`), also after a prefix
   the model added (`functions.x__echo`);
2. when the name is a tool's own name without its peer (`echo`): every published name of a tool
   so named;
3. names one edit away (a letter added, dropped, changed or two swapped), ignoring case;
4. only when those give none, and a part after a separator is a tool's own name, or the last
   part is one edit from one (`wrongpeer__echo`, `ech`): every published name of a tool so named;
5. only when those give none: the (at most three) names most alike by `difflib`'s ratio (at
   least 0.6), scored exactly on the few names that share the most rare letter trigrams with it.
   Spelt alike is not meant alike (`save_note`, `notes__delete_note`): `UnknownNames` keeps of
   these only the tools whose words say what the name says (`model/_search_hints.meaningful`).
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from difflib import SequenceMatcher
from typing import Any

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
    """Strings with a trigram index, kept as strings come and go: those one edit from a query,
    and those most alike it.

    Each string has a number given by the caller. Each trigram's posting (the numbers of the
    strings holding it) is kept ordered by the strings' length, beside those lengths, so that the
    strings of a range of lengths are a slice of it; adding or removing a string touches only its
    own trigrams' postings.
    """

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._strings: dict[int, str] = {}
        self._grams: dict[str, tuple[list[int], list[int]]] = {}
        """Per trigram, the lengths of the strings holding it (ascending) and their numbers."""
        self._lengths: dict[int, list[int]] = {}
        self.add_all(enumerate(keys))

    def add(self, number: int, key: str) -> None:
        self._strings[number] = key
        size = len(key)
        self._lengths.setdefault(size, []).append(number)
        grams = self._grams
        for gram in _grams(key):
            posting = grams.get(gram)
            if posting is None:
                grams[gram] = ([size], [number])
            elif posting[0][-1] <= size:  # strings added shortest first only ever append
                posting[0].append(size)
                posting[1].append(number)
            else:
                at = bisect_right(posting[0], size)
                posting[0].insert(at, size)
                posting[1].insert(at, number)

    def add_all(self, keys: Iterable[tuple[int, str]]) -> None:
        """Add `(number, string)` pairs, the shortest first (cheapest when the index is empty)."""
        for number, key in sorted(keys, key=lambda item: len(item[1])):
            self.add(number, key)

    def remove(self, number: int) -> None:
        key = self._strings.pop(number)
        size = len(key)
        _discard(self._lengths, size, number)
        for gram in _grams(key):
            lengths, numbers = self._grams[gram]
            at = numbers.index(number, bisect_left(lengths, size), bisect_right(lengths, size))
            del lengths[at], numbers[at]
            if not numbers:
                del self._grams[gram]

    def _postings(self, query: str, shortest: int, longest: int) -> tuple[int, list[list[int]]]:
        """How many of the query's trigrams no string of a length within [shortest, longest]
        holds, and the postings of the others within those lengths, the shortest first."""
        grams = _grams(query)
        found: list[list[int]] = []
        for gram in grams:
            posting = self._grams.get(gram)
            if posting is not None:
                lengths = posting[0]
                part = posting[1][bisect_left(lengths, shortest) : bisect_right(lengths, longest)]
                if part:
                    found.append(part)
        found.sort(key=len)
        return len(grams) - len(found), found

    def near(self, query: str) -> list[int]:
        """The numbers of the strings one edit from `query`, ascending.

        One edit takes at most four of a word's trigrams away (a swap of two letters), so such a
        string shares all but four of the query's trigrams: it is in all but four of the postings
        of the query's rarest trigrams, which (for strings of a length within one) are all that
        is read.
        """
        size, strings = len(query), self._strings
        if len(_grams(query)) <= 4:  # such a short string may share no trigram with its neighbours
            return sorted(
                n
                for length in (size - 1, size, size + 1)
                for n in self._lengths.get(length, ())
                if _one_apart(query, strings[n])
            )
        missing, postings = self._postings(query, size - 1, size + 1)
        if missing > 4:
            return []
        top = postings[:8]
        counts: Counter[int] = Counter()
        for posting in top:
            counts.update(posting)
        least = max(1, len(top) - 4 + missing)
        return sorted(n for n, c in counts.items() if c >= least and _one_apart(query, strings[n]))

    def alike(self, query: str, order: Callable[[int], Any] = int) -> list[tuple[float, int]]:
        """`(-ratio, number)` of the strings most alike `query` by difflib's ratio (at least 0.6),
        the best first, ties in `order` of their numbers.

        Only the few strings sharing the most of the query's rarest trigrams are scored, among
        those whose length allows that ratio (those sharing as many, in `order`).
        """
        size = len(query)
        shared: Counter[int] = Counter()
        for posting in self._postings(query, -(-3 * size // 7), 7 * size // 3)[1][:_RAREST]:
            shared.update(posting)
        candidates = list(shared)
        if len(candidates) > _CANDIDATES:  # the most shared; of those sharing as many, the first in `order`
            floor = heapq.nlargest(_CANDIDATES, shared.values())[-1]
            above = [n for n in candidates if shared[n] > floor]
            tied = [n for n in candidates if shared[n] == floor]
            candidates = above + heapq.nsmallest(_CANDIDATES - len(above), tied, key=order)
        matcher = SequenceMatcher(None, b=query, autojunk=False)
        scored: list[tuple[float, int]] = []
        for n in candidates:
            matcher.set_seq1(self._strings[n])
            if matcher.real_quick_ratio() >= _CUTOFF and matcher.quick_ratio() >= _CUTOFF:
                score = matcher.ratio()
                if score >= _CUTOFF:
                    scored.append((-score, n))
        return sorted(scored, key=lambda s: (s[0], order(s[1])))


def _discard(lists: dict[int, list[int]], key: int, number: int) -> None:
    numbers = lists[key]
    numbers.remove(number)
    if not numbers:
        del lists[key]


class NameSuggester:
    """Suggests published names for a name that is not published.

    The names are held in parts (the catalogue keeps one per peer): `set_part` brings one part up
    to date at the cost of that part, and the suggestions are those a suggester built afresh from
    all parts, in their order, would make.

    Args:
        tools: `(public name, the tool's name on its peer)` for every published tool, in
            catalogue order (one part).
    """

    def __init__(self, tools: Iterable[tuple[str, str]] = ()) -> None:
        self._next = self._next_rank = self._next_key = 0
        self._entries: dict[int, tuple[str, str]] = {}
        """Each name's `(public name, tool name)`, by the number it was given when added."""
        self._parts: dict[Hashable, list[int]] = {}
        """Each part's names, in order."""
        self._rank: dict[Hashable, int] = {}
        self._place: dict[int, tuple[int, int]] = {}
        """Where each name is: its part's rank and its position there (the catalogue order)."""
        self._by_squashed: dict[str, list[int]] = {}
        self._by_tool: dict[str, list[int]] = {}
        """Per tool name (case-folded, and squashed), the names of the tools so named."""
        self._folded = _Keys()
        self._tool_numbers: dict[str, int] = {}
        """The number of each tool name in `_tools` (and the name of each number below)."""
        self._tool_keys: dict[int, str] = {}
        self._tools: _Keys | None = None
        """The tool names indexed, from the first time a name is looked up among them."""
        listed = list(tools)
        if listed:
            self.set_parts([(None, listed)])

    def set_part(self, part: Hashable, tools: Iterable[tuple[str, str]]) -> None:
        """Make `part` hold exactly `tools` (in this order); a new part comes after the others."""
        self.set_parts([(part, tools)])

    def set_parts(self, parts: Iterable[tuple[Hashable, Iterable[tuple[str, str]]]]) -> None:
        """`set_part` for each `(part, tools)`; their new names indexed together."""
        added: list[tuple[int, str]] = []
        for part, tools in parts:
            self._set_part(part, tools, added)
        self._folded.add_all(added)

    def _set_part(
        self, part: Hashable, tools: Iterable[tuple[str, str]], added: list[tuple[int, str]]
    ) -> None:
        old: dict[tuple[str, str], list[int]] = {}
        for number in self._parts.get(part, ()):
            old.setdefault(self._entries[number], []).append(number)
        numbers: list[int] = []
        for pair in tools:
            kept = old.get(pair)
            if kept:
                numbers.append(kept.pop(0))
            else:
                numbers.append(self._add(pair))
                added.append((numbers[-1], pair[0].casefold()))
        for left in old.values():
            for number in left:
                self._remove(number)
        if part not in self._parts:
            self._rank[part] = self._next_rank
            self._next_rank += 1
        self._parts[part] = numbers
        rank, place = self._rank[part], self._place
        for position, number in enumerate(numbers):
            place[number] = (rank, position)

    def drop_part(self, part: Hashable) -> None:
        """Forget `part` and its names (nothing if there is no such part)."""
        for number in self._parts.pop(part, ()):
            self._remove(number)
        self._rank.pop(part, None)

    def order(self, parts: Iterable[Hashable]) -> None:
        """Make the parts these, in this order: parts not among them are dropped, new ones empty."""
        ordered = list(parts)
        if ordered == list(self._parts):
            return
        for gone in self._parts.keys() - set(ordered):
            self.drop_part(gone)
        self._parts = {part: self._parts.get(part, []) for part in ordered}
        self._rank = {part: rank for rank, part in enumerate(ordered)}
        self._next_rank = len(ordered)
        for part, numbers in self._parts.items():
            rank = self._rank[part]
            for position, number in enumerate(numbers):
                self._place[number] = (rank, position)

    def _add(self, pair: tuple[str, str]) -> int:
        number = self._next
        self._next += 1
        self._entries[number] = pair
        name, tool = pair
        self._by_squashed.setdefault(_squash(name), []).append(number)
        for key in {tool.casefold(), _squash(tool)} - {""}:
            named = self._by_tool.get(key)
            if named is None:
                self._by_tool[key] = [number]
                key_number = self._tool_numbers[key] = self._next_key
                self._next_key = key_number + 1
                self._tool_keys[key_number] = key
                if self._tools is not None:
                    self._tools.add(key_number, key)
            else:
                named.append(number)
        return number

    def _remove(self, number: int) -> None:
        name, tool = self._entries.pop(number)
        del self._place[number]
        _discard_named(self._by_squashed, _squash(name), number)
        for key in {tool.casefold(), _squash(tool)} - {""}:
            if _discard_named(self._by_tool, key, number):
                key_number = self._tool_numbers.pop(key)
                del self._tool_keys[key_number]
                if self._tools is not None:
                    self._tools.remove(key_number)
        self._folded.remove(number)

    def suggest(self, name: str) -> list[str]:
        """Published names the model may have meant by `name`, the likeliest first (maybe none)."""
        return self.graded(name)[0]

    def graded(self, name: str) -> tuple[list[str], bool]:
        """`suggest(name)`, and whether the names are evident (steps 1 to 4 of the module's
        docstring) rather than only spelt alike (step 5)."""
        if not self._entries or not name:
            return [], True
        query = name[:_LONGEST].casefold()
        parts = [query, *_suffixes(query)]
        strong: list[int] = []
        for part in parts:
            strong += self._in_order(self._by_squashed.get(_squash(part), ()))
        strong += self._tool_named(query)
        strong += self._ranked(query, self._in_order(self._folded.near(query)))
        if not strong:
            for part in parts[1:]:
                strong += self._tool_named(part)
        if not strong:
            if self._tools is None:
                self._tools = _Keys()
                for key, number in self._tool_numbers.items():
                    self._tools.add(number, key)
            for number in self._tools.near(_squash(parts[-1])):
                strong += self._by_tool[self._tool_keys[number]]
            strong = self._in_order(strong)
        evident = bool(strong)
        if not strong:
            strong = [n for _, n in self._folded.alike(query, self._place.__getitem__)[:FEW]]
        chosen = list(dict.fromkeys(strong))
        return [self._entries[n][0] for n in chosen[:MOST]], evident

    def _in_order(self, numbers: Iterable[int]) -> list[int]:
        """The names `numbers` in catalogue order."""
        return sorted(numbers, key=self._place.__getitem__)

    def _tool_named(self, part: str) -> list[int]:
        """The names of the tools whose own name is `part` (ignoring case, or also separators)."""
        return self._in_order(self._by_tool.get(part) or self._by_tool.get(_squash(part)) or ())

    def _ranked(self, query: str, numbers: list[int]) -> list[int]:
        """`numbers` with the names most alike `query` first."""
        if len(numbers) <= 1:
            return numbers
        matcher = SequenceMatcher(None, b=query, autojunk=False)
        scores: dict[int, float] = {}
        for n in numbers:
            matcher.set_seq1(self._entries[n][0].casefold())
            scores[n] = matcher.ratio()
        return sorted(numbers, key=lambda n: -scores[n])


def _discard_named(named: dict[str, list[int]], key: str, number: int) -> bool:
    """Take `number` from `named[key]`; whether that left the key without names (and removed it)."""
    numbers = named[key]
    numbers.remove(number)
    if numbers:
        return False
    del named[key]
    return True


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
