"""The pure helpers of the tool budget: patterns, tokens, ranking, shortening, conversation text."""

from __future__ import annotations

from typing import Any

import pytest

from mcpx_router.model._budget import LexicalIndex, conversation_text, matches, rank, shorten, tokens


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
