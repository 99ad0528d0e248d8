"""Ranking the published tools against a conversation: lexical (BM25), or fused with embeddings.

The adapter's synchronous tool lists rank by BM25 alone. With an embedder, the asynchronous
`select_tools` and `rank_tools` fuse that score with each tool's embedding similarity to the
query (`_fusion`), and `suggest_groups` proposes groups of equivalent tools. With a re-ranker
(`_rerank`), those two re-score their first candidates against the latest user message.

A conversation is weighed toward its latest user message: of the last three, the newest counts
fully, the one before half, the one before that a quarter (`TURN_WEIGHTS`), in the BM25 score
(one score per message, summed by weight) and in the query's vector (the messages' vectors summed
by weight: each message is embedded once, so a turn embeds only its new one).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

import anyio
import anyio.to_thread

from .._answering import UNSET
from .._catalogue import Catalogue, Format, PublishedTool
from .._dispatch import check_limit
from .._errors import EmbeddingError, UsageError
from ..model._budget import conversation_text, query_text, rank_scores, spread_copies
from ..model._similar import GroupSuggestion, suggest_groups
from ._embedding import EmbeddingIndex
from ._fusion import fuse, numpy_or_none, spread_order
from ._rerank import Reranker, blend_top, rerank_text

__all__ = ["TURN_WEIGHTS", "Ranking", "query_parts"]

_MAX_RERANKS = 64
TURN_WEIGHTS = (1.0, 0.5, 0.25)
"""The weight of the latest user message, the one before, and the one before that."""


def _pick(tools: Sequence[PublishedTool], order: list[int]) -> list[PublishedTool]:
    """`tools` in `order` (itemgetter: a few times quicker than a comprehension over thousands)."""
    if len(order) < 2:
        return [tools[i] for i in order]
    return list(itemgetter(*order)(tools))


def query_parts(relevant_to: str | Iterable[Any] | None) -> tuple[tuple[str, float], ...]:
    """The query as `(text, weight)` parts: text is one part; of a conversation, each of its last
    user messages with its `TURN_WEIGHTS` weight, the latest first (empty messages left out)."""
    if relevant_to is None or isinstance(relevant_to, str):
        return ((relevant_to, 1.0),) if relevant_to and relevant_to.strip() else ()
    texts = [text for text in (conversation_text([m], last=1) for m in relevant_to) if text.strip()]
    latest = texts[::-1][: len(TURN_WEIGHTS)]
    return tuple(zip(latest, TURN_WEIGHTS, strict=False))


async def _scores_of(reranker: Reranker, query: str, texts: list[str]) -> list[float]:
    """The re-ranker's score of each text, checked: one finite number each."""
    try:
        result = reranker(query, texts)
        if inspect.isawaitable(result):
            result = await result
        scores = [float(x) for x in result]
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"the re-ranker failed: {type(exc).__name__}: {exc}") from exc
    if len(scores) != len(texts) or not all(math.isfinite(x) for x in scores):
        raise EmbeddingError(
            f"the re-ranker gave {len(scores)} scores for {len(texts)} texts, "
            "or one that is not a finite number"
        )
    return scores


class Ranking:
    """The adapter's ranking: its tool lists chosen by relevance, `rank_tools`, `select_tools` and
    `suggest_groups` (the adapter's methods of those names hand over to these)."""

    def __init__(
        self,
        catalogue: Catalogue,
        embeddings: EmbeddingIndex | None,
        *,
        semantic_weight: float,
        max_tools: int | None,
        reranker: Reranker | None = None,
    ) -> None:
        self._catalogue = catalogue
        self._embeddings = embeddings
        self._reranker = reranker
        self._warming = anyio.Lock()
        self._reranks: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        """The re-ranker's scores of the last requests, by query and candidates' texts (a turn
        ranks the same request for its tool list, the tool search and the inspector)."""
        self._semantic_weight = semantic_weight
        self.max_tools = max_tools
        """The most tools one request carries (None: no limit)."""
        self._shown: tuple[int, tuple[PublishedTool, ...]] | None = None
        self._copies: tuple[list[int], Any] | None = None
        """The catalogue's last `copies` list and the same as a numpy array."""

    def view(self, fmt: Format, relevant_to: str | Iterable[Any] | None, max_tools: Any) -> tuple[Any, ...]:
        """The tool list in `fmt`: by BM25, the most relevant `max_tools` (UNSET: the default)."""
        limit = self.max_tools if max_tools is UNSET else max_tools
        check_limit("max_tools", limit)
        if relevant_to is None or isinstance(relevant_to, str):
            return self._catalogue.select(fmt, relevant_to or "", limit)
        parts = query_parts(relevant_to)
        if len(parts) < 2:
            return self._catalogue.select(fmt, parts[0][0] if parts else "", limit)
        view = self._catalogue.view(fmt)
        if limit is None or len(view) <= limit:
            return view
        order, _ = rank_scores(self._lexical(parts), self._catalogue.copies())
        return tuple(view[i] for i in sorted(order[:limit]))

    def _lexical(self, parts: tuple[tuple[str, float], ...]) -> list[float]:
        """The BM25 score of each shown tool: of each part, summed by the parts' weights."""
        if len(parts) < 2:
            return self._catalogue.scores(parts[0][0] if parts else "")
        total = [0.0] * len(self._shown_tools())
        for text, weight in parts:
            total = [t + weight * s for t, s in zip(total, self._catalogue.scores(text), strict=True)]
        return total

    async def warm(self) -> None:
        """Build, in a worker thread, the parts of the BM25 index the catalogue's changes made
        stale, so that ranking finds them built: tokenising a peer of 5,000 tools takes about a
        quarter of a second, which would otherwise hold the event loop on the next ranking."""
        async with self._warming:
            for peer, stamp, build in self._catalogue.stale_index():
                self._catalogue.keep_index(peer, stamp, await anyio.to_thread.run_sync(build))

    async def warm_if_ranked(self) -> None:
        """`warm`, where there are more tools than a request carries: then every request is ranked."""
        if self.max_tools is not None and len(self._shown_tools()) > self.max_tools:
            await self.warm()

    async def rank_tools(self, relevant_to: str | Iterable[Any] | None) -> list[tuple[PublishedTool, float]]:
        """Every shown tool with its relevance score, most relevant first (see the adapter's `rank_tools`)."""
        await self.warm()
        tools, order, scores = await self._ranked(relevant_to)
        return list(zip(_pick(tools, order), scores, strict=True))

    async def _ranked(
        self, relevant_to: str | Iterable[Any] | None
    ) -> tuple[tuple[PublishedTool, ...], list[int], list[float]]:
        """The shown tools, their indices most relevant first, and the scores in that order."""
        tools = self._shown_tools()
        parts = query_parts(relevant_to)
        lexical = self._lexical(parts)
        copies = self._catalogue.copies()
        if self._embeddings is None or not tools or not parts:
            order, ordered = rank_scores(lexical, copies)
        else:
            semantic = await self._embeddings.similarity_scores(parts, tools, version=self._catalogue.version)
            scores = fuse(lexical, semantic, self._semantic_weight)
            np = numpy_or_none()
            if np is not None and isinstance(scores, np.ndarray):
                ranked = np.argsort(-scores, kind="stable")
                if copies is not None:
                    ranked = spread_order(np, ranked, scores[ranked], self._copies_array(np, copies))
                order, ordered = ranked.tolist(), scores[ranked].tolist()
            else:
                order, ordered = rank_scores(scores, copies)
        if self._reranker is not None and parts and len(tools) > 1:
            order, ordered = await self._reranked(query_text(parts[0][0]), tools, order, ordered)
            if copies is not None:  # within the re-scored head, which stays first
                head = self._reranker.top
                first, new = spread_copies(order[:head], ordered[:head], copies)
                order, ordered = first + order[head:], new + ordered[head:]
        return tools, order, ordered

    async def _reranked(
        self, query: str, tools: Sequence[PublishedTool], order: list[int], scores: list[float]
    ) -> tuple[list[int], list[float]]:
        """`order` with its first `top` re-scored by the re-ranker and put first by their new score."""
        reranker = self._reranker
        assert reranker is not None
        head = order[: reranker.top]
        texts = [rerank_text(tools[i]) for i in head]
        key = (query, tuple(texts))
        second = self._reranks.get(key)
        if second is None:
            second = await _scores_of(reranker, query, texts)
            self._reranks[key] = second
            if len(self._reranks) > _MAX_RERANKS:
                del self._reranks[next(iter(self._reranks))]
        new = blend_top(scores[: len(head)], second, reranker.weight)
        ranked = sorted(range(len(head)), key=lambda j: -new[j])
        return [head[j] for j in ranked] + order[len(head) :], [new[j] for j in ranked] + scores[len(head) :]

    async def select_tools(
        self,
        fmt: Format = "chat",
        *,
        relevant_to: str | Iterable[Any] | None = None,
        max_tools: int | None = UNSET,
    ) -> tuple[Any, ...]:
        """The tool list in `fmt`, ranked with the embedder and re-ranker there are (see the adapter's)."""
        limit = self.max_tools if max_tools is UNSET else max_tools
        check_limit("max_tools", limit)
        if relevant_to is not None:
            await self.warm()
        if (self._embeddings is None and self._reranker is None) or relevant_to is None:
            return self.view(fmt, relevant_to, limit)
        if not isinstance(relevant_to, str):
            relevant_to = list(relevant_to)  # read once: it may be an iterator
        view = self._catalogue.view(fmt)
        if limit is None or len(view) <= limit or not query_parts(relevant_to):
            return self.view(fmt, relevant_to, limit)
        _, order, _ = await self._ranked(relevant_to)  # the shown tools are the view's, in its order
        return tuple(view[i] for i in sorted(order[:limit]))

    def _copies_array(self, np: Any, copies: list[int]) -> Any:
        """`copies` as a numpy array, made once per list (the catalogue's, one per version)."""
        if self._copies is None or self._copies[0] is not copies:
            self._copies = (copies, np.asarray(copies, dtype=np.int64))
        return self._copies[1]

    def _shown_tools(self) -> tuple[PublishedTool, ...]:
        """The catalogue's `shown_tools`, made once per catalogue version."""
        version = self._catalogue.version
        if self._shown is None or self._shown[0] != version:
            self._shown = (version, self._catalogue.shown_tools())
        return self._shown[1]

    async def suggest_groups(self, *, min_score: float = 0.5) -> list[GroupSuggestion]:
        """Groups of equivalent tools by embedding similarity (see the adapter's `suggest_groups`)."""
        if self._embeddings is None:
            raise UsageError("suggest_groups needs an embedder: create the adapter with embedder=...")
        tools = self._catalogue.all_tools()
        vectors = await self._embeddings.tool_vectors(tools)
        return suggest_groups(
            [(t.peer, t.tool, v) for t, v in zip(tools, vectors, strict=True)], min_score=min_score
        )
