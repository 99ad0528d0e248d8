"""A conversation ranks tools weighed toward its latest user message, and embeds each message once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.relevance._ranking import TURN_WEIGHTS, query_parts
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer, connected

pytestmark = pytest.mark.anyio
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}
GIT = "Show the git log"
TIME = "What is the current time in my timezone?"


def peer() -> RecordingPeer:
    rec = RecordingPeer("p")
    rec.tool("git_log", TEXT, description="Shows the git commit log of a repository.")
    rec.tool("get_current_time", TEXT, description="Get the current time in a timezone.")
    rec.tool("fetch", TEXT, description="Fetch a web page.")
    return rec


def chat(*users: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for text in users:
        out += [{"role": "user", "content": text}, {"role": "assistant", "content": "Done: git log, time."}]
    return out


def test_the_latest_user_messages_are_the_parts_latest_first() -> None:
    messages = [
        {"role": "user", "content": "one"},
        SimpleNamespace(role="assistant", content="ignored"),
        {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
        {"role": "user", "content": "   "},
        SimpleNamespace(role="user", content="three"),
        {"role": "tool", "content": "ignored"},
        {"role": "user", "content": "four"},
    ]
    assert query_parts(messages) == (("four", 1.0), ("three", 0.5), ("two", 0.25))
    assert query_parts("just text") == (("just text", 1.0),)
    assert query_parts("  ") == query_parts(None) == query_parts([]) == ()


@given(texts=st.lists(st.text(min_size=1).filter(str.strip), max_size=6))
def test_weights_fall_with_age_and_the_latest_counts_fully(texts: list[str]) -> None:
    parts = query_parts([{"role": "user", "content": t} for t in texts])
    assert [text for text, _ in parts] == texts[::-1][: len(TURN_WEIGHTS)]
    weights = [w for _, w in parts]
    assert weights == sorted(weights, reverse=True) and (not weights or weights[0] == 1.0)


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["bm25", "embeddings"])
async def test_the_latest_message_decides_between_two_topics(embedder: Any) -> None:
    async with connected(p=peer()) as clients, OpenAIPeerToolAdapter(embedder=embedder) as adapter:
        await adapter.add_peer("p", clients["p"])
        for first, latest, winner in ((GIT, TIME, "p__get_current_time"), (TIME, GIT, "p__git_log")):
            ranked = await adapter.rank_tools(chat(first, latest))
            assert ranked[0][0].name == winner
            chosen = await adapter.select_tools(relevant_to=chat(first, latest), max_tools=1)
            assert [tool["function"]["name"] for tool in chosen] == [winner]
            if embedder is None:  # the synchronous lists rank the same way
                listed = adapter.get_openai_tools(relevant_to=chat(first, latest), max_tools=1)
                assert [tool["function"]["name"] for tool in listed] == [winner]


async def test_each_turn_embeds_only_its_new_message() -> None:
    embedder = HashingEmbedder()
    async with connected(p=peer()) as clients, OpenAIPeerToolAdapter(embedder=embedder) as adapter:
        await adapter.add_peer("p", clients["p"])
        await adapter.select_tools(relevant_to=chat(GIT), max_tools=1)
        assert embedder.calls[-1] == [GIT]
        await adapter.select_tools(relevant_to=chat(GIT, TIME), max_tools=1)
        assert embedder.calls[-1] == [TIME]
        calls = len(embedder.calls)
        await adapter.select_tools(relevant_to=chat(GIT, TIME), max_tools=1)  # the same turn again
        assert len(embedder.calls) == calls
