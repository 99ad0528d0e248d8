"""Ranking the published tools against a conversation: lexical (BM25), or blended with embeddings.

The adapter's synchronous tool lists rank by BM25 alone. With an embedder, the asynchronous
`select_tools` and `rank_tools` blend that score with each tool's embedding similarity to the
query (`model/_budget.blend`), and `suggest_groups` proposes groups of equivalent tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._answering import UNSET
from .._catalogue import Catalogue, Format, PublishedTool
from .._dispatch import check_limit
from .._errors import UsageError
from ..model._budget import blend, conversation_text
from ..model._similar import GroupSuggestion, suggest_groups
from ._embedding import EmbeddingIndex

__all__ = ["Ranking", "query_text"]


def query_text(relevant_to: str | Iterable[Any] | None) -> str:
    """The query in `relevant_to`: itself when it is text, else the last user messages' text."""
    if relevant_to is None or isinstance(relevant_to, str):
        return relevant_to or ""
    return conversation_text(relevant_to)


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

    def view(self, fmt: Format, relevant_to: str | Iterable[Any] | None, max_tools: Any) -> tuple[Any, ...]:
        """The tool list in `fmt`: by BM25, the most relevant `max_tools` (UNSET: the default)."""
        limit = self.max_tools if max_tools is UNSET else max_tools
        check_limit("max_tools", limit)
        if relevant_to is None or isinstance(relevant_to, str):
            return self._catalogue.select(fmt, relevant_to or "", limit)
        return self._catalogue.select(fmt, conversation_text(relevant_to), limit)

    async def rank_tools(self, relevant_to: str | Iterable[Any] | None) -> list[tuple[PublishedTool, float]]:
        """Every shown tool with its relevance score, most relevant first (see the adapter's `rank_tools`)."""
        tools = self._catalogue.shown_tools()
        query = query_text(relevant_to)
        scores = self._catalogue.scores(query)
        if self._embeddings is not None and tools and query.strip():
            semantic = await self._embeddings.similarities(query, tools, version=self._catalogue.version)
            scores = blend(scores, semantic, self._semantic_weight)
        order = sorted(range(len(tools)), key=lambda i: -scores[i])
        return [(tools[i], scores[i]) for i in order]

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
        query = query_text(relevant_to)  # read once: `relevant_to` may be an iterator
        view = self._catalogue.view(fmt)
        if limit is None or len(view) <= limit or not query.strip():
            return self.view(fmt, query, limit)
        position = {id(tool): i for i, tool in enumerate(self._catalogue.shown_tools())}
        ranked = await self.rank_tools(query)
        return tuple(view[i] for i in sorted(position[id(tool)] for tool, _ in ranked[:limit]))

    async def suggest_groups(self, *, min_score: float = 0.5) -> list[GroupSuggestion]:
        """Groups of equivalent tools by embedding similarity (see the adapter's `suggest_groups`)."""
        if self._embeddings is None:
            raise UsageError("suggest_groups needs an embedder: create the adapter with embedder=...")
        tools = self._catalogue.all_tools()
        vectors = await self._embeddings.tool_vectors(tools)
        return suggest_groups(
            [(t.peer, t.tool, v) for t, v in zip(tools, vectors, strict=True)], min_score=min_score
        )
