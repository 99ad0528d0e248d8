"""The pure helpers of the tool budget: patterns, tokens, ranking, shortening, conversation text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx_router.model._budget import (
    COPY_SHARE,
    PARAMETER_WEIGHT,
    IndexPart,
    LexicalIndex,
    conversation_text,
    matches,
    parameter_text,
    query_text,
    rank,
    score_parts,
    shorten,
    spread_copies,
    tokens,
    tool_text,
)


@pytest.mark.parametrize(
    ("name", "include", "exclude", "expected"),
    [
        ("read_file", None, None, True),
        ("read_file", ["read_*"], None, True),
        ("write_file", ["read_*"], None, False),
        ("read_file", None, ["*_file"], False),
        ("read_file", ["read_*"], ["read_file"], False),
        ("Read_file", ["read_*"], None, False),  # patterns are case-sensitive, like tool names
        ("x", [], None, False),  # an empty include list publishes nothing
    ],
)
def test_matches(name: str, include: list[str] | None, exclude: list[str] | None, expected: bool) -> None:
    assert matches(name, include, exclude) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("get_current_time", ["get", "current", "time"]),
        ("page.get", ["page", "get"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("weather-v2 forecast", ["weather", "v", "2", "forecast"]),
        ("", []),
    ],
)
def test_tokens(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_rank_puts_the_matching_documents_first_and_keeps_order_on_ties() -> None:
    docs = ["git commit changes", "weather forecast for a city", "search the web", "weather alerts"]
    assert rank(docs, "what is the weather forecast in Oslo")[:2] == [1, 3]
    assert rank(docs, "nothing in common") == [0, 1, 2, 3]
    assert rank([], "weather") == []


def test_a_rare_term_outweighs_a_common_one() -> None:
    docs = ["get weather", "get time", "get file", "get zebra"]
    assert rank(docs, "get zebra")[0] == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Download https://example.com/pricing for me.", "Download  url  for me."),
        ("Show the log of /home/ana/blog.", "Show the log of  path ."),
        ("Open ~/notes.txt, ./src and ../up", "Open  path ,  path  and  path "),
        ("(/tmp/x)", "( path )"),
        ("at 16:00 Asia/Kolkata time", "at 16:00 Asia/Kolkata time"),  # not a path: a zone
        ("merge acme/api into main", "merge acme/api into main"),  # nor an owner/repo
        ("either/or", "either/or"),
        ("Is it at https://a.b/c?d=e, or /srv/x?", "Is it at  url , or  path ?"),
        ("and / or, km/h", "and / or, km/h"),
    ],
)
def test_query_text_reads_urls_and_paths_as_what_they_are(text: str, expected: str) -> None:
    assert query_text(text) == expected


@given(st.text(alphabet=st.characters(blacklist_characters="/")))
def test_a_query_without_a_slash_is_read_as_written(text: str) -> None:
    assert query_text(text) == text


@given(st.lists(st.from_regex(r"[a-z]{3,8}", fullmatch=True), min_size=1, max_size=4))
def test_the_words_of_a_path_or_url_in_a_query_match_no_tool(words: list[str]) -> None:
    documents = ["unrelated tool", " ".join(words) + " tool", "read a file at a path"]
    for query in ("/" + "/".join(words), "https://example.com/" + "/".join(words)):
        index = LexicalIndex(documents)
        assert index.rank(query)[0] != 1
    assert rank(documents, "open /" + "/".join(words))[0] == 2


def test_tool_text_reads_names_descriptions_and_parameters() -> None:
    schema = {"properties": {"repo_path": {"description": "Path to the Git repository"}, "n": {}}}
    assert tool_text("git_log", "Shows the commit logs", schema) == (
        "git_log git_log Shows the commit logs repo_path n"
    )
    assert parameter_text(schema) == "Path to the Git repository"
    assert parameter_text({"properties": {"a": "not a schema", "b": {"description": 3}}}) == ""
    assert parameter_text({"properties": ["a"]}) == parameter_text({}) == ""
    # The words of a parameter's description find the tool, at PARAMETER_WEIGHT.
    docs = ["echo Echo text message", tool_text("git_log", "Shows the commit logs", schema)]
    extras = ["", parameter_text(schema)]
    assert score_parts([IndexPart(docs, extras=extras)], "which repository")[0] == 0.0
    assert score_parts([IndexPart(docs, extras=extras)], "which repository")[1] > 0.0


def test_a_parameters_description_counts_less_and_lengthens_nothing() -> None:
    own = IndexPart(["list the commits", "list the branches"])
    described = IndexPart(["list the commits", "list the branches"], extras=["", "commits " * 50])
    repeated = IndexPart(["list the commits", "list the branches " + "commits " * 50])
    # The long description does not push the tool's own words down (its length is unchanged) ...
    assert score_parts([described], "branches")[1] == score_parts([own], "branches")[1]
    assert score_parts([repeated], "branches")[1] < score_parts([own], "branches")[1]
    # ... and a word only there scores less than the same word in the tool's own text.
    half = IndexPart(["x", "list the branches"], extras=["", "commits"])
    full = IndexPart(["x", "list the branches commits"])
    assert 0 < score_parts([half], "commits")[1] < score_parts([full], "commits")[1]
    assert PARAMETER_WEIGHT == 0.5


def test_an_index_answers_many_queries_like_fresh_rankings() -> None:
    docs = [f"tool {i} about {'weather' if i % 7 == 0 else 'files'} number {i}" for i in range(50)]
    index = LexicalIndex(docs)
    for query in ("weather", "files number 3", "unknown words", ""):
        assert index.rank(query) == rank(docs, query)


@pytest.mark.parametrize(
    ("text", "limit", "suffix", "expected"),
    [
        ("short", 100, " (via p)", "short (via p)"),
        ("a" * 20, 15, " (via p)", "aaaaaa… (via p)"),
        ("exact", None, "!", "exact!"),
    ],
)
def test_shorten(text: str, limit: int | None, suffix: str, expected: str) -> None:
    out = shorten(text, limit, suffix)
    assert out == expected
    assert limit is None or len(out) <= limit


def test_conversation_text_takes_the_last_user_messages() -> None:
    class Message:
        role = "user"
        content = "from an SDK object"

    messages: list[Any] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "weather"}, {"type": "image_url"}]},
        Message(),
        {"role": "user", "content": "last"},
    ]
    assert conversation_text(messages) == "weather from an SDK object last"
    assert conversation_text(messages, last=1) == "last"


# -- copies spread apart --------------------------------------------------------------------------


@st.composite
def rankings(draw: st.DrawFn) -> tuple[list[int], list[float], list[int]]:
    """A ranking as the adapter holds one: documents in score order (ties in catalogue order), their
    scores, and each document's definition (a few definitions, so that copies are common)."""
    scores = draw(st.lists(st.floats(-2, 50, allow_nan=False), max_size=40))
    definitions = draw(st.lists(st.integers(0, 5), min_size=len(scores), max_size=len(scores)))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return order, [scores[i] for i in order], definitions


@given(rankings(), st.sampled_from([COPY_SHARE, 0.1, 1.0]))
def test_copies_sink_by_a_share_of_the_first_score_for_each_copy_above(
    ranking: tuple[list[int], list[float], list[int]], share: float
) -> None:
    order, ordered, copies = ranking
    new_order, new_scores = spread_copies(order, ordered, copies, share)
    # the same documents, each with its own score
    assert sorted(new_order) == sorted(order)
    assert new_scores == [dict(zip(order, ordered, strict=True))[i] for i in new_order]
    # those that score nothing stay last, in their order
    relevant = sum(score > 0 for score in ordered) if ordered and ordered[0] > 0 else 0
    assert new_order[relevant:] == order[relevant:]
    # what ranks the others: the score less `share` of the first score for each copy above in the
    # new order (never below nothing), never rising down the list; ties keep the first order
    step = share * ordered[0] if relevant else 0.0
    keys = []
    for place, i in enumerate(new_order[:relevant]):
        above = sum(copies[j] == copies[i] for j in new_order[:place])
        keys.append((-max(new_scores[place] - step * above, 0.0), order.index(i)))
    assert keys == sorted(keys)


@given(rankings())
def test_a_ranking_without_copies_or_relevance_is_kept(
    ranking: tuple[list[int], list[float], list[int]],
) -> None:
    order, ordered, _ = ranking
    assert spread_copies(order, ordered, list(range(len(order)))) == (order, ordered)
    nothing = [min(0.0, score) for score in ordered]
    assert spread_copies(order, nothing, [0] * len(order)) == (order, nothing)


def test_a_second_copy_ranks_below_tools_nearly_as_relevant_but_above_weak_ones() -> None:
    # documents 0 and 1 are one tool listed by two peers; 2 is nearly as relevant, 3 is weak
    order, ordered = [0, 1, 2, 3], [10.0, 10.0, 9.0, 1.0]
    assert spread_copies(order, ordered, [7, 7, 2, 3]) == ([0, 2, 1, 3], [10.0, 9.0, 10.0, 1.0])
