"""Group suggestions from embeddings, and the blended relevance score (pure functions)."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import GroupSuggestion, as_aliases
from mcpx_router.model._budget import blend
from mcpx_router.model._similar import group_name, suggest_groups
from mcpx_router.testing import HashingEmbedder

LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

embed = HashingEmbedder()


def item(peer: str, tool: str, text: str) -> tuple[str, str, list[float]]:
    return peer, tool, embed.vector(text)


def test_equivalent_tools_of_three_peers_form_one_group() -> None:
    tools = [
        item("web", "search", "search the web for pages matching a query"),
        item("docs", "search", "search the docs for pages matching a query"),
        item("wiki", "find_pages", "search the wiki for pages matching a query"),
        item("web", "fetch", "download a url and return its content"),
        item("time", "now", "the current time in a timezone"),
    ]
    suggestions = suggest_groups(tools, min_score=0.6)
    assert [s.members for s in suggestions] == [("web/search", "docs/search", "wiki/find_pages")]
    assert suggestions[0].name == "search"
    assert 0.6 <= suggestions[0].score <= 1.0
    assert as_aliases(suggestions, min_score=0.6) == {
        "search": ["web/search", "docs/search", "wiki/find_pages"]
    }
    assert as_aliases(suggestions, min_score=suggestions[0].score + 1e-9) == {}


def test_two_tools_of_one_peer_never_share_a_group() -> None:
    tools = [item("a", "x", "read a file"), item("a", "y", "read a file"), item("b", "z", "read a file")]
    suggestions = suggest_groups(tools, min_score=0.5)
    assert len(suggestions) == 1 and len(suggestions[0].members) == 2
    assert suggestions[0].members[-1] == "b/z"


@pytest.mark.parametrize(
    ("names", "taken", "expected"),
    [
        (["search", "search", "find"], set(), "search"),
        (["web.search"], set(), "web_search"),
        (["a__b"], set(), "a_b"),
        (["!!!"], set(), "group"),
        (["x" * 80], set(), "x" * 60),
        (["search"], {"search", "search_2"}, "search_3"),
        (["検索"], set(), "group"),
    ],
)
def test_group_names_are_plain_legal_names(names: list[str], taken: set[str], expected: str) -> None:
    assert group_name(names, taken) == expected


vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3)
tools_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.text(min_size=1, max_size=12), vectors),
    max_size=12,
    unique_by=lambda t: (t[0], t[1]),  # a catalogue holds each (peer, tool) once
)


@settings(max_examples=150, deadline=None)
@given(tools=tools_strategy, min_score=st.floats(-0.5, 1.0))
def test_suggestions_hold_their_promises(tools: list[tuple[str, str, list[float]]], min_score: float) -> None:
    suggestions = suggest_groups(tools, min_score=min_score)
    names = [s.name for s in suggestions]
    assert len(set(names)) == len(names)
    seen: set[tuple[str, str]] = set()
    scores = [s.score for s in suggestions]
    assert scores == sorted(scores, reverse=True)
    for s in suggestions:
        assert isinstance(s, GroupSuggestion)
        assert LEGAL.match(s.name) and "__" not in s.name
        peers = [m.split("/", 1)[0] for m in s.members]
        assert len(peers) == len(set(peers)) >= 2  # one tool per peer, at least two peers
        assert s.score >= min_score
        members = [t for t in tools if f"{t[0]}/{t[1]}" in s.members]
        for i, x in enumerate(members):  # every pair within the group is at least the score
            for y in members[i + 1 :]:
                if x[0] != y[0]:
                    assert _cosine(x[2], y[2]) >= s.score - 1e-9
        for m in s.members:
            assert m not in {f"{p}/{t}" for p, t in seen}
        seen |= {tuple(m.split("/", 1)) for m in s.members}  # type: ignore[misc]


def _cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


scores = st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), lexical=scores, weight=st.floats(0, 1))
def test_blend_stays_in_range_and_weights_its_sides(
    data: st.DataObject, lexical: list[float], weight: float
) -> None:
    semantic = data.draw(
        st.lists(st.floats(-1, 1, allow_nan=False), min_size=len(lexical), max_size=len(lexical))
    )
    mixed = blend(lexical, semantic, weight)
    assert all(-1e-9 <= s <= 1 + 1e-9 for s in mixed)
    for side, w in ((lexical, 0.0), (semantic, 1.0)):
        only = blend(lexical, semantic, w)
        for i in range(len(side)):  # one side alone never reverses that side's order
            for j in range(len(side)):
                if side[i] > side[j]:
                    assert only[i] >= only[j]  # equal only where float rounding merges them


def test_blend_treats_a_flat_side_as_no_evidence() -> None:
    assert blend([0.0, 0.0, 0.0], [0.2, 0.9, 0.5], 0.5) == pytest.approx([0.0, 0.5, 0.5 * 3 / 7])
    assert blend([1.0, float("inf")], [0.5, 0.5], 0.5) == [0.0, 0.0]
    with pytest.raises(ValueError, match="2 lexical scores but 1 semantic"):
        blend([1.0, 2.0], [1.0], 0.5)
