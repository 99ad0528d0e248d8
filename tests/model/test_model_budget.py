"""The tool budget as the model meets it: at most 128 tools a request, chosen by relevance to the
conversation; per-peer include/exclude patterns; descriptions capped."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.loop import run_chat, run_responses

from ..support._model_peers import RecordingPeer, connected
from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    chat_completion,
    function_call,
    output_message,
    replay_openai,
    response,
    tool_call,
)

pytestmark = pytest.mark.anyio

SAFETY = 20.0
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NOTHING: dict[str, Any] = {"type": "object", "properties": {}}
SUBJECTS = ["invoice", "shipment", "ticket", "employee", "contract", "warehouse", "supplier", "budget"]


def filler_peer(name: str, count: int) -> RecordingPeer:
    """`count` tools about office records, none about weather, calendars or git."""
    peer = RecordingPeer(name)
    for i in range(count):
        subject = SUBJECTS[i % len(SUBJECTS)]
        peer.tool(f"{subject}_record_{i}", NOTHING, description=f"Look up {subject} record number {i}.")
    return peer


def special_peer() -> RecordingPeer:
    peer = RecordingPeer("zeta")
    peer.tool("forecast", CITY, description="Forecast the weather (temperature, rain, wind) for a city.")
    peer.tool("create_event", NOTHING, description="Create an event in the user's calendar.")
    peer.tool("commit", NOTHING, description="Commit the staged changes to the git repository.")
    return peer


def names(tools: Any) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


async def test_a_catalogue_of_300_tools_sends_at_most_128_and_the_relevant_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    peers = {"alpha": filler_peer("alpha", 150), "beta": filler_peer("beta", 147), "zeta": special_peer()}
    async with connected(**peers) as c, OpenAIPeerToolAdapter() as adapter:
        for peer_id in peers:
            await adapter.add_peer(peer_id, c[peer_id])
        assert len(adapter.tools) == 300
        # The weather tool is published last: only relevance can bring it into the first 128.
        weather = [
            {"role": "user", "content": "Will it rain in Bergen tomorrow? Check the weather forecast."}
        ]
        chosen = names(adapter.get_openai_tools(relevant_to=weather))
        calendar = names(adapter.get_responses_tools(relevant_to="put an event in my calendar"))
        functions = names(adapter.get_openai_functions(relevant_to="git: commit what is staged"))
        narrow = names(adapter.get_openai_tools(relevant_to=weather, max_tools=5))
        everything = adapter.get_openai_tools(max_tools=None)
        with caplog.at_level(logging.WARNING, logger="mcpx_router"):
            blind = names(adapter.get_openai_tools())
    assert len(chosen) == len(calendar) == len(functions) == len(blind) == 128
    assert "zeta__forecast" in chosen and "zeta__create_event" in calendar and "zeta__commit" in functions
    assert "zeta__forecast" in narrow
    assert len(narrow) == 5 and len(everything) == 300
    # Without a conversation to go by, the first 128 are sent, and a warning says how to do better.
    assert "zeta__forecast" not in blind and blind == names(everything)[:128]
    assert any("Pass relevant_to=" in r.getMessage() for r in caplog.records)
    # The choice keeps catalogue order, so the list is stable while the conversation is.
    order = names(everything)
    assert chosen == sorted(chosen, key=order.index)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_loop_sends_the_relevant_128_and_the_model_can_call_them(api: str) -> None:
    peers = {"alpha": filler_peer("alpha", 150), "beta": filler_peer("beta", 147), "zeta": special_peer()}
    prompt = "What is the weather forecast for Bergen?"
    if api == "chat":
        script = [
            chat_completion(
                {"content": None, "tool_calls": [tool_call("c1", "zeta__forecast", '{"city": "Bergen"}')]}
            ),
            chat_completion({"content": "Rain."}),
        ]
    else:
        script = [
            response([function_call("c1", "zeta__forecast", '{"city": "Bergen"}')]),
            response([output_message("Rain.")]),
        ]
    with replay_openai(script) as replay:
        async with (
            connected(**peers) as c,
            OpenAIPeerToolAdapter() as adapter,
            AsyncOpenAI(base_url=replay.base_url, api_key="x", max_retries=0) as client,
        ):
            for peer_id in peers:
                await adapter.add_peer(peer_id, c[peer_id])
            with anyio.fail_after(SAFETY):
                if api == "chat":
                    messages = [{"role": "user", "content": prompt}]
                    result = await run_chat(client, adapter, model="m", messages=messages)
                else:
                    result = await run_responses(client, adapter, model="m", input=prompt)
    assert result.text == "Rain."
    for body in replay.bodies(CHAT if api == "chat" else RESPONSES):
        sent = names(body["tools"])
        assert len(sent) == 128 and len(set(sent)) == 128
        assert "zeta__forecast" in sent
    assert peers["zeta"].calls == [("forecast", {"city": "Bergen"})]


async def test_include_and_exclude_patterns_per_peer() -> None:
    peer = RecordingPeer("git")
    for tool in ["git_status", "git_log", "git_commit", "git_push", "git_reset", "version"]:
        peer.tool(tool, NOTHING)
    async with connected(git=peer, other=filler_peer("other", 3)) as c, OpenAIPeerToolAdapter() as adapter:
        published = await adapter.add_peer(
            "git", c["git"], include=["git_*"], exclude=["git_push", "git_re*"]
        )
        await adapter.add_peer("other", c["other"], exclude=["*"])
        sent = names(adapter.get_openai_tools())
        answers = await adapter.dispatch(
            [
                {"id": "1", "type": "function", "function": {"name": "git__git_push", "arguments": "{}"}},
                {"id": "2", "type": "function", "function": {"name": "git__git_log", "arguments": "{}"}},
            ]
        )
    assert published == ("git__git_status", "git__git_log", "git__git_commit")
    assert sent == list(published)  # the excluded peer contributes nothing
    assert answers[0]["content"].startswith("Error: there is no tool named 'git__git_push'.")
    assert answers[1]["content"] == "{}"
    assert peer.calls == [("git_log", {})]


@pytest.mark.parametrize("bad", ["git_*", [1], None])
async def test_patterns_must_be_a_list_of_strings(bad: Any) -> None:
    async with (
        connected(git=RecordingPeer("git").tool("x", NOTHING)) as c,
        OpenAIPeerToolAdapter() as adapter,
    ):
        if bad is None:  # None means "everything"
            assert await adapter.add_peer("git", c["git"], include=bad) == ("git__x",)
            return
        with pytest.raises(TypeError, match="list of glob patterns"):
            await adapter.add_peer("git", c["git"], include=bad)


async def test_descriptions_are_capped_and_still_say_which_peer_serves_them() -> None:
    long = "Search the archive. " + "It covers every record ever filed, in every language. " * 40
    peer = (
        RecordingPeer("archive")
        .tool("search", NOTHING, description=long)
        .tool("ping", NOTHING, description="Ping.")
    )
    async with connected(archive=peer) as c, OpenAIPeerToolAdapter(description_limit=120) as adapter:
        await adapter.add_peer("archive", c["archive"])
        chat = {t["function"]["name"]: t["function"]["description"] for t in adapter.get_openai_tools()}
        responses = {t["name"]: t["description"] for t in adapter.get_responses_tools()}
    search = chat["archive__search"]
    assert len(search) <= 120 and search.endswith("… (via archive)")
    assert search.startswith("Search the archive. It covers every record")
    assert chat["archive__ping"] == "Ping. (via archive)"
    assert responses == chat
