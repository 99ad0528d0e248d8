"""Tool calls written as text, through the loops and `dispatch`, against the real `openai` SDK
over HTTP on loopback: the conversation sent next must be one the API takes (the assistant
message carries the calls as `tool_calls`, each answered once under its id)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from openai import AsyncOpenAI, OpenAI

from mcpx_router import OpenAIPeerToolAdapter, ToolCallFormatError, sync
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.sync import loop as sync_loop

from ..support._model_peers import RecordingPeer, connected
from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    chat_completion,
    output_message,
    replay_openai,
    response,
    tool_call,
)

pytestmark = pytest.mark.anyio

SAFETY = 10.0
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
ASSISTANT_KEYS = {"role", "content", "refusal", "audio", "function_call", "tool_calls", "name"}
HERMES = 'Let me echo that.\n<tool_call>\n{"name": "r__echo", "arguments": {"text": "hi"}}\n</tool_call>'


@asynccontextmanager
async def served() -> AsyncIterator[tuple[OpenAIPeerToolAdapter, RecordingPeer]]:
    peer = RecordingPeer("r").tool("echo", TEXT)
    async with connected(r=peer) as c, OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter:
        await adapter.add_peer("r", c["r"])
        yield adapter, peer


def client_for(base_url: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def check_chat_messages(messages: list[dict[str, Any]]) -> None:
    """What the API asks of a conversation: assistant messages of its own fields, every call id
    a non-empty string answered by exactly one tool message that follows it."""
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            assert set(message) <= ASSISTANT_KEYS
            assert not pending
            for call in message.get("tool_calls") or []:
                assert isinstance(call["id"], str) and call["id"]
                assert call["type"] == "function" and isinstance(call["function"]["arguments"], str)
                pending.add(call["id"])
        elif message["role"] == "tool":
            pending.remove(message["tool_call_id"])
    assert not pending


# The SDK leaves a Chat stream's async generators open at `[DONE]`; trio warns of them (see test_loop).
@pytest.mark.filterwarnings(r"ignore:Async generator '(openai\._streaming|http(x|core)2)\.:ResourceWarning")
@pytest.mark.parametrize("stream", [False, True])
async def test_a_hermes_call_written_as_text_is_run_and_the_conversation_stays_valid(stream: bool) -> None:
    script = [chat_completion({"content": HERMES}), chat_completion({"content": "It said hi."})]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY * 2):
                result = await run_chat(
                    client,
                    adapter,
                    model="m",
                    messages=[{"role": "user", "content": "echo hi"}],
                    text_calls=True,
                    stream=stream,
                )
    assert (result.text, result.stopped, result.turns, result.tool_calls) == ("It said hi.", "answer", 2, 1)
    assert peer.calls == [("echo", {"text": "hi"})]
    second = replay.bodies(CHAT)[1]["messages"]
    check_chat_messages(second)
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assistant, answer = second[1], second[2]
    assert assistant["content"] == "Let me echo that."
    [call] = assistant["tool_calls"]
    assert call["id"].startswith("call_text_")
    assert call["function"] == {"name": "r__echo", "arguments": '{"text": "hi"}'}
    assert answer == {"role": "tool", "tool_call_id": call["id"], "content": '{"text": "hi"}'}
    assert result.messages[:3] == second


async def test_without_text_calls_the_text_is_the_answer_and_nothing_runs() -> None:
    with replay_openai([chat_completion({"content": HERMES})]) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            result = await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": "x"}])
    assert (result.text, result.turns, peer.calls) == (HERMES, 1, [])


@pytest.mark.parametrize(
    "text",
    [
        "I could call r__echo for you, or echo on its own.",
        'Here is an example: {"name": "r__echo", "arguments": {"text": "hi"}} - shall I?',
        '[TOOL_CALLS][{"name": "r__echo", "arguments": "{\\"text\\": "}]',
    ],
)
async def test_text_that_is_no_recoverable_call_ends_the_conversation_unchanged(text: str) -> None:
    with replay_openai([chat_completion({"content": text})]) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            result = await run_chat(
                client, adapter, model="m", messages=[{"role": "user", "content": "x"}], text_calls=True
            )
    assert (result.text, result.stopped, result.turns, peer.calls) == (text, "answer", 1, [])
    assert result.messages[-1] == {"role": "assistant", "content": text}


async def test_a_tools_own_name_in_pythonic_form_calls_its_public_name() -> None:
    script = [
        chat_completion({"content": '[echo(text="a"), echo(text="b")]'}),
        chat_completion({"content": "ok"}),
    ]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            result = await run_chat(
                client, adapter, model="m", messages=[{"role": "user", "content": "x"}], text_calls=True
            )
    assert sorted(arguments["text"] for _, arguments in peer.calls) == ["a", "b"]
    second = replay.bodies(CHAT)[1]["messages"]
    check_chat_messages(second)
    assert second[1]["content"] is None
    assert [c["function"]["name"] for c in second[1]["tool_calls"]] == ["r__echo", "r__echo"]
    assert result.tool_calls == 2


async def test_native_tool_calls_are_answered_and_text_beside_them_is_not_read() -> None:
    native = {"content": HERMES, "tool_calls": [tool_call("c1", "r__echo", '{"text": "native"}')]}
    script = [chat_completion(native), chat_completion({"content": "done"})]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            await run_chat(
                client, adapter, model="m", messages=[{"role": "user", "content": "x"}], text_calls=True
            )
    assert peer.calls == [("echo", {"text": "native"})]
    check_chat_messages(replay.bodies(CHAT)[1]["messages"])


async def test_a_responses_text_call_becomes_a_function_call_item_answered_under_its_call_id() -> None:
    written = output_message('{"name": "echo", "parameters": {"text": "hi"}}')
    script = [response([written]), response([output_message("It said hi.")])]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            result = await run_responses(client, adapter, model="m", input="echo hi", text_calls=True)
    assert (result.text, result.tool_calls, peer.calls) == ("It said hi.", 1, [("echo", {"text": "hi"})])
    items = replay.bodies(RESPONSES)[1]["input"]
    assert [item.get("type", item.get("role")) for item in items] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    call, output = items[1], items[2]
    assert call["name"] == "r__echo" and json.loads(call["arguments"]) == {"text": "hi"}
    assert call["call_id"].startswith("call_text_") and output["call_id"] == call["call_id"]
    assert output["output"] == '{"text": "hi"}'


async def test_a_responses_message_keeps_its_prose_before_its_calls() -> None:
    written = output_message("On it.<|python_tag|>" + '{"name": "r__echo", "parameters": {"text": "x"}}')
    script = [response([written]), response([output_message("done")])]
    with replay_openai(script) as replay:
        async with served() as (adapter, _), client_for(replay.base_url) as client:
            await run_responses(client, adapter, model="m", input="go", text_calls=True)
    items = replay.bodies(RESPONSES)[1]["input"]
    assert [item.get("type", item.get("role")) for item in items] == [
        "user",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert items[1]["id"] == written["id"]
    assert items[1]["content"] == [{"type": "output_text", "text": "On it.", "annotations": []}]


async def test_dispatch_with_text_calls_answers_under_the_ids_recover_text_calls_gives() -> None:
    message = {"role": "assistant", "content": HERMES}
    async with served() as (adapter, peer):
        written = adapter.recover_text_calls(message)
        assert written is not None
        answers = await adapter.dispatch(message, text_calls=True)
        assert [a["tool_call_id"] for a in answers] == [c["id"] for c in written["tool_calls"]]
        assert await adapter.dispatch(message) == []  # without text_calls, no calls
        assert adapter.recover_text_calls({"role": "assistant", "content": "Just prose."}) is None
        assert await adapter.dispatch({"role": "assistant", "content": "r__echo"}, text_calls=True) == []
        reply = response([output_message(HERMES)])
        items = adapter.recover_text_call_items(reply)
        assert items is not None
        answers = await adapter.dispatch(reply, text_calls=True)
        assert [a["call_id"] for a in answers] == [
            i["call_id"] for i in items if i["type"] == "function_call"
        ]
    assert peer.calls == [("echo", {"text": "hi"})] * 2


async def test_a_reply_with_a_call_without_an_id_fails_before_anything_runs() -> None:
    bad = {"content": None, "tool_calls": [tool_call("", "r__echo", '{"text": "hi"}')]}
    with replay_openai([chat_completion(bad)]) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with pytest.raises(ToolCallFormatError, match=r"has no usable id \(got ''\)"):
                await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": "x"}])
    assert peer.calls == []


def echo_server() -> MCPServer:
    server = MCPServer("r")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_sync_loops_recover_text_calls_too(api: str) -> None:
    if api == "chat":
        script = [chat_completion({"content": HERMES}), chat_completion({"content": "done"})]
    else:
        script = [response([output_message(HERMES)]), response([output_message("done")])]
    with replay_openai(script) as replay, sync.Router() as router:
        router.join("r", echo_server())
        with OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            if api == "chat":
                prompt: list[Any] = [{"role": "user", "content": "x"}]
                result = sync_loop.run_chat(client, router, model="m", messages=prompt, text_calls=True)
                check_chat_messages(replay.bodies(CHAT)[1]["messages"])
            else:
                result = sync_loop.run_responses(client, router, model="m", input="x", text_calls=True)
                items = replay.bodies(RESPONSES)[1]["input"]
                [call] = [i for i in items if i.get("type") == "function_call"]
                [output] = [i for i in items if i.get("type") == "function_call_output"]
                assert output == {"type": "function_call_output", "call_id": call["call_id"], "output": "hi"}
    assert (result.text, result.tool_calls) == ("done", 1)


def test_chat_command_takes_text_calls(tmp_path: Path) -> None:
    from ..cli.test_chat_cli import TINY, chat, write_config

    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    written = '<tool_call>{"name": "tiny__echo", "arguments": {"text": "hello"}}</tool_call>'
    script = [chat_completion({"content": written}), chat_completion({"content": "It said hello."})]
    with replay_openai(script) as replay:
        done = chat(config, "--text-calls", "--prompt", "Echo hello.", base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    check_chat_messages(replay.bodies(CHAT)[1]["messages"])
    assert '  call tiny__echo({"text": "hello"})' in done.stdout.splitlines()
    assert "  -> tiny__echo: hello" in done.stdout.splitlines()


def test_chat_command_says_when_a_reply_holds_a_call_without_an_id(tmp_path: Path) -> None:
    from ..cli.test_chat_cli import TINY, chat, write_config

    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    bad = {
        "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "tiny__echo", "arguments": "{}"}}],
    }
    with replay_openai([chat_completion(bad)]) as replay:
        done = chat(config, "--prompt", "Echo.", base_url=replay.base_url)
    assert done.returncode == 1
    assert "mcpx-router: the model endpoint sent tool calls that cannot be answered: " in done.stderr
    assert "has no usable id (got None)" in done.stderr


async def test_a_search_written_as_text_is_run_in_a_tool_search_conversation() -> None:
    written = '<tool_call>{"name": "find_tools", "arguments": {"query": "echo a text"}}</tool_call>'
    script = [
        chat_completion({"content": written}),
        chat_completion({"content": None, "tool_calls": [tool_call("c2", "r__echo", '{"text": "hi"}')]}),
        chat_completion({"content": "It said hi."}),
    ]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY * 2):
                result = await run_chat(
                    client,
                    adapter,
                    model="m",
                    messages=[{"role": "user", "content": "echo hi"}],
                    text_calls=True,
                    tool_search=True,
                )
    assert (result.text, result.turns, peer.calls) == ("It said hi.", 3, [("echo", {"text": "hi"})])
    second = replay.bodies(CHAT)[1]["messages"]
    check_chat_messages(second)
    [search] = second[1]["tool_calls"]
    assert search["function"]["name"] == "find_tools"
    assert second[2]["tool_call_id"] == search["id"] and "r__echo" in second[2]["content"]


# --- unknown names and replies cut by max_tokens ----------------------------------------------

CUT_LINES = (
    '{"name": "r__echo", "arguments": {"text": "one"}}\n'
    '{"name": "r__echo", "arguments": {"text": "two"}}\n'
    '{"name": "r__echo", "arguments": {"te'
)


def cut(completion: dict[str, Any]) -> dict[str, Any]:
    """A Chat completion whose reply was cut by its token limit."""
    completion["choices"][0]["finish_reason"] = "length"
    return completion


def incomplete(done: dict[str, Any]) -> dict[str, Any]:
    """A Responses reply cut by its token limit."""
    return {**done, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}


@pytest.mark.parametrize("search", [False, True])
async def test_a_written_call_of_an_unknown_name_is_answered_with_the_close_names(search: bool) -> None:
    written = '<tool_call>{"name": "r__eho", "arguments": {"text": "hi"}}</tool_call>'
    again = '<tool_call>{"name": "r__echo", "arguments": {"text": "hi"}}</tool_call>'
    script = [
        chat_completion({"content": written}),
        chat_completion({"content": again}),
        chat_completion({"content": "It said hi."}),
    ]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY * 2):
                result = await run_chat(
                    client,
                    adapter,
                    model="m",
                    messages=[{"role": "user", "content": "echo hi"}],
                    text_calls=True,
                    tool_search=search,
                )
    assert (result.text, result.turns, peer.calls) == ("It said hi.", 3, [("echo", {"text": "hi"})])
    second = replay.bodies(CHAT)[1]["messages"]
    check_chat_messages(second)
    assert second[1]["tool_calls"][0]["function"]["name"] == "r__eho"
    assert second[2]["content"].startswith("Error: there is no tool named 'r__eho'. Did you mean 'r__echo'?")


async def test_responses_a_written_call_of_an_unknown_name_is_answered() -> None:
    written = output_message('{"name": "save_note", "arguments": {"text": "milk"}}')
    script = [response([written]), response([output_message("ok")])]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY):
                result = await run_responses(
                    client, adapter, model="m", input="note milk", text_calls=True, tool_search=True
                )
    assert (result.text, result.turns, peer.calls) == ("ok", 2, [])
    items = replay.bodies(RESPONSES)[1]["input"]
    [call] = [i for i in items if i.get("type") == "function_call"]
    [output] = [i for i in items if i.get("type") == "function_call_output"]
    assert call["name"] == "save_note" and output["call_id"] == call["call_id"]
    assert output["output"].startswith("Error: there is no tool named 'save_note'.")
    assert "use the tool search" in output["output"]


async def test_prose_and_code_stay_prose_with_unknown_names_read() -> None:
    texts = ["Call save_note to keep it.", '```python\nsave_note("milk")\n```', "save_note(text='milk')"]
    script = [chat_completion({"content": text}) for text in texts]
    with replay_openai(script) as replay:
        async with served() as (adapter, _), client_for(replay.base_url) as client:
            for text in texts:
                messages: list[Any] = [{"role": "user", "content": "x"}]
                result = await run_chat(client, adapter, model="m", messages=messages, text_calls=True)
                assert (result.text, result.stopped, result.tool_calls) == (text, "answer", 0)


@pytest.mark.parametrize(
    "text",
    [
        CUT_LINES,
        '<tool_call>{"name": "r__echo", "arguments": {"text": "one"}}</tool_call>\n'
        '<tool_call>{"name": "r__echo", "arguments": {"text": "two"}}</tool_call>\n'
        '<tool_call>{"name": "r__echo", "argu',
        '[{"name": "r__echo", "arguments": {"text": "one"}}, '
        '{"name": "r__echo", "arguments": {"text": "two"}}, {"na',
        '<|python_tag|>{"name": "r__echo", "arguments": {"text": "one"}}; '
        '{"name": "r__echo", "arguments": {"text": "two"}}; {"name": "r__',
    ],
)
async def test_a_reply_cut_by_max_tokens_keeps_its_complete_calls(text: str) -> None:
    script = [cut(chat_completion({"content": text})), chat_completion({"content": "done"})]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY):
                messages: list[Any] = [{"role": "user", "content": "echo one and two"}]
                result = await run_chat(
                    client, adapter, model="m", messages=messages, text_calls=True, max_tokens=40
                )
    assert sorted(arguments["text"] for _, arguments in peer.calls) == ["one", "two"]
    assert (result.text, result.tool_calls) == ("done", 2)
    second = replay.bodies(CHAT)[1]["messages"]
    check_chat_messages(second)
    assert len(second[1]["tool_calls"]) == 2


async def test_a_reply_not_cut_keeps_nothing_of_a_broken_sequence() -> None:
    script = [chat_completion({"content": CUT_LINES})]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            messages: list[Any] = [{"role": "user", "content": "x"}]
            result = await run_chat(client, adapter, model="m", messages=messages, text_calls=True)
    assert (result.text, result.stopped, peer.calls) == (CUT_LINES, "answer", [])


async def test_responses_a_reply_cut_by_max_output_tokens_keeps_its_complete_calls() -> None:
    script = [incomplete(response([output_message(CUT_LINES)])), response([output_message("done")])]
    with replay_openai(script) as replay:
        async with served() as (adapter, peer), client_for(replay.base_url) as client:
            with anyio.fail_after(SAFETY):
                result = await run_responses(client, adapter, model="m", input="x", text_calls=True)
    assert sorted(arguments["text"] for _, arguments in peer.calls) == ["one", "two"]
    assert result.text == "done"


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_sync_loops_answer_unknown_names_and_keep_complete_calls(api: str) -> None:
    unknown = '<tool_call>{"name": "r__eho", "arguments": {"text": "zero"}}</tool_call>'
    if api == "chat":
        script = [
            chat_completion({"content": unknown}),
            cut(chat_completion({"content": CUT_LINES})),
            chat_completion({"content": "done"}),
        ]
    else:
        script = [
            response([output_message(unknown)]),
            incomplete(response([output_message(CUT_LINES)])),
            response([output_message("done")]),
        ]
    with replay_openai(script) as replay, sync.Router() as router:
        router.join("r", echo_server())
        with OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            if api == "chat":
                prompt: list[Any] = [{"role": "user", "content": "x"}]
                result = sync_loop.run_chat(client, router, model="m", messages=prompt, text_calls=True)
                second = replay.bodies(CHAT)[1]["messages"]
                check_chat_messages(second)
                answer = second[2]["content"]
            else:
                result = sync_loop.run_responses(client, router, model="m", input="x", text_calls=True)
                items = replay.bodies(RESPONSES)[1]["input"]
                [answer] = [i["output"] for i in items if i.get("type") == "function_call_output"]
    assert answer.startswith("Error: there is no tool named 'r__eho'. Did you mean 'r__echo'?")
    assert (result.text, result.tool_calls) == ("done", 3)
