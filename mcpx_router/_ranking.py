"""Ranking the published tools against a conversation: lexical (BM25), or blended with embeddings.

The adapter's synchronous tool lists rank by BM25 alone. With an embedder, the asynchronous
`select_tools` and `rank_tools` blend that score with each tool's embedding similarity to the
query (`model/_budget.blend`), and `suggest_groups` proposes groups of equivalent tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, overload

from ._answering import UNSET
from ._catalogue import Catalogue, Format, PublishedTool
from ._dispatch import check_limit
from ._embedding import EmbeddingIndex
from ._errors import UsageError
from .model._budget import blend, conversation_text
from .model._similar import GroupSuggestion, suggest_groups

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from openai.types.shared_params import FunctionDefinition

__all__ = ["RankingMethods", "query_text"]


def query_text(relevant_to: str | Iterable[Any] | None) -> str:
    """The query in `relevant_to`: itself when it is text, else the last user messages' text."""
    if relevant_to is None or isinstance(relevant_to, str):
        return relevant_to or ""
    return conversation_text(relevant_to)


class RankingMethods:
    """`rank_tools`, `select_tools` and `suggest_groups`, for `OpenAIPeerToolAdapter`."""

    _catalogue: Catalogue
    _embeddings: EmbeddingIndex | None
    _semantic_weight: float
    _max_tools: int | None

    if TYPE_CHECKING:  # the adapter's own

        def _view(
            self, fmt: Format, relevant_to: str | Iterable[Any] | None, max_tools: Any
        ) -> tuple[Any, ...]: ...

    async def rank_tools(self, relevant_to: str | Iterable[Any] | None) -> list[tuple[PublishedTool, float]]:
        """Every published tool with its relevance to a query or conversation, most relevant first
        (ties in catalogue order).

        The score is BM25 (0.0: no word in common) without an embedder; with one, the blend of BM25
        and embedding similarity, each scaled to [0, 1] over the catalogue, so 0.0 to 1.0.

        Raises:
            EmbeddingError: The embedder failed or returned unusable vectors.
        """
        tools = self._catalogue.all_tools()
        query = query_text(relevant_to)
        scores = self._catalogue.scores(query)
        if self._embeddings is not None and tools and query.strip():
            semantic = await self._embeddings.similarities(query, tools, version=self._catalogue.version)
            scores = blend(scores, semantic, self._semantic_weight)
        order = sorted(range(len(tools)), key=lambda i: -scores[i])
        return [(tools[i], scores[i]) for i in order]

    @overload
    async def select_tools(
        self,
        fmt: Literal["chat"] = ...,
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[ChatCompletionFunctionToolParam, ...]: ...
    @overload
    async def select_tools(
        self,
        fmt: Literal["responses"],
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[FunctionToolParam, ...]: ...
    @overload
    async def select_tools(
        self,
        fmt: Literal["functions"],
        *,
        relevant_to: str | Iterable[Any] | None = ...,
        max_tools: int | None = ...,
    ) -> tuple[FunctionDefinition, ...]: ...
    async def select_tools(
        self,
        fmt: Format = "chat",
        *,
        relevant_to: str | Iterable[Any] | None = None,
        max_tools: int | None = UNSET,
    ) -> tuple[Any, ...]:
        """The tool list in `fmt` ("chat", "responses" or "functions") for one request, as the
        `get_*` methods give it, but ranked with embeddings when the adapter has an embedder.

        Without an embedder, or when every tool fits, it is exactly what `get_openai_tools` (or
        its Responses and legacy variants) returns. `max_tools` overrides the adapter's.
        """
        limit = self._max_tools if max_tools is UNSET else max_tools
        check_limit("max_tools", limit)
        if self._embeddings is None or relevant_to is None:
            return self._view(fmt, relevant_to, limit)
        query = query_text(relevant_to)  # read once: `relevant_to` may be an iterator
        view = self._catalogue.view(fmt)
        if limit is None or len(view) <= limit or not query.strip():
            return self._view(fmt, query, limit)
        position = {id(tool): i for i, tool in enumerate(self._catalogue.all_tools())}
        ranked = await self.rank_tools(query)
        return tuple(view[i] for i in sorted(position[id(tool)] for tool, _ in ranked[:limit]))

    async def suggest_groups(self, *, min_score: float = 0.5) -> list[GroupSuggestion]:
        """Groups of tools of different peers that look equivalent, by embedding similarity.

        Each suggestion's `score` is the least similarity between two of its members;
        `mcpx_router.as_aliases(suggestions, min_score=...)` turns those above a threshold into
        the `aliases` the groups option takes.

        Raises:
            UsageError: The adapter has no embedder.
            EmbeddingError: The embedder failed or returned unusable vectors.
        """
        if self._embeddings is None:
            raise UsageError("suggest_groups needs an embedder: create the adapter with embedder=...")
        tools = self._catalogue.all_tools()
        vectors = await self._embeddings.tool_vectors(tools)
        return suggest_groups(
            [(t.peer, t.tool, v) for t, v in zip(tools, vectors, strict=True)], min_score=min_score
        )
