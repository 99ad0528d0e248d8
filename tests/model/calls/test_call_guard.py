"""The loops' guard on one turn's calls: identical calls run once and share the answer unless the
tool is marked read-only or idempotent, and a turn runs at most `max_calls_per_turn` calls. The
plan alone, then the loops through the real `openai` SDK against the replay endpoint with real
in-process MCP servers counting their calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, OpenAI

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, UsageError, sync
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.model.calls._call_guard import CallGuard, canonical
from mcpx_router.sync import loop as sync_loop

from ...support._model_peers import RecordingPeer, echo_arguments
from ...support._openai_replay import (
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

SAFETY = 30.0
NOTE = json.dumps({"title": "t", "text": "milk"})
SAME_NOTE = json.dumps({"text": "milk", "title": "t"})  # the same arguments, keys in another order


def peer() -> RecordingPeer:
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "text": {"type": "string"}}}
    branch = {"type": "object", "properties": {"branch": {"type": "string"}}}
    rec = RecordingPeer("repo").tool("add_note", schema, description="Save a note.")
    rec.tool("checkout", branch, description="Switch to a branch.")
    read_only = mt.ToolAnnotations(read_only_hint=True)
    rec.tools.append(mt.Tool(name="status", input_schema={"type": "object"}, annotations=read_only))
    rec.handlers["status"] = echo_arguments
    return rec


@asynccontextmanager
async def adapter_with(rec: RecordingPeer) -> AsyncIterator[OpenAIPeerToolAdapter]:
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        await adapter.add_peer("repo", await stack.enter_async_context(mcp.Client(rec.server())))
        yield adapter


class Marked:
    def __init__(self, name: str, repeat_safe: bool) -> None:
        self.name, self.repeat_safe = name, repeat_safe


def test_the_plan_of_a_turn() -> None:
    tools = [Marked("add", False), Marked("read", True)]
    guard = CallGuard(lambda: tools, dedupe=True, max_calls=3)
    calls = [
        tool_call("a", "add", '{"x": 1, "y": 2}'),
        tool_call("b", "add", '{"y":2,"x":1}'),
        tool_call("c", "read", "{}"),
        tool_call("d", "read", "{}"),
        tool_call("e", "add", '{"x": 2}'),
        tool_call("f", "add", '{"x": 2}'),
    ]
    plan = guard.plan(calls)
    assert [c["id"] for c in plan.to_dispatch] == ["a", "c", "d"]
    assert plan.shared == {1: 0, 5: 4} and plan.refused == {4}
    answers = plan.answers([{"role": "tool", "tool_call_id": i, "content": f"done {i}"} for i in "acd"])
    assert [a["tool_call_id"] for a in answers] == ["a", "b", "c", "d", "e", "f"]
    assert answers[1]["content"].startswith("done a [Not run again: an identical call earlier")
    assert answers[4]["content"].startswith("Error: add was not called: this turn already ran 3 tool calls")
    assert answers[5]["content"] == answers[4]["content"]  # a duplicate of a refused call is refused
    untouched = CallGuard(lambda: tools, dedupe="turn", max_calls=3).plan(calls[:1])
    assert untouched.to_dispatch is calls[:1] or untouched.to_dispatch == calls[:1]
    assert untouched.answers(["x"]) == ["x"]
    # The next turn of the same conversation: "add" with those arguments ran and succeeded.
    again = guard.plan([tool_call("g", "add", '{"y": 2, "x": 1}'), tool_call("h", "read", "{}")])
    assert [c["id"] for c in again.to_dispatch] == ["h"] and again.earlier == {0: "done a"}
    answered = again.answers([{"role": "tool", "tool_call_id": "h", "content": "read"}])
    assert answered[0] == {
        "role": "tool",
        "tool_call_id": "g",
        "content": "done a [Not run again: the same call, with the same arguments, already ran earlier "
        "in this conversation; this is what it returned. Call it again only with other arguments.]",
    }
    assert answered[1]["content"] == "read"
    off = CallGuard(lambda: tools, dedupe=False, max_calls=None).plan(calls)
    assert off.to_dispatch is calls


def test_canonical_arguments_and_the_settings_checked() -> None:
    assert canonical('{"b": 1, "a": [1, 2]}') == canonical('{"a":[1,2],"b":1}') == '{"a":[1,2],"b":1}'
    assert canonical("not json") == "not json"
    for bad in (0, -1, True, 1.5, "3"):
        with pytest.raises(UsageError, match="max_calls_per_turn must be a positive integer or None"):
            CallGuard(list, dedupe=True, max_calls=bad)  # type: ignore[arg-type]
    for bad_dedupe in (1, 0, "yes", None):
        with pytest.raises(UsageError, match="dedupe_calls must be True, False, 'turn' or 'conversation'"):
            CallGuard(list, dedupe=bad_dedupe, max_calls=None)  # type: ignore[arg-type]


def turn(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [chat_completion({"content": None, "tool_calls": calls}), chat_completion({"content": "done"})]


CALLS = [
    tool_call("n1", "repo__add_note", NOTE),
    tool_call("n2", "repo__add_note", NOTE),
    tool_call("n3", "repo__add_note", SAME_NOTE),
    tool_call("s1", "repo__status", "{}"),
    tool_call("s2", "repo__status", "{}"),
]


@pytest.mark.parametrize("dedupe", [True, False])
async def test_chat_identical_calls_run_once_unless_the_tool_is_read_only(dedupe: bool) -> None:
    rec = peer()
    async with adapter_with(rec) as adapter:
        with replay_openai(turn(CALLS)) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    messages: list[Any] = [{"role": "user", "content": "note milk"}]
                    result = await run_chat(
                        client, adapter, model="m", messages=messages, dedupe_calls=dedupe
                    )
        sent = replay.bodies(CHAT)[1]["messages"]
    notes = [c for c in rec.calls if c[0] == "add_note"]
    assert len(notes) == (1 if dedupe else 3)
    assert [c for c in rec.calls if c[0] == "status"] == [("status", {}), ("status", {})]
    answers = [m for m in sent if m["role"] == "tool"]
    assert [a["tool_call_id"] for a in answers] == ["n1", "n2", "n3", "s1", "s2"]
    assert result.text == "done" and result.tool_calls == 5
    shared = [a for a in answers if "Not run again" in a["content"]]
    assert [a["tool_call_id"] for a in shared] == (["n2", "n3"] if dedupe else [])


@pytest.mark.parametrize("limit", [3, None])
async def test_responses_a_turn_runs_at_most_the_limit(limit: int | None) -> None:
    rec = peer()
    calls = [function_call(f"c{i}", "repo__checkout", json.dumps({"branch": f"b{i}"})) for i in range(12)]
    script = [response(calls), response([output_message("done")])]
    async with adapter_with(rec) as adapter:
        with replay_openai(script) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    await run_responses(client, adapter, model="m", input="go", max_calls_per_turn=limit)
        sent = replay.bodies(RESPONSES)[1]["input"]
    outputs = [i for i in sent if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == [f"c{i}" for i in range(12)]
    ran = [c[1]["branch"] for c in rec.calls]
    if limit is None:
        assert sorted(ran) == sorted(f"b{i}" for i in range(12))
        return
    assert sorted(ran) == ["b0", "b1", "b2"]
    for output in outputs[3:]:
        assert output["output"].startswith("Error: repo__checkout was not called: this turn already ran 3")


async def test_the_default_limit_is_16_calls_a_turn() -> None:
    rec = peer()
    calls = [tool_call(f"c{i}", "repo__checkout", json.dumps({"branch": f"b{i}"})) for i in range(20)]
    async with adapter_with(rec) as adapter:
        with replay_openai(turn(calls)) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": "go"}])
        sent = replay.bodies(CHAT)[1]["messages"]
    assert len(rec.calls) == 16
    assert sum("not called" in m["content"] for m in sent if m["role"] == "tool") == 4


def test_the_sync_loop_guards_its_turns_too() -> None:
    rec = peer()
    with replay_openai(turn(CALLS)) as replay, sync.Router() as router:
        router.join("repo", InProcessPeer(rec.server()))
        with OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            result = sync_loop.run_chat(
                client, router, model="m", messages=[{"role": "user", "content": "x"}]
            )
        sent = replay.bodies(CHAT)[1]["messages"]
    assert result.text == "done"
    assert len([c for c in rec.calls if c[0] == "add_note"]) == 1 and len(rec.calls) == 3
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["n1", "n2", "n3", "s1", "s2"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "read", "gone"]), st.sampled_from(["{}", '{"x":1}', '{ "x": 1 }'])),
        max_size=12,
    ),
    st.booleans(),
    st.one_of(st.none(), st.integers(1, 6)),
    st.sampled_from(["chat", "responses"]),
)
def test_every_call_gets_one_answer_in_order_and_the_plan_holds(
    made: list[tuple[str, str]], dedupe: bool, limit: int | None, shape: str
) -> None:
    tools = [Marked("add", False), Marked("read", True)]
    guard = CallGuard(lambda: tools, dedupe=dedupe, max_calls=limit)
    if shape == "chat":
        calls: Any = [tool_call(f"c{i}", name, args) for i, (name, args) in enumerate(made)]
    else:
        calls = response([function_call(f"c{i}", name, args) for i, (name, args) in enumerate(made)])
    plan = guard.plan(calls)
    to_run = plan.to_dispatch if shape == "chat" else plan.to_dispatch["output"]
    ran = [c["id"] if shape == "chat" else c["call_id"] for c in to_run]
    key = "tool_call_id" if shape == "chat" else "call_id"
    answered = plan.answers([{key: i, "done": i} for i in ran])
    assert [a[key] for a in answered] == [f"c{i}" for i in range(len(made))]
    assert limit is None or len(ran) <= limit
    seen: dict[tuple[str, str], str] = {}
    for i, (name, args) in enumerate(made):
        same = (name, canonical(args))
        if dedupe and name != "read" and same in seen:
            assert f"c{i}" not in ran  # a duplicate never runs
        seen.setdefault(same, f"c{i}")
    if not dedupe and limit is None:
        assert ran == [f"c{i}" for i in range(len(made))]


# --- across the turns of a conversation ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["add", "read", "gone"]),
                st.sampled_from(["{}", '{"x":1}', '{ "x": 1 }']),
                st.booleans(),  # whether the peer's answer is an error
            ),
            max_size=5,
        ),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([True, "conversation", "turn", False]),
)
def test_a_call_that_succeeded_never_runs_again_in_the_conversation(
    turns: list[list[tuple[str, str, bool]]], dedupe: Any
) -> None:
    tools = [Marked("add", False), Marked("read", True)]
    guard = CallGuard(lambda: tools, dedupe=dedupe, max_calls=None)
    succeeded: dict[tuple[str, str], str] = {}  # what each call returned the first time it succeeded
    number = 0
    for made in turns:
        calls = [tool_call(f"c{number + i}", name, args) for i, (name, args, _) in enumerate(made)]
        fails = {f"c{number + i}": failed for i, (_, _, failed) in enumerate(made)}
        number += len(made)
        plan = guard.plan(calls)
        ran = [c["id"] for c in plan.to_dispatch]
        dispatched = [
            {"role": "tool", "tool_call_id": i, "content": ("Error: no" if fails[i] else f"done {i}")}
            for i in ran
        ]
        answered = plan.answers(dispatched)
        assert [a["tool_call_id"] for a in answered] == [c["id"] for c in calls]  # one each, in order
        for call, answer in zip(calls, answered, strict=True):
            key = (call["function"]["name"], canonical(call["function"]["arguments"]))
            across = dedupe in (True, "conversation") and key[0] == "add"
            if across and key in succeeded:  # never run again, and told what it returned
                assert call["id"] not in ran
                assert answer["content"].startswith(succeeded[key] + " [Not run again: the same call")
            elif key[0] != "add" or dedupe in ("turn", False):
                assert "the same call, with the same arguments" not in answer["content"]
        for call in calls:
            key = (call["function"]["name"], canonical(call["function"]["arguments"]))
            if call["id"] in ran and not fails[call["id"]] and key[0] == "add":
                succeeded.setdefault(key, f"done {call['id']}")


GROCERIES = json.dumps({"title": "Groceries", "text": "milk, eggs"})


def three_turns(api: str) -> list[dict[str, Any]]:
    if api == "chat":
        script = [
            chat_completion(
                {"content": None, "tool_calls": [tool_call(f"g{n}", "repo__add_note", GROCERIES)]}
            )
            for n in range(3)
        ]
        return [*script, chat_completion({"content": "Saved."})]
    script = [response([function_call(f"g{n}", "repo__add_note", GROCERIES)]) for n in range(3)]
    return [*script, response([output_message("Saved.")])]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("dedupe", [True, "turn", False])
async def test_the_same_note_over_three_turns_is_saved_once(api: str, dedupe: Any) -> None:
    rec = peer()
    async with adapter_with(rec) as adapter:
        with replay_openai(three_turns(api)) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    if api == "chat":
                        messages: list[Any] = [{"role": "user", "content": "note groceries"}]
                        result = await run_chat(
                            client, adapter, model="m", messages=messages, dedupe_calls=dedupe
                        )
                    else:
                        result = await run_responses(
                            client, adapter, model="m", input="note groceries", dedupe_calls=dedupe
                        )
        last = replay.bodies(CHAT if api == "chat" else RESPONSES)[3]
    assert result.text == "Saved." and result.tool_calls == 3
    items = last["messages"] if api == "chat" else last["input"]
    answers = [i.get("content", i.get("output")) for i in items if i.get("role") == "tool" or "output" in i]
    assert len(answers) == 3
    if dedupe is True:
        assert rec.calls == [("add_note", json.loads(GROCERIES))]
        for later in answers[1:]:
            assert later == (
                f"{answers[0]} [Not run again: the same call, with the same arguments, already ran earlier "
                "in this conversation; this is what it returned. Call it again only with other arguments.]"
            )
    else:
        assert len(rec.calls) == 3 and not any("Not run again" in a for a in answers)


async def test_a_read_only_call_and_a_failed_call_run_again_on_a_later_turn() -> None:
    rec = peer()
    failing = {"type": "object", "properties": {"n": {"type": "integer"}}}

    async def fail(arguments: dict[str, Any]) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="disk full")], is_error=True)

    rec.tool("flaky", failing, fail)
    script = [
        chat_completion(
            {
                "content": None,
                "tool_calls": [
                    tool_call(f"s{n}", "repo__status", "{}"),
                    tool_call(f"f{n}", "repo__flaky", '{"n": 1}'),
                ],
            }
        )
        for n in range(2)
    ]
    async with adapter_with(rec) as adapter:
        with replay_openai([*script, chat_completion({"content": "ok"})]) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
                with anyio.fail_after(SAFETY):
                    messages: list[Any] = [{"role": "user", "content": "x"}]
                    await run_chat(client, adapter, model="m", messages=messages)
    assert [name for name, _ in rec.calls] == ["status", "flaky", "status", "flaky"]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_sync_loops_guard_the_conversation_too(api: str) -> None:
    rec = peer()
    with replay_openai(three_turns(api)) as replay, sync.Router() as router:
        router.join("repo", InProcessPeer(rec.server()))
        with OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            if api == "chat":
                prompt: list[Any] = [{"role": "user", "content": "x"}]
                result = sync_loop.run_chat(client, router, model="m", messages=prompt)
            else:
                result = sync_loop.run_responses(client, router, model="m", input="x")
    assert result.text == "Saved." and rec.calls == [("add_note", json.loads(GROCERIES))]
