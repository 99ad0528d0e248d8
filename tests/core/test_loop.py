"""The tool-calling loop (run_chat / run_responses) through the real `openai` SDK and a replay endpoint.

Each test drives `AsyncOpenAI(base_url=replay.base_url)` against tests/support/_openai_replay.py and checks
what the SDK actually sent: the tools of each turn, one answer per call id, and assistant messages
and output items in a form an endpoint takes back.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as mt
import pytest
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter, is_legal_name
from mcpx_router.loop import run_chat, run_responses

from ..support._model_peers import RecordingPeer, connected, text_result
from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    Replay,
    chat_completion,
    function_call,
    output_message,
    replay_openai,
    response,
    tool_call,
)

pytestmark = pytest.mark.anyio

SAFETY = 10.0
"""Seconds after which a conversation that should finish at once fails instead of hanging."""

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NOTHING: dict[str, Any] = {"type": "object", "properties": {}}

# What a Chat Completions request may carry in an assistant message.
ASSISTANT_KEYS = {"role", "content", "refusal", "audio", "function_call", "tool_calls", "name"}


def rendezvous_peer() -> RecordingPeer:
    """ping and pong each wait until the other has started: both finish only if they run at once."""
    peer = RecordingPeer("r")
    started = {"ping": anyio.Event(), "pong": anyio.Event()}

    def waiting(me: str, other: str) -> Any:
        async def handler(arguments: dict[str, Any]) -> mt.CallToolResult:
            started[me].set()
            await started[other].wait()
            return text_result(f"{me} done")

        return handler

    peer.tool("ping", NOTHING, waiting("ping", "pong"))
    peer.tool("pong", NOTHING, waiting("pong", "ping"))
    peer.tool("echo", TEXT)
    return peer


@asynccontextmanager
async def client_for(replay: Replay) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
        yield client


def answered_ids(messages: list[dict[str, Any]]) -> Counter[str]:
    """How often each call id is answered in a Chat request's messages or a Responses input."""
    ids = [m["tool_call_id"] for m in messages if m.get("role") == "tool"]
    ids += [m["call_id"] for m in messages if m.get("type") == "function_call_output"]
    return Counter(ids)


def chat_tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


async def test_chat_turn_with_parallel_calls_answers_each_once_concurrently() -> None:
    peer = rendezvous_peer()
    assistant = {
        "content": None,
        "tool_calls": [
            tool_call("call_1", "r__ping", "{}"),
            tool_call("call_2", "r__pong", ""),
            tool_call("call_3", "r__echo", '{"text": "hi"}'),
        ],
        # Fields some endpoints add to what they return and reject in what they receive.
        "annotations": [],
        "reasoning_content": "Two waits and an echo.",
    }
    script = [chat_completion(assistant), chat_completion({"content": "All three are done."})]
    with replay_openai(script) as replay:
        async with (
            connected(r=peer) as c,
            OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
            client_for(replay) as client,
        ):
            await adapter.add_peer("r", c["r"])
            with anyio.fail_after(SAFETY * 2):
                result = await run_chat(
                    client, adapter, model="m", messages=[{"role": "user", "content": "go"}]
                )
    assert (result.text, result.stopped, result.turns, result.tool_calls) == (
        "All three are done.",
        "answer",
        2,
        3,
    )
    first, second = replay.bodies(CHAT)
    assert sorted(chat_tool_names(first)) == ["r__echo", "r__ping", "r__pong"]
    assert all(is_legal_name(name) for name in chat_tool_names(first))
    assert second["tools"] == first["tools"]
    messages = second["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "tool"]
    sent_back = messages[1]
    assert set(sent_back) <= ASSISTANT_KEYS
    assert [c["id"] for c in sent_back["tool_calls"]] == ["call_1", "call_2", "call_3"]
    assert sent_back["tool_calls"][2] == tool_call("call_3", "r__echo", '{"text": "hi"}')
    assert answered_ids(messages) == {"call_1": 1, "call_2": 1, "call_3": 1}
    answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    # Sequential calls would have left ping waiting for pong until the timeout.
    assert answers == {"call_1": "ping done", "call_2": "pong done", "call_3": '{"text": "hi"}'}
    assert sorted(peer.calls) == [("echo", {"text": "hi"}), ("ping", {}), ("pong", {})]
    # The result holds the whole conversation, the final answer included.
    assert result.messages[-1] == {"role": "assistant", "content": "All three are done."}
    assert result.messages[:5] == messages


async def test_responses_turn_resends_output_items_as_sent_and_answers_each_call_once() -> None:
    peer = rendezvous_peer()
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"}
    ping = function_call("fc_ping", "r__ping", "{}")
    pong = {**function_call("fc_pong", "r__pong", ""), "async": False}  # a field the SDK renames
    echo = function_call("fc_echo", "r__echo", '{"text": "hi"}')
    script = [
        response([reasoning, ping, pong, echo]),
        response([output_message("Done: ping, pong, hi.")]),
    ]
    with replay_openai(script) as replay:
        async with (
            connected(r=peer) as c,
            OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
            client_for(replay) as client,
        ):
            await adapter.add_peer("r", c["r"])
            with anyio.fail_after(SAFETY * 2):
                result = await run_responses(client, adapter, model="m", input="go")
    assert (result.text, result.stopped, result.turns, result.tool_calls) == (
        "Done: ping, pong, hi.",
        "answer",
        2,
        3,
    )
    first, second = replay.bodies(RESPONSES)
    assert first["input"] == [{"role": "user", "content": "go"}]
    tools = first["tools"]
    assert sorted(t["name"] for t in tools) == ["r__echo", "r__ping", "r__pong"]
    assert all(t["type"] == "function" and t["strict"] is False for t in tools)
    items = second["input"]
    # The output items come back exactly as the endpoint sent them.
    assert items[1:5] == [reasoning, ping, pong, echo]
    assert answered_ids(items) == {"fc_ping": 1, "fc_pong": 1, "fc_echo": 1}
    outputs = {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}
    assert outputs == {"fc_ping": "ping done", "fc_pong": "pong done", "fc_echo": '{"text": "hi"}'}
    assert result.messages[-1]["content"][0]["text"] == "Done: ping, pong, hi."


# The SDK stops reading a Chat stream at its `[DONE]` event without closing its own async
# generators (and those of httpx2 below them); trio warns when they are garbage collected.
@pytest.mark.filterwarnings(r"ignore:Async generator '(openai\._streaming|http(x|core)2)\.:ResourceWarning")
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_streamed_replies_are_assembled_before_dispatch(api: str) -> None:
    peer = RecordingPeer("r").tool("echo", TEXT)
    arguments = json.dumps({"text": "a long enough text to be split across chunks"})
    if api == "chat":
        script = [
            chat_completion({"content": None, "tool_calls": [tool_call("call_1", "r__echo", arguments)]}),
            chat_completion({"content": "Echoed."}),
        ]
    else:
        script = [
            response([function_call("call_1", "r__echo", arguments)]),
            response([output_message("Echoed.")]),
        ]
    with replay_openai(script) as replay:
        async with (
            connected(r=peer) as c,
            OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
            client_for(replay) as client,
        ):
            await adapter.add_peer("r", c["r"])
            with anyio.fail_after(SAFETY):
                if api == "chat":
                    result = await run_chat(
                        client, adapter, model="m", messages=[{"role": "user", "content": "go"}], stream=True
                    )
                else:
                    result = await run_responses(client, adapter, model="m", input="go", stream=True)
    assert (result.text, result.stopped, result.tool_calls) == ("Echoed.", "answer", 1)
    assert peer.calls == [("echo", json.loads(arguments))]
    bodies = replay.bodies(CHAT if api == "chat" else RESPONSES)
    assert all(body["stream"] is True for body in bodies)
    follow_up = bodies[1]["messages" if api == "chat" else "input"]
    assert answered_ids(follow_up) == {"call_1": 1}
    # The arguments the endpoint sent in pieces go back whole.
    if api == "chat":
        assert follow_up[1]["tool_calls"] == [tool_call("call_1", "r__echo", arguments)]
    else:
        assert follow_up[1] == function_call("call_1", "r__echo", arguments) | {"id": follow_up[1]["id"]}


async def test_max_turns_stops_a_model_that_keeps_calling_tools() -> None:
    peer = RecordingPeer("r").tool("echo", TEXT)
    script = [
        chat_completion({"content": None, "tool_calls": [tool_call(f"call_{i}", "r__echo", '{"text": "x"}')]})
        for i in range(2)
    ]
    with replay_openai(script) as replay:
        async with (
            connected(r=peer) as c,
            OpenAIPeerToolAdapter() as adapter,
            client_for(replay) as client,
        ):
            await adapter.add_peer("r", c["r"])
            result = await run_chat(
                client, adapter, model="m", messages=[{"role": "user", "content": "loop"}], max_turns=2
            )
    assert (result.text, result.stopped, result.turns, result.tool_calls) == (None, "max_turns", 2, 2)
    assert len(replay.bodies(CHAT)) == 2
    # Every call made is answered in the conversation handed back, ready to be continued.
    assert answered_ids(result.messages) == {"call_0": 1, "call_1": 1}
    assert result.messages[-1]["role"] == "tool"


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3"])
async def test_max_turns_must_be_a_positive_integer(bad: Any) -> None:
    async with (
        OpenAIPeerToolAdapter() as adapter,
        AsyncOpenAI(base_url="http://127.0.0.1:9", api_key="x") as client,
    ):
        with pytest.raises(ValueError, match="max_turns"):
            await run_chat(client, adapter, model="m", messages=[], max_turns=bad)
        with pytest.raises(ValueError, match="max_turns"):
            await run_responses(client, adapter, model="m", input="x", max_turns=bad)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_catalogue_change_between_turns_is_what_the_model_sees_next(api: str) -> None:
    """Peer b joins while the model works on turn 1, peer a leaves during turn 2."""
    a = RecordingPeer("a").tool("echo", TEXT)
    b = RecordingPeer("b").tool("shout", TEXT)
    token = anyio.lowlevel.current_token()
    async with connected(a=a, b=b) as c, OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter:
        await adapter.add_peer("a", c["a"])

        def call(call_id: str, name: str) -> dict[str, Any]:
            if api == "chat":
                return chat_completion(
                    {"content": None, "tool_calls": [tool_call(call_id, name, '{"text": "x"}')]}
                )
            return response([function_call(call_id, name, '{"text": "x"}')])

        def b_joins(body: dict[str, Any]) -> dict[str, Any]:
            anyio.from_thread.run(adapter.add_peer, "b", c["b"], token=token)
            return call("call_1", "a__echo")

        def a_leaves(body: dict[str, Any]) -> dict[str, Any]:
            anyio.from_thread.run(adapter.remove_peer, "a", token=token)
            return call("call_2", "a__echo")  # the model still calls what it saw last turn

        final = chat_completion({"content": "ok"}) if api == "chat" else response([output_message("ok")])
        with replay_openai([b_joins, a_leaves, final]) as replay:
            async with client_for(replay) as client:
                with anyio.fail_after(SAFETY * 2):
                    if api == "chat":
                        result = await run_chat(
                            client, adapter, model="m", messages=[{"role": "user", "content": "go"}]
                        )
                    else:
                        result = await run_responses(client, adapter, model="m", input="go")
        now = adapter.version
    bodies = replay.bodies(CHAT if api == "chat" else RESPONSES)
    names = [
        sorted(t["function"]["name"] if api == "chat" else t["name"] for t in body["tools"])
        for body in bodies
    ]
    assert names == [["a__echo"], ["a__echo", "b__shout"], ["b__shout"]]
    versions = result.catalogue_versions
    assert len(versions) == 3 and versions[0] < versions[1] < versions[2]
    assert versions[-1] == now
    assert a.calls == [("echo", {"text": "x"})]  # the second call never reached the departed peer
    last = bodies[2]["messages" if api == "chat" else "input"]
    answers = [m.get("content", m.get("output")) for m in last if m.get("role") == "tool" or "output" in m]
    assert answers == [
        '{"text": "x"}',
        "Error: 'a__echo' is not available now: peer 'a' left. Call only the functions offered now.",
    ]


async def test_responses_turn_answers_function_and_custom_calls_and_nothing_the_api_ran() -> None:
    peer = RecordingPeer("r").tool("echo", TEXT)
    searched = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "mcp"},
    }
    custom = {
        "type": "custom_tool_call",
        "id": "ct_1",
        "call_id": "ct_call",
        "name": "r__echo",
        "input": "hi",
    }
    echo = function_call("fc_echo", "r__echo", '{"text": "hi"}')
    script = [response([searched, custom, echo]), response([output_message("Done.")])]
    with replay_openai(script) as replay:
        async with (
            connected(r=peer) as c,
            OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
            client_for(replay) as client,
        ):
            await adapter.add_peer("r", c["r"])
            with anyio.fail_after(SAFETY * 2):
                result = await run_responses(client, adapter, model="m", input="go")
    assert (result.text, result.stopped, result.turns, result.tool_calls) == ("Done.", "answer", 2, 2)
    _, second = replay.bodies(RESPONSES)
    items = second["input"]
    assert items[1:4] == [searched, custom, echo]
    assert items[4:] == [
        {
            "type": "custom_tool_call_output",
            "call_id": "ct_call",
            "output": "Error: custom (free-form) tool calls are not served here; "
            "call one of the functions offered instead",
        },
        {"type": "function_call_output", "call_id": "fc_echo", "output": '{"text": "hi"}'},
    ]
    assert peer.calls == [("echo", {"text": "hi"})]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_further_create_arguments_are_exactly_the_sdks_own(api: str) -> None:
    # The loop's typed options must neither miss an argument of `create` nor invent one.
    import inspect

    from openai.resources.chat.completions import AsyncCompletions
    from openai.resources.responses import AsyncResponses

    from mcpx_router.model._loop_options import ChatCreateOptions, ResponsesCreateOptions

    create, options, set_by_loop = {
        "chat": (AsyncCompletions.create, ChatCreateOptions, {"model", "messages", "tools"}),
        "responses": (AsyncResponses.create, ResponsesCreateOptions, {"model", "input", "tools"}),
    }[api]
    sdk = set(inspect.signature(create).parameters) - {"self"}
    assert set_by_loop <= sdk
    assert options.__required_keys__ == frozenset()
    assert options.__optional_keys__ == sdk - set_by_loop
