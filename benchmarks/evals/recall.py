"""Recall@k of the intended tool under the budget's ranking: no model, only the BM25 ranking.

`recall_at_k(size, ks)` ranks each labelled request's text with `OpenAIPeerToolAdapter.rank_tools`
(what `select_tools` cuts to `max_tools` for a request) over the evaluation's catalogue of `size`
tools, and gives, for each k, the share of requests whose intended tool (or its copy on a replica
peer) is among the first k. At 10 tools each request has its own catalogue, as in the evaluation.

    .venv/bin/python -m benchmarks evals --recall --sizes 10,100,1000,5000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as mt

from mcpx_router import Embedder, OpenAIPeerToolAdapter

from .catalogue import Catalogue, large_catalogue, origin, small_catalogue
from .harness import Request, load_requests


class _Listing:
    """A session that lists fixed tools (ranking never calls them)."""

    def __init__(self, tools: list[mt.Tool]) -> None:
        self._tools = tools

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=self._tools)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        raise NotImplementedError


async def _ranks(
    catalogue: Catalogue, requests: Sequence[Request], embedder: Embedder | None, **options: Any
) -> list[int | None]:
    """For each request, the 1-based rank of its intended tool (None: not ranked at all)."""
    out: list[int | None] = []
    async with OpenAIPeerToolAdapter(embedder=embedder, **options) as adapter:
        for peer, tools in catalogue.items():
            await adapter.add_peer(peer, _Listing(tools))
        for request in requests:
            peer, tool = request.tool.split("__", 1)
            rank = None
            for i, (published, _) in enumerate(await adapter.rank_tools(request.text), 1):
                if origin(published.key.peer) == peer and published.key.tool == tool:
                    rank = i
                    break
            out.append(rank)
    return out


async def ranks(
    size: int, *, requests: Sequence[Request] | None = None, embedder: Embedder | None = None, seed: int = 7
) -> list[int | None]:
    """The intended tool's rank for each request in the evaluation's catalogue of `size` tools."""
    requests = load_requests() if requests is None else list(requests)
    if size < 63:
        out: list[int | None] = []
        for request in requests:
            out += await _ranks(small_catalogue(request.tool, request.id, size), [request], embedder)
        return out
    return await _ranks(large_catalogue(size, seed=seed), requests, embedder)


async def recall_at_k_async(
    size: int,
    ks: Sequence[int] = (1, 3, 5, 10, 20, 128),
    *,
    requests: Sequence[Request] | None = None,
    embedder: Embedder | None = None,
    seed: int = 7,
) -> dict[int, float]:
    """For each k, the share (0 to 1) of requests whose intended tool the ranking puts in the first k."""
    found = await ranks(size, requests=requests, embedder=embedder, seed=seed)
    return {k: sum(r is not None and r <= k for r in found) / len(found) for k in ks}


def recall_at_k(
    size: int,
    ks: Sequence[int] = (1, 3, 5, 10, 20, 128),
    *,
    requests: Sequence[Request] | None = None,
    embedder: Embedder | None = None,
    seed: int = 7,
) -> dict[int, float]:
    """`recall_at_k_async`, blocking (not from inside an event loop)."""

    async def go() -> dict[int, float]:
        return await recall_at_k_async(size, ks, requests=requests, embedder=embedder, seed=seed)

    result: dict[int, float] = anyio.run(go)
    return result
