"""Every tool-call shape of the `openai` SDK, decided: served, answered with an error, or passed over.

`dispatch` is driven with real SDK objects (built with `model_validate` from the SDK's own types)
and with dicts, against a real in-process MCP server that records what it is asked to run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageCustomToolCall,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from openai.types.chat.chat_completion_message import FunctionCall
from openai.types.chat.parsed_function_tool_call import ParsedFunctionToolCall
from openai.types.responses import Response, ResponseCustomToolCall, ResponseFunctionToolCall
from openai.types.responses.response_output_item import ResponseOutputItem

from mcpx_router import OpenAIPeerToolAdapter, ToolCallFormatError
from mcpx_router.model.calls._calls import PASSED_OVER

from ...support._model_peers import RecordingPeer, connected
from ...support.sdk_examples import UNIONS, example, item_types, members

pytestmark = pytest.mark.anyio

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
SERVED = {"function", "function_call"}
"""Item types that are calls to our functions."""
REFUSED_CUSTOM = {"custom", "custom_tool_call"}
"""Item types answered with an error: free-form tools are not ours."""
OUTPUT_ITEMS = members(ResponseOutputItem)
RESPONSES_ITEMS = list(
    dict.fromkeys(
        cls
        for name in ("ResponseOutputItem", "ResponseItem", "ResponseInputItem")
        for cls in members(UNIONS[name])
    )
)
"""Every class of item the Responses API sends or takes, once each."""


@pytest.fixture
async def served() -> AsyncIterator[tuple[OpenAIPeerToolAdapter, RecordingPeer]]:
    """An adapter publishing `p__echo` (which answers with its arguments as JSON)."""
    peer = RecordingPeer("p").tool("echo", TEXT)
    async with connected(p=peer) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", c["p"])
        yield adapter, peer


def args(text: str) -> str:
    return json.dumps({"text": text})


def chat_call(call_id: str, name: str = "p__echo", arguments: str = args("hi")) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def echoed(text: str) -> str:
    return json.dumps({"text": text}, sort_keys=True)


# -- the decision table ----------------------------------------------------------------------


@pytest.mark.parametrize("union", list(UNIONS))
def test_every_item_type_of_the_sdk_is_decided(union: str) -> None:
    for cls in members(UNIONS[union]):
        for kind in item_types(cls):
            assert kind in SERVED | REFUSED_CUSTOM | PASSED_OVER.keys(), f"{cls.__name__}: {kind!r} undecided"


@pytest.mark.parametrize("cls", RESPONSES_ITEMS, ids=[c.__name__ for c in RESPONSES_ITEMS])
@pytest.mark.parametrize("form", ["sdk", "dict"])
async def test_each_responses_item(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], cls: Any, form: str
) -> None:
    adapter, peer = served
    fields: dict[str, Any] = {"call_id": "c1", "name": "p__echo", "arguments": args("from " + cls.__name__)}
    item = example(cls, **{k: v for k, v in fields.items() if k in cls.model_fields})
    passed = item if form == "sdk" else item.model_dump(mode="json", by_alias=True, exclude_none=True)
    kind = item.type
    if kind is None:  # input items whose type may be left out: a message by role, a reference by id
        with pytest.raises(ToolCallFormatError, match=f"item 0 is not a tool call: {type(passed).__name__}"):
            await adapter.dispatch([passed])
        assert peer.calls == []
        return
    answers = await adapter.dispatch([passed])
    single = await adapter.dispatch(passed)  # on its own, as a one-element list
    assert single == answers
    if kind == "function_call":
        assert answers == [
            {"type": "function_call_output", "call_id": "c1", "output": echoed("from " + cls.__name__)}
        ]
        assert peer.calls == [("echo", {"text": "from " + cls.__name__})] * 2
    elif kind == "custom_tool_call":
        assert answers == [
            {
                "type": "custom_tool_call_output",
                "call_id": "c1",
                "output": "Error: custom (free-form) tool calls are not served here; "
                "call one of the functions offered instead",
            }
        ]
        assert peer.calls == []
    else:
        assert answers == []
        assert peer.calls == []
        with pytest.raises(ToolCallFormatError, match=PASSED_OVER[kind]):
            await adapter.execute_function_call(passed)


async def test_a_whole_response_answers_its_client_calls_and_passes_over_the_rest(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer],
) -> None:
    adapter, peer = served
    output = [example(cls) for cls in OUTPUT_ITEMS if item_types(cls)[0] not in REFUSED_CUSTOM | SERVED]
    output.insert(3, example(ResponseFunctionToolCall, call_id="f1", name="p__echo", arguments=args("a")))
    output.insert(7, example(ResponseCustomToolCall, call_id="k1", name="p__echo", input="free"))
    output.append(example(ResponseFunctionToolCall, call_id="f2", name="p__echo", arguments=args("b")))
    response = example(Response, output=[item.model_dump(mode="json", by_alias=True) for item in output])
    expected = [
        {"type": "function_call_output", "call_id": "f1", "output": echoed("a")},
        {"type": "custom_tool_call_output", "call_id": "k1"},
        {"type": "function_call_output", "call_id": "f2", "output": echoed("b")},
    ]
    for passed in (response, response.model_dump(mode="json", by_alias=True), response.output):
        answers = await adapter.dispatch(passed)
        assert [a["call_id"] for a in answers] == [e["call_id"] for e in expected]
        assert answers[0] == expected[0] and answers[2] == expected[2]
        assert answers[1]["type"] == "custom_tool_call_output" and answers[1]["output"].startswith("Error:")
    assert sorted(call["text"] for _, call in peer.calls) == ["a", "a", "a", "b", "b", "b"]


async def test_items_of_an_unknown_type_pass_only_inside_a_whole_response(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer],
) -> None:
    adapter, peer = served
    future = {"type": "web_fetch_call", "id": "w1", "status": "completed"}
    call = {"type": "function_call", "call_id": "f1", "name": "p__echo", "arguments": args("a")}
    response = {"object": "response", "id": "r", "output": [future, call]}
    assert await adapter.dispatch(response) == [
        {"type": "function_call_output", "call_id": "f1", "output": echoed("a")}
    ]
    with pytest.raises(
        ToolCallFormatError, match=r"item 0 is not a tool call: dict \{.*'type': 'web_fetch_call'"
    ):
        await adapter.dispatch([future, call])
    assert peer.calls == [("echo", {"text": "a"})]


async def test_chat_calls_messages_and_legacy_calls(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer],
) -> None:
    adapter, peer = served
    function = example(
        ChatCompletionMessageFunctionToolCall, id="c1", function={"name": "p__echo", "arguments": args("1")}
    )
    custom = example(ChatCompletionMessageCustomToolCall, id="c2", custom={"name": "p__echo", "input": "x"})
    message = example(ChatCompletionMessage, tool_calls=[function.model_dump(), custom.model_dump()])
    expected = [
        {"role": "tool", "tool_call_id": "c1", "content": echoed("1")},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": "Error: custom (free-form) tool calls are not served here; "
            "call one of the functions offered instead",
        },
    ]
    assert await adapter.dispatch(message) == expected
    assert await adapter.dispatch(message.model_dump()) == expected
    assert await adapter.dispatch(message.tool_calls) == expected
    assert await adapter.dispatch(function) == expected[:1]
    parsed = example(ParsedFunctionToolCall, id="c1", function={"name": "p__echo", "arguments": args("1")})
    assert await adapter.dispatch([parsed]) == expected[:1]
    assert await adapter.dispatch(chat_call("c1", arguments=args("1"))) == expected[:1]
    # A message without calls, and what message.tool_calls is then, have no answers.
    assert await adapter.dispatch(example(ChatCompletionMessage, content="hello")) == []
    assert await adapter.dispatch({"role": "assistant", "content": "hello"}) == []
    assert await adapter.dispatch(None) == []
    # A legacy function_call on the message is answered as a function message.
    legacy = example(ChatCompletionMessage, function_call={"name": "p__echo", "arguments": args("old")})
    assert await adapter.dispatch(legacy) == [
        {"role": "function", "name": "p__echo", "content": echoed("old")}
    ]
    assert await adapter.dispatch(FunctionCall(name="p__echo", arguments=args("f"))) == [
        {"role": "function", "name": "p__echo", "content": echoed("f")}
    ]
    assert len(peer.calls) == 8


@pytest.mark.parametrize(
    ("passed", "message"),
    [
        pytest.param("p__echo", r"dispatch takes a list of tool calls, not str 'p__echo'", id="str"),
        pytest.param(b"{}", r"dispatch takes a list of tool calls, not bytes b'\{\}'", id="bytes"),
        pytest.param(42, r"not a tool call: int 42", id="int"),
        pytest.param(
            [{"type": "function", "function": {"name": "p__echo", "parameters": {"type": "object"}}}],
            r"a tool definition \(as get_openai_tools gives\), not a tool call",
            id="chat-tool-definition",
        ),
        pytest.param(
            {"type": "function", "name": "p__echo", "parameters": {}, "strict": False},
            r"a tool definition",
            id="responses-tool-definition",
        ),
        pytest.param({"id": 1}, r"not a tool call: dict \{'id': 1\}", id="a-dict-that-is-no-call"),
        pytest.param([chat_call("a"), 7], r"item 1 is not a tool call: int 7", id="item-of-a-list"),
        pytest.param(
            example(ChatCompletion, choices=[]), r"not a whole completion \(ChatCompletion", id="completion"
        ),
        pytest.param(
            [ChoiceDeltaToolCall(index=0, id="c", type="function", function={"name": "p__echo"})],
            r"a fragment of a streamed tool call",
            id="stream-fragment",
        ),
        pytest.param(
            [{"type": "response.output_item.done", "item": {}}],
            r"This is a streaming event",
            id="stream-event",
        ),
        pytest.param(
            {"role": "assistant", "tool_calls": "p__echo"},
            r"the message's tool_calls is not a list",
            id="bad-msg",
        ),
        pytest.param(
            {"object": "response", "output": 3}, r"the response passed to dispatch has no output", id="resp"
        ),
    ],
)
async def test_what_is_no_tool_call_is_refused_by_name(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], passed: Any, message: str
) -> None:
    adapter, peer = served
    with pytest.raises(ToolCallFormatError, match=message):
        await adapter.dispatch(passed)
    assert peer.calls == []


async def test_unknown_names_are_answered_with_close_names_and_a_bounded_message(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer],
) -> None:
    adapter, peer = served
    long_name = "p__echo" + "o" * 10_000
    answers = await adapter.dispatch(
        [
            chat_call("1", "P__Echo"),
            chat_call("2", "echo"),
            chat_call("3", long_name),
            chat_call("4", "\ud800"),
        ]
    )
    assert [a["content"] for a in answers] == [
        "Error: there is no tool named 'P__Echo'. Did you mean 'p__echo'? "
        "Call only the functions offered in this conversation.",
        "Error: there is no tool named 'echo'. Did you mean 'p__echo'? "
        "Call only the functions offered in this conversation.",
        f"Error: there is no tool named {long_name[:64]!r}… (10007 characters). "
        "Call only the functions offered in this conversation.",
        "Error: there is no tool named '\\ud800'. Call only the functions offered in this conversation.",
    ]
    assert peer.calls == []


@pytest.mark.parametrize("call_id", [None, "", 7])
@pytest.mark.parametrize("shape", ["chat", "responses", "custom", "chat-custom"])
async def test_a_call_without_a_usable_id_refuses_the_batch_before_anything_runs(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], call_id: Any, shape: str
) -> None:
    """Its answer would carry no usable id, a message the API refuses: nothing runs, the whole
    batch is refused, as for any other malformed input."""
    adapter, peer = served
    call: dict[str, Any] = {
        "chat": {"id": call_id, "type": "function", "function": {"name": "p__echo", "arguments": args("x")}},
        "responses": {"type": "function_call", "call_id": call_id, "name": "p__echo", "arguments": "{}"},
        "custom": {"type": "custom_tool_call", "call_id": call_id, "name": "p__echo", "input": "x"},
        "chat-custom": {"id": call_id, "type": "custom", "custom": {"name": "p__echo", "input": "x"}},
    }[shape]
    field = "id" if shape.startswith("chat") else "call_id"
    with pytest.raises(ToolCallFormatError) as info:
        await adapter.dispatch([chat_call("ok"), call])
    assert str(info.value).startswith(f"tool call 1 has no usable {field} (got {call_id!r}): its answer ")
    with pytest.raises(ToolCallFormatError, match=f"^the tool call has no usable {field} "):
        await adapter.dispatch(call)
    assert peer.calls == []


async def test_a_call_without_its_id_field_is_refused_too(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer],
) -> None:
    adapter, peer = served
    for call in (
        {"type": "function", "function": {"name": "p__echo", "arguments": args("x")}},
        {"type": "function_call", "name": "p__echo", "arguments": args("x")},
    ):
        with pytest.raises(ToolCallFormatError, match=r"has no usable (call_)?id \(got None\)"):
            await adapter.dispatch({"role": "assistant", "content": None, "tool_calls": [call]})
    # A legacy function_call has no id by design: it is answered by name.
    legacy = {"name": "p__echo", "arguments": args("hi")}
    answered = await adapter.dispatch(legacy)
    assert answered == [{"role": "function", "name": "p__echo", "content": echoed("hi")}]
    assert peer.calls == [("echo", {"text": "hi"})]
