"""Fusing two rankings of the same tools: the lexical (BM25) scores and the embedding similarities.

Two ways, both measured by `python -m benchmarks evals --recall --embedder ...` (docs/evals.md):

- `blend`: each list of scores scaled to [0, 1] (min to max), mixed as
  `(1 - weight) * lexical + weight * semantic`;
- `reciprocal_rank`: reciprocal-rank fusion, `(1 - weight) / (k + lexical rank) + weight / (k +
  semantic rank)`, where a tool that shares no word with the query has no lexical rank (its term
  is 0) and tied scores share a rank.

With numpy (the `local-embeddings` extra) both run as array arithmetic and return an array;
without it, as Python lists. Non-finite scores count as the lowest. `spread_order` is
`model._budget.spread_copies` over such arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from ..model._budget import COPY_SHARE

__all__ = ["FUSIONS", "Fusion", "blend", "fuse", "numpy_or_none", "reciprocal_rank", "spread_order"]

Fusion: TypeAlias = Literal["blend", "rrf"]
FUSIONS: tuple[Fusion, ...] = ("blend", "rrf")
RRF_K = 60
"""The constant of reciprocal-rank fusion (the usual one: the first ranks weigh, not only the first)."""


_NUMPY: list[Any] = []


def numpy_or_none() -> Any:
    """The numpy module if it is installed (imported on first need, never by `import mcpx_router`)."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:  # pragma: no cover - numpy is in the dev extra
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
    return _NUMPY[0]


def fuse(lexical: Sequence[float], semantic: Any, weight: float, method: Fusion = "blend") -> Any:
    """One score per tool from its BM25 score and its embedding similarity (higher: more relevant)."""
    if len(lexical) != len(semantic):
        raise ValueError(f"{len(lexical)} lexical scores but {len(semantic)} semantic ones")
    if method == "blend":
        return blend(lexical, semantic, weight)
    if method == "rrf":
        return reciprocal_rank(lexical, semantic, weight)
    raise ValueError(f"unknown fusion {method!r}; one of {', '.join(FUSIONS)}")


def blend(lexical: Sequence[float], semantic: Any, weight: float) -> Any:
    """`(1 - weight) * lexical + weight * semantic`, each scaled to [0, 1] over the tools. A list
    whose scores are all equal (no word of the query in any tool) scales to zeros."""
    np = numpy_or_none()
    if np is None:
        low, high = _scaled(lexical), _scaled(semantic)
        return [(1 - weight) * a + weight * b for a, b in zip(low, high, strict=True)]
    return (1 - weight) * _scaled_array(np, lexical) + weight * _scaled_array(np, semantic)


def reciprocal_rank(lexical: Sequence[float], semantic: Any, weight: float, k: int = RRF_K) -> Any:
    """Reciprocal-rank fusion: `(1 - weight) / (k + lexical rank) + weight / (k + semantic rank)`,
    ranks from 1; no lexical term for a tool whose BM25 score is 0 (no word in common)."""
    np = numpy_or_none()
    if np is None:
        low = [
            (1 - weight) / (k + r) if s > 0 else 0.0 for s, r in zip(lexical, _ranks(lexical), strict=True)
        ]
        high = [weight / (k + r) for r in _ranks(semantic)]
        return [a + b for a, b in zip(low, high, strict=True)]
    lex = _finite(np, lexical)
    sem = _finite(np, semantic)
    low = np.where(lex > 0, (1 - weight) / (k + _ranks_array(np, lex)), 0.0)
    return low + weight / (k + _ranks_array(np, sem))


def spread_order(np: Any, ranked: Any, ordered: Any, copies: Any, share: float = COPY_SHARE) -> Any:
    """`spread_copies` with numpy: `ranked` (tool indices, most relevant first), `ordered` (their
    finite scores in that order) and `copies` (each tool's definition) as arrays; returns the new
    order of the tool indices (the same places as `spread_copies` gives, ties included)."""
    top = float(ordered[0]) if len(ordered) else 0.0
    if not (math.isfinite(top) and top > 0):
        return ranked
    relevant = int(np.argmin(ordered > 0)) if not ordered[-1] > 0 else len(ordered)
    definitions = copies[ranked[:relevant]]
    by_definition = np.argsort(definitions, kind="stable")  # each definition's places, in order
    grouped = definitions[by_definition]
    starts = np.ones(len(grouped), dtype=bool)
    starts[1:] = grouped[1:] != grouped[:-1]
    places = np.arange(len(grouped))
    first = np.maximum.accumulate(np.where(starts, places, 0))
    before = np.empty(len(grouped), dtype=np.int64)
    before[by_definition] = places - first  # copies of the same tool above each place
    if not before.any():
        return ranked
    keys = np.minimum(before * (share * top) - ordered[:relevant], 0.0)
    return np.concatenate((ranked[:relevant][np.argsort(keys, kind="stable")], ranked[relevant:]))


def _finite(np: Any, scores: Any) -> Any:
    array = np.asarray(scores, dtype=np.float64)
    return np.where(np.isfinite(array), array, -np.inf)


def _ranks_array(np: Any, scores: Any) -> Any:
    """1 + how many scores are strictly higher: tied scores share a rank."""
    descending = np.sort(-scores)
    return np.searchsorted(descending, -scores, side="left") + 1.0


def _ranks(scores: Sequence[float]) -> list[float]:
    values = [s if math.isfinite(s) else -math.inf for s in scores]
    order = sorted(values, reverse=True)
    first: dict[float, int] = {}
    for i, value in enumerate(order):
        first.setdefault(value, i + 1)
    return [float(first[v]) for v in values]


def _scaled_array(np: Any, scores: Any) -> Any:
    array = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(array)
    if not finite.any():
        return np.zeros(len(array))
    bottom, top = array[finite].min(), array[finite].max()
    if top <= bottom:
        return np.zeros(len(array))
    return np.where(finite, (array - bottom) / (top - bottom), 0.0)


def _scaled(scores: Sequence[float]) -> list[float]:
    finite = [s for s in scores if math.isfinite(s)]
    if not finite:
        return [0.0] * len(scores)
    bottom, top = min(finite), max(finite)
    if top <= bottom:
        return [0.0] * len(scores)
    return [(s - bottom) / (top - bottom) if math.isfinite(s) else 0.0 for s in scores]
