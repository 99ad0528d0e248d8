"""Ranking for the tool budget: BM25 by default, blended with embeddings when an embedder is given.

Without an embedder nothing changes: `select_tools` and the loops send exactly the lists the
synchronous `get_*` methods give. With the deterministic `HashingEmbedder`, a request that shares
no word with the right tool (only word parts) still finds it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp
import pytest
from openai import AsyncOpenAI

from mcpx_router import OpenAIEmbedder, OpenAIPeerToolAdapter, UsageError, as_aliases
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.model._outbound_rules import check_outbound
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer
from ..support._openai_replay import (
    CHAT,
    EMBEDDINGS,
    RESPONSES,
    chat_completion,
    output_message,
    replay_openai,
    response,
)
from ..support.big_catalogue import filler_peers, real_peers

pytestmark = pytest.mark.anyio

# Misspelt: no tool has a word of the stem of "convertng" or of "tymezones" (stemming finds
# "converting zones"); "convert" and "timezones" are close in spelling only.
MORPHED = "convertng tymezones"


@asynccontextmanager
async def adapter_with(
    peers: dict[str, RecordingPeer], **options: Any
) -> AsyncIterator[OpenAIPeerToolAdapter]:
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(**options))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        yield adapter


def big() -> dict[str, RecordingPeer]:
    return {**filler_peers(1949), **real_peers()}


async def test_without_an_embedder_every_list_is_the_lexical_one() -> None:
    messages = [{"role": "user", "content": "show me the git log of my branch"}]
    async with adapter_with(big()) as adapter:
        assert await adapter.select_tools("chat", relevant_to=messages) == adapter.get_openai_tools(
            relevant_to=messages
        )
        assert await adapter.select_tools("responses", relevant_to=messages, max_tools=5) == (
            adapter.get_responses_tools(relevant_to=messages, max_tools=5)
        )
        assert await adapter.select_tools("functions", max_tools=None) is adapter.get_openai_functions(
            max_tools=None
        )
        scores = [score for _, score in await adapter.rank_tools(messages)]
        assert scores == sorted(scores, reverse=True) and scores[-1] == 0.0


async def test_the_loops_send_exactly_the_lexical_lists_by_default() -> None:
    async with adapter_with(big()) as adapter:
        prompt = "show me the git log of my branch"
        with replay_openai([chat_completion({"content": "ok"}), response([output_message("ok")])]) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(30):
                    await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": prompt}])
                    await run_responses(client, adapter, model="m", input=prompt)
        expected_chat = json.loads(json.dumps(adapter.get_openai_tools(relevant_to=prompt)))
        expected_responses = json.loads(json.dumps(adapter.get_responses_tools(relevant_to=prompt)))
    assert replay.bodies(CHAT)[0]["tools"] == expected_chat
    assert replay.bodies(RESPONSES)[0]["tools"] == expected_responses
    assert replay.bodies(EMBEDDINGS) == []


async def test_embeddings_find_what_shares_no_word_with_the_request() -> None:
    async with adapter_with(big(), embedder=HashingEmbedder(), max_tools=5) as lexical_too:
        lexical = [t["function"]["name"] for t in lexical_too.get_openai_tools(relevant_to=MORPHED)]
        hybrid = await lexical_too.select_tools("chat", relevant_to=[{"role": "user", "content": MORPHED}])
        once = iter([{"role": "user", "content": MORPHED}])  # an iterator is read once
        assert await lexical_too.select_tools("chat", relevant_to=once) == hybrid
    assert "time__convert_time" not in lexical  # BM25 sees no word in common
    names = [t["function"]["name"] for t in hybrid]
    assert "time__convert_time" in names and len(names) == 5
    for tool in hybrid:
        assert check_outbound(tool["function"]["parameters"], strict=False) == ()


async def test_the_loop_ranks_with_the_openai_embedder_through_the_real_sdk() -> None:
    with replay_openai([chat_completion({"content": "ok"}), chat_completion({"content": "ok"})]) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            embedder = OpenAIEmbedder(client, "text-embedding-3-small")
            async with adapter_with(big(), embedder=embedder) as adapter:
                with anyio.fail_after(30):
                    for _ in range(2):
                        messages: list[Any] = [{"role": "user", "content": MORPHED}]
                        await run_chat(client, adapter, model="m", messages=messages)
    sent = [[t["function"]["name"] for t in body["tools"]] for body in replay.bodies(CHAT)]
    assert all(len(names) == 128 and "time__convert_time" in names for names in sent)
    batches = [len(body["input"]) for body in replay.bodies(EMBEDDINGS)]
    # 2,000 tools in batches of 256, then the query; the second conversation embeds nothing new.
    assert batches == [256] * 7 + [208, 1]


async def test_suggested_groups_come_as_aliases_above_a_threshold() -> None:
    def searcher(name: str, what: str) -> RecordingPeer:
        schema = {"type": "object", "properties": {"query": {"type": "string"}}}
        peer = RecordingPeer(name).tool(
            "search", schema, description=f"Search {what} for pages matching a query."
        )
        return peer.tool(
            "status", {"type": "object", "properties": {}}, description=f"Health of the {name} service."
        )

    peers = {"web": searcher("web", "the web"), "docs": searcher("docs", "the docs"), **real_peers()}
    async with adapter_with(peers, embedder=HashingEmbedder()) as adapter:
        suggestions = await adapter.suggest_groups(min_score=0.8)
    aliases = as_aliases(suggestions, min_score=0.8)
    assert aliases["search"] == ["web/search", "docs/search"]
    assert all(s.score >= 0.8 for s in suggestions)
    async with adapter_with({}) as plain:
        with pytest.raises(UsageError, match="suggest_groups needs an embedder"):
            await plain.suggest_groups()
