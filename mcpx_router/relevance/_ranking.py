"""Ranking the published tools against a conversation: lexical (BM25), or fused with embeddings.

The adapter's synchronous tool lists rank by BM25 alone. With an embedder, the asynchronous
`select_tools` and `rank_tools` fuse that score with each tool's embedding similarity to the
query (`_fusion`: reciprocal-rank fusion), and `suggest_groups` proposes groups of equivalent tools.

A conversation is weighed toward its latest user message: of the last three, the newest counts
fully, the one before half, the one before that a quarter (`TURN_WEIGHTS`), in the BM25 score
(one score per message, summed by weight) and in the query's vector (the messages' vectors summed
by weight: each message is embedded once, so a turn embeds only its new one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from .._answering import UNSET
from .._catalogue import Catalogue, Format, PublishedTool
from .._dispatch import check_limit
from .._errors import UsageError
from ..model._budget import conversation_text
from ..model._similar import GroupSuggestion, suggest_groups
from ._embedding import EmbeddingIndex
from ._fusion import fuse, numpy_or_none

__all__ = ["TURN_WEIGHTS", "Ranking", "query_parts"]

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
    ) -> None:
        self._catalogue = catalogue
        self._embeddings = embeddings
        self._semantic_weight = semantic_weight
        self.max_tools = max_tools
        """The most tools one request carries (None: no limit)."""
        self._shown: tuple[int, tuple[PublishedTool, ...]] | None = None

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
        scores = self._lexical(parts)
        chosen = sorted(range(len(scores)), key=lambda i: -scores[i])[:limit]
        return tuple(view[i] for i in sorted(chosen))

    def _lexical(self, parts: tuple[tuple[str, float], ...]) -> list[float]:
        """The BM25 score of each shown tool: of each part, summed by the parts' weights."""
        if len(parts) < 2:
            return self._catalogue.scores(parts[0][0] if parts else "")
        total = [0.0] * len(self._shown_tools())
        for text, weight in parts:
            total = [t + weight * s for t, s in zip(total, self._catalogue.scores(text), strict=True)]
        return total

    async def rank_tools(self, relevant_to: str | Iterable[Any] | None) -> list[tuple[PublishedTool, float]]:
        """Every shown tool with its relevance score, most relevant first (see the adapter's `rank_tools`)."""
        tools, order, scores = await self._ranked(relevant_to)
        return list(zip(_pick(tools, order), scores, strict=True))

    async def _ranked(
        self, relevant_to: str | Iterable[Any] | None
    ) -> tuple[tuple[PublishedTool, ...], list[int], list[float]]:
        """The shown tools, their indices most relevant first, and the scores in that order."""
        tools = self._shown_tools()
        parts = query_parts(relevant_to)
        lexical = self._lexical(parts)
        if self._embeddings is None or not tools or not parts:
            order = sorted(range(len(tools)), key=lambda i: -lexical[i])
            return tools, order, [lexical[i] for i in order]
        semantic = await self._embeddings.similarity_scores(parts, tools, version=self._catalogue.version)
        scores = fuse(lexical, semantic, self._semantic_weight)
        np = numpy_or_none()
        if np is not None and isinstance(scores, np.ndarray):
            ranked = np.argsort(-scores, kind="stable")
            return tools, ranked.tolist(), scores[ranked].tolist()
        order = sorted(range(len(tools)), key=lambda i: -scores[i])
        return tools, order, [float(scores[i]) for i in order]

    async def select_tools(
        self,
        fmt: Format = "chat",
        *,
        relevant_to: str | Iterable[Any] | None = None,
        max_tools: int | None = UNSET,
    ) -> tuple[Any, ...]:
        """The tool list in `fmt`, ranked with embeddings when there is an embedder (see the adapter's)."""
        limit = self.max_tools if max_tools is UNSET else max_tools
        check_limit("max_tools", limit)
        if self._embeddings is None or relevant_to is None:
            return self.view(fmt, relevant_to, limit)
        if not isinstance(relevant_to, str):
            relevant_to = list(relevant_to)  # read once: it may be an iterator
        view = self._catalogue.view(fmt)
        if limit is None or len(view) <= limit or not query_parts(relevant_to):
            return self.view(fmt, relevant_to, limit)
        _, order, _ = await self._ranked(relevant_to)  # the shown tools are the view's, in its order
        return tuple(view[i] for i in sorted(order[:limit]))

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
