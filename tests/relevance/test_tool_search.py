"""Tool search over 2,000 tools through the real `openai` SDK against the replay endpoint.

The catalogue: 1,949 generated tools, then the 51 tools captured from real servers. The model
is scripted; every request body the SDK sent is checked: how many tools it carries (never more
than the budget), that each passes the independent outbound check, and that what a search found
is offered in the next request (or loaded by the Responses API's own `tool_search_output`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter, ToolSearch, UsageError
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.model._outbound_rules import check_outbound

from ..support._model_peers import RecordingPeer
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
from ..support.big_catalogue import filler_peers, real_peers

pytestmark = pytest.mark.anyio

SAFETY = 30.0
VAGUE = "Help me plan a call with my colleague abroad."
QUERY = json.dumps({"query": "convert time between timezones"})
CONVERT = json.dumps({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": "Asia/Tokyo"})


@asynccontextmanager
async def catalogue(
    filler: int = 1949, **options: Any
) -> AsyncIterator[tuple[OpenAIPeerToolAdapter, dict[str, RecordingPeer]]]:
    peers = {**filler_peers(filler), **real_peers()}
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(**options))
        for name, peer in peers.items():
            await adapter.add_peer(name, await stack.enter_async_context(mcp.Client(peer.server())))
        yield adapter, peers


def function_name(tool: dict[str, Any]) -> str:
    if "function" in tool:
        return str(tool["function"]["name"])
    return str(tool["name"] if "name" in tool else tool["type"])


def check_sent(tools: list[dict[str, Any]]) -> None:
    """Every tool as sent passes the outbound rules (written apart from the converter)."""
    for tool in tools:
        function = tool.get("function", tool)
        strict = bool(function.get("strict"))
        assert check_outbound(function["parameters"], strict=strict) == (), function_name(tool)


async def test_chat_find_tools_offers_what_it_found_in_the_next_request() -> None:
    async with catalogue() as (adapter, peers):
        assert len(adapter.tools) == 2000
        script = [
            chat_completion({"content": None, "tool_calls": [tool_call("c1", "find_tools", QUERY)]}),
            chat_completion(
                {"content": None, "tool_calls": [tool_call("c2", "time__convert_time", CONVERT)]}
            ),
            chat_completion({"content": "9:00 in Paris is 16:00 in Tokyo."}),
        ]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    messages: list[Any] = [{"role": "user", "content": VAGUE}]
                    result = await run_chat(client, adapter, model="m", messages=messages, tool_search=True)
        bodies = replay.bodies(CHAT)
    assert result.text == "9:00 in Paris is 16:00 in Tokyo." and result.turns == 3
    first, second, third = ([function_name(t) for t in b["tools"]] for b in bodies)
    for body in bodies:
        assert len(body["tools"]) == 128
        assert len(set(map(function_name, body["tools"]))) == 128
        check_sent(body["tools"])
    assert first[0] == "find_tools" and "time__convert_time" not in first
    found = bodies[1]["messages"][-1]
    assert found["role"] == "tool" and found["tool_call_id"] == "c1"
    assert found["content"].startswith("Found 8 tools for 'convert time between timezones'")
    assert "- time__convert_time: Convert time between timezones" in found["content"]
    assert "time__convert_time" in second and "time__convert_time" in third
    assert peers["time"].calls == [("convert_time", json.loads(CONVERT))]


def responses_search(call_id: str, query: str) -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": f"ts_{call_id}",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "arguments": {"query": query},
    }


@pytest.mark.parametrize("stream", [False, True])
async def test_responses_native_tool_search_loads_found_tools_through_tool_search_output(
    stream: bool,
) -> None:
    async with catalogue() as (adapter, peers):
        script = [
            response([responses_search("s1", "convert time between timezones")]),
            response([function_call("c2", "time__convert_time", CONVERT)]),
            response([output_message("16:00 in Tokyo.")]),
        ]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    result = await run_responses(
                        client, adapter, model="m", input=VAGUE, tool_search=True, stream=stream
                    )
        bodies = replay.bodies(RESPONSES)
    assert result.text == "16:00 in Tokyo." and result.turns == 3
    first = bodies[0]["tools"]
    assert first[0]["type"] == "tool_search" and first[0]["execution"] == "client"
    assert first[0]["parameters"]["required"] == ["query"]
    assert len(first) == 128 and "time__convert_time" not in map(function_name, first)
    outputs = [item for item in bodies[1]["input"] if item.get("type") == "tool_search_output"]
    assert [o["call_id"] for o in outputs] == ["s1"]
    loaded = [tool["name"] for tool in outputs[0]["tools"]]
    assert loaded[0] == "time__convert_time" and len(loaded) == 8
    check_sent(outputs[0]["tools"])
    search_items = [item for item in bodies[1]["input"] if item.get("type") == "tool_search_call"]
    assert search_items == [responses_search("s1", "convert time between timezones")]  # sent back as received
    for body in bodies:
        check_sent(body["tools"])
    # Loaded tools count against the budget and are not listed again.
    for body in bodies[1:]:
        names = [function_name(t) for t in body["tools"]]
        assert len(names) + len(loaded) == 128 and not set(loaded) & set(names)
    assert peers["time"].calls == [("convert_time", json.loads(CONVERT))]


async def test_responses_without_native_search_uses_the_find_tools_function() -> None:
    async with catalogue() as (adapter, _):
        script = [
            response([function_call("c1", "find_tools", QUERY)]),
            response([output_message("done")]),
        ]
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    search = ToolSearch(adapter, native=False, per_search=3)
                    await run_responses(client, adapter, model="m", input=VAGUE, tool_search=search)
        bodies = replay.bodies(RESPONSES)
    first, second = ([function_name(t) for t in b["tools"]] for b in bodies)
    assert bodies[0]["tools"][0] == {
        "type": "function",
        "name": "find_tools",
        "description": bodies[0]["tools"][0]["description"],
        "parameters": bodies[0]["tools"][0]["parameters"],
        "strict": False,
    }
    assert "2000 available tools" in bodies[0]["tools"][0]["description"]
    assert "time__convert_time" not in first and "time__convert_time" in second
    assert search.found[-1] == "time__convert_time" and len(search.found) == 3
    answer = bodies[1]["input"][-1]
    assert answer["type"] == "function_call_output" and answer["call_id"] == "c1"
    for body in bodies:
        assert len(body["tools"]) == 128
        check_sent(body["tools"])


async def test_dispatch_answers_searches_and_calls_in_call_order() -> None:
    async with catalogue(filler=300, max_tools=16) as (adapter, peers):
        search = ToolSearch(adapter, per_search=2)
        calls = [
            tool_call("a", "fs__list_allowed_directories", "{}"),
            tool_call("b", "find_tools", '{"query": "knowledge graph"}'),
            {"name": "find_tools", "arguments": '{"query": '},  # legacy, broken JSON
            tool_call("c", "find_tools", '{"query": "zzzz qqqq"}'),
            tool_call("d", "find_tools", "{}"),
            tool_call("e", "nope__nothing", "{}"),
        ]
        answers = await search.dispatch(calls)
    assert [a.get("tool_call_id", a.get("name")) for a in answers] == ["a", "b", "find_tools", "c", "d", "e"]
    assert peers["fs"].calls == [("list_allowed_directories", {})]
    assert answers[1]["content"].startswith("Found 2 tools for 'knowledge graph'")
    assert answers[2] == {
        "role": "function",
        "name": "find_tools",
        "content": answers[2]["content"],
    } and answers[2]["content"].startswith(
        "Error: find_tools was not called. The arguments are not valid JSON"
    )
    assert answers[3]["content"] == "No tool matches 'zzzz qqqq'. Try other words, or go on without a tool."
    assert answers[4]["content"].startswith('Error: find_tools needs a "query"')
    assert answers[5]["content"].startswith("Error: there is no tool named 'nope__nothing'")
    assert len(search.found) == 2


async def test_a_catalogue_that_fits_is_sent_as_it_is_without_a_search_tool() -> None:
    async with catalogue(filler=0) as (adapter, _):
        search = ToolSearch(adapter)
        for fmt, get in (("chat", adapter.get_openai_tools), ("responses", adapter.get_responses_tools)):
            tools = await (search.chat_tools(VAGUE) if fmt == "chat" else search.responses_tools(VAGUE))
            assert tools == list(get())
        assert await search.functions(VAGUE) == list(adapter.get_openai_functions())


async def test_the_search_function_never_takes_a_published_name() -> None:
    async with catalogue(filler=0) as (adapter, _):
        assert ToolSearch(adapter, name="time__convert_time").name == "time__convert_time_2"
        for bad in ("", "has space", "x" * 61, "café", 7):
            with pytest.raises(UsageError, match="name must be a legal function name"):
                ToolSearch(adapter, name=bad)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="tool_search must be True, False or a ToolSearch"):
            await run_chat(
                AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9"),
                adapter,
                model="m",
                messages=[],
                tool_search="yes",
            )  # type: ignore[arg-type]


WORDS = st.sampled_from(
    "time file git branch commit memory graph invoice ticket refund sensor echo fetch".split()
)


@settings(max_examples=25, deadline=None)
@given(
    budget=st.integers(2, 40),
    per_search=st.integers(1, 10),
    offered=st.none() | st.integers(0, 20),
    queries=st.lists(st.lists(WORDS, min_size=1, max_size=3).map(" ".join), max_size=6),
)
def test_every_tool_list_fits_the_budget_and_keeps_the_latest_finds(
    budget: int, per_search: int, offered: int | None, queries: list[str]
) -> None:
    async def body() -> None:
        async with catalogue(filler=150, max_tools=budget) as (adapter, _):
            search = ToolSearch(adapter, per_search=per_search, offered=offered)
            messages: list[Any] = [{"role": "user", "content": VAGUE}]
            for n, query in enumerate(queries):
                messages += await search.dispatch(
                    [tool_call(f"c{n}", "find_tools", json.dumps({"query": query}))]
                )
                assert await search.chat_tools(iter(messages)) == await search.chat_tools(messages)
                for tools in (await search.chat_tools(messages), await search.functions(messages)):
                    names = [function_name(t) for t in tools]
                    assert len(names) <= budget and len(set(names)) == len(names)
                    assert names[0] == "find_tools"
                    latest = list(reversed(search.found))[: budget - 1]
                    assert set(latest) <= set(names)  # the most recent finds are always offered
                    if offered is not None:
                        assert len(names) <= 1 + len(latest) + offered
                    check_sent([t if "function" in t else {"function": t} for t in tools])
            # The Responses API's own search: what it loaded plus what is listed fits the budget.
            native = ToolSearch(adapter, per_search=per_search, offered=offered)
            items: list[Any] = [{"role": "user", "content": VAGUE}]
            for n, query in enumerate(queries):
                items.append(responses_search(f"s{n}", query))
                items += await native.dispatch(items[-1:])
                loaded = [
                    t["name"] for i in items if i.get("type") == "tool_search_output" for t in i["tools"]
                ]
                listed = await native.responses_tools(items)
                names = [function_name(t) for t in listed]
                assert names[0] == "tool_search" and len(names) + len(loaded) <= budget
                assert len(set(loaded)) == len(loaded) and not set(loaded) & set(names)
                assert len(set(names)) == len(names)

    anyio.run(body)


async def test_tool_search_calls_are_answered_only_when_the_client_runs_them() -> None:
    from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem

    client_call = ResponseToolSearchCall.model_validate(responses_search("s1", "convert time"))
    server_call = ResponseToolSearchCall.model_validate(
        {**responses_search("s2", "x"), "execution": "server"}
    )
    output = ResponseToolSearchOutputItem.model_validate(
        {
            "type": "tool_search_output",
            "id": "o1",
            "call_id": "s2",
            "execution": "server",
            "status": "completed",
            "tools": [],
        }
    )
    async with catalogue(filler=300, max_tools=16) as (adapter, _):
        # The adapter alone answers neither: a client search is the host's (or a ToolSearch's) to run.
        assert await adapter.dispatch([client_call, server_call, output]) == []
        search = ToolSearch(adapter, per_search=2)
        answers = await search.dispatch([server_call, client_call, output])
        dict_answers = await ToolSearch(adapter, per_search=2).dispatch(
            [
                client_call.model_dump(mode="json", by_alias=True),
                {
                    "type": "tool_search_call",
                    "execution": "client",
                    "call_id": "s3",
                    "arguments": '{"query": "convert time"}',
                },
            ]
        )
    assert len(answers) == 1
    assert answers[0]["type"] == "tool_search_output" and answers[0]["call_id"] == "s1"
    assert answers[0]["execution"] == "client" and answers[0]["status"] == "completed"
    assert [t["name"] for t in answers[0]["tools"]] == ["time__convert_time", "time__get_current_time"]
    assert all(t["type"] == "function" for t in answers[0]["tools"])
    assert dict_answers[0] == answers[0]  # a dict item and arguments as JSON text are read alike
    assert dict_answers[1]["call_id"] == "s3"
    assert dict_answers[1]["tools"] == []  # what the first search loaded stays loaded: nothing new
    ResponseToolSearchOutputItem.model_validate({**answers[0], "id": "o2"})  # the SDK's own shape


def item_of(kind: str, n: int) -> tuple[dict[str, Any], str | None]:
    """An item of `kind` with id `i{n}`, and the id its answer carries (None: passed over)."""
    call_id = f"i{n}"
    if kind == "chat_tool":
        return tool_call(call_id, "time__get_current_time", '{"timezone": "UTC"}'), call_id
    if kind == "chat_find":
        return tool_call(call_id, "find_tools", '{"query": "git branch"}'), call_id
    if kind == "chat_unknown":
        return tool_call(call_id, "nope__nothing", "{}"), call_id
    if kind == "responses_find":
        return function_call(call_id, "find_tools", '{"query": "read a file"}'), call_id
    if kind == "responses_tool":
        return function_call(call_id, "fs__list_allowed_directories", "{}"), call_id
    if kind == "client_search":
        return responses_search(call_id, "memory graph"), call_id
    if kind == "server_search":
        return {**responses_search(call_id, "x"), "execution": "server"}, None
    return {"type": "reasoning", "id": call_id, "summary": []}, None


KINDS = st.sampled_from(
    [
        "chat_tool",
        "chat_find",
        "chat_unknown",
        "responses_find",
        "responses_tool",
        "client_search",
        "server_search",
        "reasoning",
    ]
)


@settings(max_examples=30, deadline=None)
@given(kinds=st.lists(KINDS, max_size=7))
def test_every_call_gets_one_answer_in_call_order(kinds: list[str]) -> None:
    items = [item_of(kind, n) for n, kind in enumerate(kinds)]

    async def body() -> list[Any]:
        async with catalogue(filler=200, max_tools=20) as (adapter, _):
            return await ToolSearch(adapter, per_search=3).dispatch([item for item, _ in items])

    answers = anyio.run(body)
    expected = [answer_id for _, answer_id in items if answer_id is not None]
    assert [a.get("tool_call_id", a.get("call_id")) for a in answers] == expected
    first_search = True
    for (_, answer_id), kind in zip(items, kinds, strict=True):
        if answer_id is None:
            continue
        got = next(a for a in answers if a.get("tool_call_id", a.get("call_id")) == answer_id)
        if kind == "client_search":  # a search again for what is loaded finds nothing new
            assert got["type"] == "tool_search_output" and bool(got["tools"]) is first_search
            first_search = False
        elif kind.endswith("find"):
            assert (got.get("content") or got.get("output")).startswith("Found 3 tools")
        elif kind == "chat_unknown":
            assert got["content"].startswith("Error: there is no tool named")
        else:
            assert not (got.get("content") or got.get("output")).startswith("Error")
