"""Fusing BM25 scores with embedding similarities: properties of both ways, with numpy and without.

`blend` and `reciprocal_rank` return numpy arrays where numpy is installed (the dev extra has it)
and lists without it; the pure-Python code is reached by taking numpy away for the call.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.model._budget import spread_copies
from mcpx_router.relevance import _fusion
from mcpx_router.relevance._fusion import FUSIONS, Fusion, blend, fuse, reciprocal_rank
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer, connected

np = pytest.importorskip("numpy")

# Scores on a grid: two that differ, differ by more than rounding can hide.
score = st.integers(min_value=0, max_value=5000).map(lambda i: i / 100)
similarity = st.integers(min_value=-1000, max_value=1000).map(lambda i: i / 1000)
weights = st.floats(min_value=0, max_value=1)
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


@st.composite
def evidence(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    n = draw(st.integers(min_value=1, max_value=30))
    lexical = draw(st.lists(score, min_size=n, max_size=n))
    semantic = draw(st.lists(similarity, min_size=n, max_size=n))
    return lexical, semantic


@pytest.fixture
def without_numpy() -> Iterator[None]:
    saved = list(_fusion._NUMPY)
    _fusion._NUMPY[:] = [None]
    try:
        yield
    finally:
        _fusion._NUMPY[:] = saved


def both(
    method: Fusion, lexical: list[float], semantic: list[float], weight: float
) -> tuple[list[float], list[float]]:
    """The fused scores computed with numpy and in pure Python."""
    with_numpy = [float(x) for x in fuse(lexical, np.asarray(semantic), weight, method)]
    saved = list(_fusion._NUMPY)
    _fusion._NUMPY[:] = [None]
    try:
        pure = [float(x) for x in fuse(lexical, semantic, weight, method)]
    finally:
        _fusion._NUMPY[:] = saved
    return with_numpy, pure


@pytest.mark.parametrize("method", FUSIONS)
@given(data=evidence(), weight=weights)
def test_numpy_and_pure_python_agree(
    method: Fusion, data: tuple[list[float], list[float]], weight: float
) -> None:
    with_numpy, pure = both(method, *data, weight)
    assert with_numpy == pytest.approx(pure, abs=1e-12)


@pytest.mark.parametrize("method", FUSIONS)
@given(data=evidence(), weight=weights)
def test_a_tool_better_on_both_sides_never_ranks_lower(
    method: Fusion, data: tuple[list[float], list[float]], weight: float
) -> None:
    lexical, semantic = data
    fused = [float(x) for x in fuse(lexical, semantic, weight, method)]
    for i in range(len(fused)):
        for j in range(len(fused)):
            if lexical[i] >= lexical[j] and semantic[i] >= semantic[j]:
                assert fused[i] >= fused[j] - 1e-12


@pytest.mark.parametrize("method", FUSIONS)
@given(data=evidence(), weight=weights, seed=st.randoms(use_true_random=False))
def test_the_order_of_the_tools_does_not_matter(
    method: Fusion, data: tuple[list[float], list[float]], weight: float, seed: object
) -> None:
    lexical, semantic = data
    order = list(range(len(lexical)))
    seed.shuffle(order)  # type: ignore[attr-defined]
    fused = [float(x) for x in fuse(lexical, semantic, weight, method)]
    shuffled = [
        float(x) for x in fuse([lexical[i] for i in order], [semantic[i] for i in order], weight, method)
    ]
    assert shuffled == pytest.approx([fused[i] for i in order], abs=1e-12)


@given(data=evidence())
def test_the_weight_picks_one_side_at_its_ends(data: tuple[list[float], list[float]]) -> None:
    lexical, semantic = data
    for method in FUSIONS:
        only_semantic = [float(x) for x in fuse(lexical, semantic, 1.0, method)]
        only_lexical = [float(x) for x in fuse(lexical, semantic, 0.0, method)]
        for i in range(len(lexical)):
            for j in range(len(lexical)):
                if semantic[i] > semantic[j]:
                    assert only_semantic[i] > only_semantic[j]
                if lexical[i] > lexical[j]:
                    assert only_lexical[i] > only_lexical[j]


def test_reciprocal_rank_shares_ranks_between_ties_and_skips_tools_with_no_word() -> None:
    fused = [float(x) for x in reciprocal_rank([2.0, 2.0, 0.0], [0.5, 0.5, 0.5], 0.5, k=60)]
    assert fused[0] == fused[1] == pytest.approx(0.5 / 61 + 0.5 / 61)
    assert fused[2] == pytest.approx(0.5 / 61)  # no lexical term: BM25 found no word of the query


def test_non_finite_scores_count_as_the_lowest(without_numpy: None) -> None:
    for method in FUSIONS:
        fused = fuse([1.0, math.inf, 0.5], [0.1, 0.2, math.nan], 0.5, method)
        assert all(math.isfinite(x) for x in fused)
    assert blend([1.0, math.inf], [0.5, 0.5], 0.5) == [0.0, 0.0]


def test_lists_of_different_lengths_or_an_unknown_way_are_refused() -> None:
    with pytest.raises(ValueError, match="2 lexical scores but 1 semantic"):
        fuse([1.0, 2.0], [1.0], 0.5)
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        fuse([1.0], [1.0], 0.5, "max")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_adapter_ranks_alike_with_numpy_and_without() -> None:
    rec = RecordingPeer("p")
    for i, words in enumerate(
        ["read a text file", "get the current time", "git commit log", "fetch a web page"]
    ):
        rec.tool(f"tool{i}", TEXT, description=f"{words.capitalize()}.")
    chat = [{"role": "user", "content": "show the log"}, {"role": "user", "content": "what time is it"}]
    ranked = {}
    for label, module in (("numpy", np), ("pure", None)):
        saved = list(_fusion._NUMPY)
        _fusion._NUMPY[:] = [module]
        try:
            async with (
                connected(p=rec) as clients,
                OpenAIPeerToolAdapter(embedder=HashingEmbedder()) as adapter,
            ):
                await adapter.add_peer("p", clients["p"])
                ranked[label] = [(tool.name, score) for tool, score in await adapter.rank_tools(chat)]
        finally:
            _fusion._NUMPY[:] = saved
    assert [name for name, _ in ranked["numpy"]] == [name for name, _ in ranked["pure"]]
    assert [s for _, s in ranked["numpy"]] == pytest.approx([s for _, s in ranked["pure"]], abs=1e-6)


@given(
    scores=st.lists(score | st.just(0.0), max_size=60),
    definitions=st.data(),
    share=st.sampled_from([0.3, 0.05, 1.0]),
)
def test_copies_spread_with_numpy_as_without(
    scores: list[float], definitions: st.DataObject, share: float
) -> None:
    copies = definitions.draw(st.lists(st.integers(0, 6), min_size=len(scores), max_size=len(scores)))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    ordered = [scores[i] for i in order]
    expected, _ = spread_copies(order, ordered, copies, share)
    array = np.asarray(scores, dtype=np.float64)
    ranked = np.argsort(-array, kind="stable")
    assert ranked.tolist() == order
    got = _fusion.spread_order(np, ranked, array[ranked], np.asarray(copies, dtype=np.int64), share)
    assert got.tolist() == expected
