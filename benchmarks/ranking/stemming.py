"""Recall@k of the lexical ranking with and without stemming, on labelled requests.

    python -m benchmarks.ranking.stemming                              # the 45 requests of _labelled.py
    python -m benchmarks.ranking.stemming --requests benchmarks/evals/requests.json   # and a JSON set
    python -m benchmarks.ranking.stemming --timing                     # also what stemming costs

Each request is ranked by `OpenAIPeerToolAdapter.rank_tools` (BM25, no embedder) with
`stemmer=None` (words as they are) and `stemmer="english"` (the default); recall@k is the share
of requests whose intended tool is among the first k. The catalogues: the 51 tools captured
from real servers, and the same among 1,949 generated ones (2,000). k = 8, 16 and 32 are the
budgets a small model's request is typically given. A JSON set is `{"requests": [{"text":
..., "tool": "peer__tool"}, ...]}` with the peer ids of `_labelled.PEER_OF`. A measurement,
not a test: the exit status is 0. `--timing` also times the index of 10,000 tools (100 per
peer, as the views keep it) and a query against it, unstemmed and stemmed, interleaved (medians
of 9 rounds; the stems of the catalogue's words already kept, as in a running adapter).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import mcp_types as mt

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.model._budget import IndexPart, score_parts, tool_text

from ._labelled import LABELLED, filler_tools, real_tools
from .relevance import _Listing

KS = (1, 3, 5, 8, 16, 32)
STEMMERS: tuple[tuple[str, str | None], ...] = (("none", None), ("english", "english"))


async def recall(
    catalogue: dict[str, list[mt.Tool]], requests: Sequence[tuple[str, str]], stemmer: str | None
) -> tuple[dict[int, float], list[tuple[str, str, int]]]:
    """Recall@k for each k of `KS`, and per request its text, tool and rank (1 = first)."""
    async with OpenAIPeerToolAdapter(stemmer=stemmer) as adapter:
        for peer, tools in catalogue.items():
            await adapter.add_peer(peer, _Listing(tools))
        hits = dict.fromkeys(KS, 0)
        ranks = []
        for query, right in requests:
            ranked = [tool.name for tool, _ in await adapter.rank_tools(query)]
            ranks.append((query, right, ranked.index(right) + 1))
            for k in KS:
                hits[k] += right in ranked[:k]
    return {k: hits[k] / len(requests) for k in KS}, ranks


def load(path: Path) -> list[tuple[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(r["text"], r["tool"]) for r in data["requests"]]


async def run(sets: dict[str, list[tuple[str, str]]], verbose: bool) -> list[tuple[str, ...]]:
    real = real_tools()
    big = {**real, **filler_tools(2000 - sum(len(t) for t in real.values()))}
    rows = []
    for set_name, requests in sets.items():
        for label, catalogue in (("51 real tools", real), ("2,000 tools", big)):
            before: list[tuple[str, str, int]] = []
            for name, stemmer in STEMMERS:
                scores, ranks = await recall(catalogue, requests, stemmer)
                rows.append((set_name, label, name, *(f"{scores[k]:.2f}" for k in KS)))
                if verbose and before:
                    for (query, tool, was), (_, _, now) in zip(before, ranks, strict=True):
                        if was != now:
                            print(f"{label}: {tool} {was} -> {now}: {query}")
                before = ranks
    return rows


def timing(rounds: int = 9) -> str:
    tools = [t for listed in {**real_tools(), **filler_tools(9949)}.values() for t in listed]
    docs = [tool_text(t.name, t.description or "", t.input_schema) for t in tools]
    peers = [docs[i : i + 100] for i in range(0, len(docs), 100)]
    query = "show me the last 3 commits of my branch and convert time between timezones"
    [IndexPart(p, "english") for p in peers]  # the stems kept, as a running adapter has them
    build: dict[str | None, list[float]] = {None: [], "english": []}
    ask: dict[str | None, list[float]] = {None: [], "english": []}
    for _ in range(rounds):
        for language in build:
            start = time.perf_counter()
            index = [IndexPart(p, language) for p in peers]
            build[language].append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(20):
                score_parts(index, query)
            ask[language].append((time.perf_counter() - start) / 20)
    b = {k: statistics.median(v) for k, v in build.items()}
    a = {k: statistics.median(v) for k, v in ask.items()}
    return (
        f"index of 10,000 tools: {b[None] * 1e3:.0f} ms unstemmed, {b['english'] * 1e3:.0f} ms stemmed "
        f"(x{b['english'] / b[None]:.2f}); a query: {a[None] * 1e3:.2f} ms, {a['english'] * 1e3:.2f} ms "
        f"(x{a['english'] / a[None]:.2f})"
    )


def table(rows: Sequence[tuple[str, ...]]) -> str:
    head = "| requests | catalogue | stemmer | " + " | ".join(f"recall@{k}" for k in KS) + " |"
    lines = [head, "| --- | --- | --- | " + " | ".join("---:" for _ in KS) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ranking.stemming", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--requests", type=Path, action="append", default=[], help="a labelled JSON set")
    parser.add_argument("--timing", action="store_true", help="also time the index and a query")
    parser.add_argument("--verbose", action="store_true", help="print each request whose rank changed")
    args = parser.parse_args(argv)
    sets = {f"_labelled.py ({len(LABELLED)})": LABELLED}
    for path in args.requests:
        requests = load(path)
        sets[f"{path.name} ({len(requests)})"] = requests
    print(table(anyio.run(run, sets, args.verbose)))
    if args.timing:
        print(timing())
    return 0


if __name__ == "__main__":
    sys.exit(main())
