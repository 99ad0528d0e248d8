"""Suggesting groups of equivalent tools across peers from their embeddings (pure, no I/O).

Two tools of different peers whose vectors are close probably do the same thing. The
suggestions are for the host to accept or not: each carries its score, the least similarity
between two of its members, so a threshold keeps only the groups it trusts. They come in the
form the groups option takes as aliases, `{group_name: ["peer/tool", ...]}` (`as_aliases`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul

__all__ = ["GroupSuggestion", "as_aliases", "group_name", "suggest_groups"]


@dataclass(frozen=True, slots=True)
class GroupSuggestion:
    """Tools of different peers that look equivalent."""

    name: str
    """A plain legal function name (`^[a-zA-Z0-9_-]{1,64}$`, no `__`) for the group."""
    members: tuple[str, ...]
    """`"peer/tool"` for each member (the tool as its peer names it), one per peer."""
    score: float
    """The least cosine similarity between two members, in [-1, 1]: threshold on it."""


_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]+")


def group_name(tool_names: Sequence[str], taken: frozenset[str] | set[str] = frozenset()) -> str:
    """A legal name for a group of tools: their most common name (the first on a tie), with
    illegal characters and `__` replaced by `_`, cut to fit, and made unique against `taken`."""
    counts = Counter(tool_names)
    best = max(tool_names, key=lambda n: counts[n]) if tool_names else ""
    base = re.sub(r"_{2,}", "_", _ILLEGAL.sub("_", best)).strip("_") or "group"
    base = base[:60].rstrip("_") or "group"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def suggest_groups(
    tools: Sequence[tuple[str, str, Sequence[float]]], *, min_score: float = 0.5
) -> list[GroupSuggestion]:
    """Groups of tools of different peers whose vectors are all within `min_score` of each other.

    Args:
        tools: `(peer, tool, vector)` for each tool; vectors of one length (scaled here).
        min_score: The least cosine similarity between any two members of a group.

    Returns:
        The suggestions, best score first; a tool is in at most one, a group holds at most one
        tool per peer (complete linkage: pairs are merged most similar first, and two groups
        join only when every pair across them is similar enough).
    """
    vectors = [_unit(vector) for _, _, vector in tools]
    n = len(tools)
    similar: dict[tuple[int, int], float] = {}
    for i in range(n):
        for j in range(i + 1, n):
            if tools[i][0] == tools[j][0] or len(vectors[i]) != len(vectors[j]):
                continue
            score = sum(map(mul, vectors[i], vectors[j]))
            if score >= min_score:
                similar[i, j] = score
    owner = list(range(n))
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    for (i, j), _ in sorted(similar.items(), key=lambda item: (-item[1], item[0])):
        a, b = owner[i], owner[j]
        if a == b:
            continue
        left, right = members[a], members[b]
        if {tools[x][0] for x in left} & {tools[y][0] for y in right}:
            continue  # one tool per peer
        if not all((min(x, y), max(x, y)) in similar for x in left for y in right):
            continue
        left.extend(right)
        for y in right:
            owner[y] = a
        del members[b]
    out: list[GroupSuggestion] = []
    taken: set[str] = set()
    groups = [sorted(group) for group in members.values() if len(group) > 1]
    scored = [(min(similar[x, y] for k, x in enumerate(g) for y in g[k + 1 :]), g) for g in groups]
    for score, group in sorted(scored, key=lambda item: (-item[0], item[1])):
        name = group_name([tools[i][1] for i in group], taken)
        taken.add(name)
        out.append(GroupSuggestion(name, tuple(f"{tools[i][0]}/{tools[i][1]}" for i in group), score))
    return out


def as_aliases(suggestions: Sequence[GroupSuggestion], *, min_score: float = -1.0) -> dict[str, list[str]]:
    """The suggestions scoring at least `min_score`, as the groups option takes them."""
    return {s.name: list(s.members) for s in suggestions if s.score >= min_score}


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(x) for x in vector)
    norm = math.sqrt(sum(x * x for x in values))
    return values if norm == 0 or not math.isfinite(norm) else tuple(x / norm for x in values)
