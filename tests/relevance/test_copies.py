"""Copies of one tool (several peers listing it alike) are spread apart in every ranked list.

A deployment with replicas, or with one server run once per team, lists the same tools under
several peers. Ranked by score alone, the copies sit side by side and fill a small budget with
one tool; the ranking gives the first places to different tools nearly as relevant instead
(`spread_copies`), in every path that ranks: the synchronous lists (one message or several),
`select_tools` and `rank_tools` with or without an embedder, and the re-ranker's candidates and
its order. Real in-process peers serve the memory server's tools as it lists them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.model._budget import tokens
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer, connected
from ..support.big_catalogue import real_peers

pytestmark = pytest.mark.anyio

UNLINK = "Delete the works_at relation from Bob to Acme."


def memory_peers() -> dict[str, RecordingPeer]:
    """The memory server's tools under `memory` and, alike, under `memory_team`."""
    memory = real_peers()["memory"]
    team = RecordingPeer("memory_team", list(memory.tools), dict(memory.handlers))
    return {"memory": memory, "memory_team": team}


@asynccontextmanager
async def adapter_with(
    peers: dict[str, RecordingPeer], **options: Any
) -> AsyncIterator[OpenAIPeerToolAdapter]:
    async with connected(**peers) as clients, OpenAIPeerToolAdapter(**options) as adapter:
        for name in peers:
            await adapter.add_peer(name, clients[name])
        yield adapter


def names(tools: tuple[Any, ...]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def tool_of(name: str) -> str:
    return name.split("__", 1)[1]


async def test_the_first_places_go_to_different_tools_in_every_list() -> None:
    async with adapter_with(memory_peers(), max_tools=2) as adapter:
        ranked = await adapter.rank_tools(UNLINK)
        scores = {t.name: s for t, s in ranked}
        # by score alone the two copies of delete_relations would take the first two places
        assert scores["memory_team__delete_relations"] > scores["memory__delete_entities"]
        first = [t.name for t, _ in ranked]
        assert first[:2] == ["memory__delete_relations", "memory__delete_entities"]
        # the copy comes back next, above every other tool less relevant than it by 0.3 of the first
        assert first[2] == "memory_team__delete_relations"
        lowered = scores[first[2]] - 0.3 * scores[first[0]]
        firsts = [n for n in first[3:] if n.startswith("memory__")]
        assert firsts and all(scores[n] < lowered for n in firsts)
        # each list sends what the ranking puts first, the synchronous ones too
        chosen = set(first[:2])
        assert set(names(adapter.get_openai_tools(relevant_to=UNLINK))) == chosen
        assert set(names(adapter.get_responses_tools(relevant_to=UNLINK))) == chosen
        assert set(names(await adapter.select_tools("chat", relevant_to=UNLINK))) == chosen
        conversation = [{"role": "user", "content": "hello"}, {"role": "user", "content": UNLINK}]
        assert set(names(adapter.get_openai_tools(relevant_to=conversation))) == chosen


async def test_a_request_that_names_the_copy_gets_it_first() -> None:
    async with adapter_with(memory_peers(), max_tools=3) as adapter:
        first = [t.name for t, _ in await adapter.rank_tools("In the team memory: " + UNLINK)]
        assert first[0] == "memory_team__delete_relations"
        assert "memory__delete_relations" not in first[:3]


async def test_with_an_embedder_the_copies_are_spread_too() -> None:
    async with adapter_with(memory_peers(), embedder=HashingEmbedder(), max_tools=2) as adapter:
        ranked = [t.name for t, _ in await adapter.rank_tools(UNLINK)]
        assert ranked[0] == "memory__delete_relations"
        assert tool_of(ranked[1]) != "delete_relations"
        chosen = names(await adapter.select_tools("chat", relevant_to=UNLINK))
        assert set(chosen) == set(ranked[:2])


async def test_tools_alike_in_name_only_are_not_copies() -> None:
    peers = memory_peers()
    team = peers["memory_team"]
    team.tools = [
        t.model_copy(update={"description": f"{t.description} (the team's graph)"}) for t in team.tools
    ]
    async with adapter_with(peers, max_tools=3) as adapter:
        first = [t.name for t, _ in await adapter.rank_tools(UNLINK)]
        assert {tool_of(n) for n in first[:2]} == {"delete_relations"}


class Scripted:
    """A re-ranker that scores each text by the first of `marks` it holds (0.0 for none); records
    the texts it was given."""

    def __init__(self, marks: dict[str, float], *, top: int) -> None:
        self.marks = marks
        self.top = top
        self.weight = 1.0
        self.calls: list[list[str]] = []

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append(texts)
        return [next((v for mark, v in self.marks.items() if mark in text), 0.0) for text in texts]


@pytest.mark.parametrize("top", [2, 4])
async def test_the_re_ranker_reads_the_spread_candidates_and_its_order_is_spread_too(top: int) -> None:
    # it scores both copies of delete_relations highest, delete_entities just below
    scripted = Scripted({"Delete multiple relations": 1.0, "Delete multiple entities": 0.9}, top=top)
    async with adapter_with(memory_peers(), reranker=scripted) as adapter:
        ranked = [t.name for t, _ in await adapter.rank_tools(UNLINK)]
    (texts,) = scripted.calls
    # the first stage's order, copies spread: the copy is third
    expected = ["memory__delete_relations", "memory__delete_entities", "memory_team__delete_relations"]
    assert [text.split(":")[0] for text in texts[:3]] == [" ".join(tokens(name)) for name in expected][:top]
    # the re-ranker ties the copies; spread again, delete_entities stays between them
    assert ranked[:3] == expected
