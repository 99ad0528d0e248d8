"""Property tests: whatever is passed to `dispatch`, it answers each recognised call once, in order,
or refuses the whole batch naming what it was given; it never raises anything else, and it never
runs anything that is not a call to a published function.

Items are generated with the outcome they must have (run, answered with an error, passed over,
refused) and mixed in every container `dispatch` takes; a second property throws arbitrary values
at it. The peer is a real in-process MCP server that records every call it runs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageCustomToolCall, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message import FunctionCall
from openai.types.responses import ResponseCustomToolCall, ResponseFunctionToolCall
from openai.types.responses.response_output_item import ResponseOutputItem

from mcpx_router import OpenAIPeerToolAdapter, ToolCallFormatError
from mcpx_router.model.calls._calls import PASSED_OVER

from ...support._model_peers import RecordingPeer, connected
from ...support.sdk_examples import example, item_types, members

pytestmark = pytest.mark.anyio

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOL = "p__echo"
MEANINGFUL = {
    "type", "id", "call_id", "function", "name", "arguments", "role", "object", "custom", "tool_calls",
    "output", "function_call", "input",
}  # fmt: skip
"""Keys that make a dict look like a call, a message or a response."""
KNOWN_TYPES = {"function", "function_call", "custom", "custom_tool_call", *PASSED_OVER}
PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
async def served() -> AsyncIterator[tuple[OpenAIPeerToolAdapter, RecordingPeer]]:
    peer = RecordingPeer("p").tool("echo", TEXT)
    async with connected(p=peer) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", c["p"])
        yield adapter, peer


@dataclass(frozen=True)
class Expect:
    """What must become of one generated item."""

    outcome: str
    """"run", "error" (answered with an error, not run), "skip" (no answer), "refuse" (no call),
    or "refuse-id" (a call without a usable id: the batch is refused too)."""
    call_id: Any = None
    """The id the answer must carry (as given, junk included)."""
    text: str = ""
    """For "run": the text the peer must receive."""
    shape: str = ""
    """How it is answered: "chat", "responses", "custom" or "legacy"."""


# -- strategies ------------------------------------------------------------------------------

ids = st.text(min_size=1, max_size=12)
junk_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.binary(max_size=8), st.text(max_size=8)
)
junk = st.recursive(
    junk_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
junk_ids = st.one_of(st.none(), st.just(""), st.integers(), st.floats(), st.lists(st.integers(), max_size=2))
junk_names = st.one_of(
    st.none(),
    st.just(""),
    st.integers(),
    st.lists(st.text(max_size=3), max_size=2),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=4),
    st.text(min_size=1, max_size=30).filter(lambda n: n != TOOL),
    st.just("x" * 10_000),
    st.just(TOOL + "\ud800"),
)
junk_arguments = st.one_of(
    st.lists(st.integers(), max_size=3),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.binary(max_size=4),
    st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
    st.sampled_from(["", "[1, 2]", "nope", "{", "null", '{"text": 5}', '"{}"', "{}"]),
    st.dictionaries(st.text(max_size=4).filter(lambda k: k != "text"), junk, max_size=2),
)


@st.composite
def served_calls(draw: st.DrawFn) -> tuple[Any, Expect]:
    """A call to the published tool with good arguments, in any shape, as SDK object or dict."""
    text = draw(st.text(max_size=20))
    arguments = json.dumps({"text": text})
    call_id = draw(ids)
    form = draw(st.sampled_from(["chat", "chat-sdk", "responses", "responses-sdk", "legacy", "legacy-sdk"]))
    if form == "chat":
        item: Any = {"id": call_id, "type": "function", "function": {"name": TOOL, "arguments": arguments}}
    elif form == "chat-sdk":
        item = example(
            ChatCompletionMessageFunctionToolCall, id=call_id, function={"name": TOOL, "arguments": arguments}
        )
    elif form == "responses":
        item = {"type": "function_call", "call_id": call_id, "name": TOOL, "arguments": arguments}
    elif form == "responses-sdk":
        item = example(ResponseFunctionToolCall, call_id=call_id, name=TOOL, arguments=arguments)
    elif form == "legacy":
        item = {"name": TOOL, "arguments": arguments}
    else:
        item = FunctionCall(name=TOOL, arguments=arguments)
    shape = form.removesuffix("-sdk")
    return item, Expect("run", call_id=None if shape == "legacy" else call_id, text=text, shape=shape)


@st.composite
def error_calls(draw: st.DrawFn) -> tuple[Any, Expect]:
    """A recognised call with something unusable in it, or a custom call: answered, never run."""
    shape = draw(st.sampled_from(["chat", "responses", "legacy"]))
    flaw = draw(
        st.sampled_from(["id", "name", "arguments", "custom"] if shape != "legacy" else ["name", "arguments"])
    )
    call_id = draw(junk_ids) if flaw == "id" else draw(ids)
    name = draw(junk_names) if flaw == "name" else TOOL
    arguments = draw(junk_arguments) if flaw == "arguments" else json.dumps({"text": "t"})
    sdk = draw(st.booleans())
    item: Any
    if flaw == "custom" and shape == "chat":
        fields = {"id": call_id, "type": "custom", "custom": {"name": TOOL, "input": "free text"}}
        item = ChatCompletionMessageCustomToolCall.model_validate(fields) if sdk else fields
    elif flaw == "custom":
        fields = {"type": "custom_tool_call", "call_id": call_id, "name": TOOL, "input": "free text"}
        item = ResponseCustomToolCall.model_validate(fields) if sdk else fields
        shape = "custom"
    elif shape == "chat":
        fields = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        # model_construct: what the SDK does with a reply it does not validate (no type checks).
        item = ChatCompletionMessageFunctionToolCall.model_construct(**fields) if sdk else fields
    elif shape == "responses":
        fields = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
        item = ResponseFunctionToolCall.model_construct(**fields) if sdk else fields
    else:
        item = {"name": name, "arguments": arguments}
    if flaw == "id":  # its answer could not be matched to it: the whole batch is refused
        return item, Expect("refuse-id", call_id=call_id, shape=shape)
    return item, Expect("error", call_id=None if shape == "legacy" else call_id, shape=shape)


passed_over_items = st.one_of(
    st.sampled_from([cls for cls in members(ResponseOutputItem) if item_types(cls)[0] in PASSED_OVER]).map(
        example
    ),
    st.builds(
        lambda kind, extra: {**extra, "type": kind},
        st.sampled_from(sorted(PASSED_OVER)),
        st.dictionaries(st.text(max_size=6).filter(lambda k: k not in MEANINGFUL), junk, max_size=3),
    ),
).map(lambda item: (item, Expect("skip")))

refused_items = st.one_of(
    junk_scalars,
    st.lists(junk, max_size=2),
    st.dictionaries(st.text(max_size=6).filter(lambda k: k not in MEANINGFUL), junk, max_size=3),
    st.builds(lambda kind: {"type": kind}, st.text(max_size=12).filter(lambda k: k not in KNOWN_TYPES)),
    st.builds(lambda a: {"arguments": a}, junk),
    st.builds(lambda c: {"role": "user", "content": c}, st.text(max_size=5)),
).map(lambda item: (item, Expect("refuse")))

KINDS = {"run": served_calls(), "error": error_calls(), "skip": passed_over_items}


@st.composite
def items(draw: st.DrawFn) -> list[tuple[Any, Expect]]:
    """Up to six items of the three accepted kinds in even measure; in a quarter of the batches,
    one item that is no call at all, somewhere among them."""
    batch = draw(st.lists(st.sampled_from(sorted(KINDS)).flatmap(KINDS.__getitem__), max_size=6))
    if draw(st.integers(0, 3)) == 3:
        batch.insert(draw(st.integers(0, len(batch))), draw(refused_items))
    return batch


def container(kind: str, values: list[Any]) -> Any:
    if kind == "tuple":
        return tuple(values)
    if kind == "generator":
        return (value for value in values)
    if kind == "message":
        return {"role": "assistant", "content": None, "tool_calls": values}
    return values


ANSWERED_AS = {"chat": "tool", "responses": "function_call_output", "custom": "custom_tool_call_output"}
"""The `role` or `type` of the answer to each shape of call."""


def answer_id(answer: dict[str, Any]) -> Any:
    return answer.get("tool_call_id", answer.get("call_id"))


def same(a: Any, b: Any) -> bool:
    return a is b or a == b


# -- properties ------------------------------------------------------------------------------


@PROPERTY
@given(batch=items(), kind=st.sampled_from(["list", "tuple", "generator", "message"]))
async def test_each_recognised_call_is_answered_once_in_order_or_the_batch_is_refused(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], batch: list[tuple[Any, Expect]], kind: str
) -> None:
    adapter, peer = served
    before = len(peer.calls)
    values = [item for item, _ in batch]
    refused = [i for i, (_, expect) in enumerate(batch) if expect.outcome.startswith("refuse")]
    if refused:
        with pytest.raises(ToolCallFormatError) as info:
            await adapter.dispatch(container(kind, values))
        first, expect = refused[0], batch[refused[0]][1]
        if expect.outcome == "refuse":
            assert f"item {first} is not a tool call: {type(values[first]).__name__}" in str(info.value)
        else:
            field = "id" if expect.shape == "chat" else "call_id"
            assert f"tool call {first} has no usable {field} (got " in str(info.value)
        assert len(peer.calls) == before
        return
    answers = await adapter.dispatch(container(kind, values))
    expected = [expect for _, expect in batch if expect.outcome != "skip"]
    assert len(answers) == len(expected)
    for answer, expect in zip(answers, expected, strict=True):
        content = answer.get("content", answer.get("output"))
        assert isinstance(content, str)
        if expect.shape == "legacy":
            assert answer["role"] == "function"
        else:
            assert same(answer_id(answer), expect.call_id)
            assert answer.get("role", answer.get("type")) == ANSWERED_AS[expect.shape]
        if expect.outcome == "run":
            assert content == json.dumps({"text": expect.text})
        else:
            assert content.startswith("Error: ")
            assert len(content) < 2_000
    ran = Counter(arguments["text"] for _, arguments in peer.calls[before:])
    assert ran == Counter(expect.text for expect in expected if expect.outcome == "run")


@PROPERTY
@given(item=st.one_of(served_calls(), error_calls(), passed_over_items))
async def test_one_call_on_its_own_is_answered_as_a_list_of_one(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], item: tuple[Any, Expect]
) -> None:
    adapter, peer = served
    value, expect = item
    if expect.outcome == "refuse-id":
        before = len(peer.calls)
        with pytest.raises(ToolCallFormatError, match="has no usable"):
            await adapter.dispatch(value)
        assert len(peer.calls) == before
        return
    answers = await adapter.dispatch(value)
    assert len(answers) == (0 if expect.outcome == "skip" else 1)
    if expect.outcome != "skip" and expect.shape != "legacy":
        assert same(answer_id(answers[0]), expect.call_id)


def generators(values: list[Any]) -> Iterator[Any]:
    yield from values


anything = st.one_of(
    junk,
    st.lists(junk, max_size=4).map(generators),
    st.dictionaries(st.sampled_from(sorted(MEANINGFUL)), junk, max_size=4),
    st.lists(st.dictionaries(st.sampled_from(sorted(MEANINGFUL)), junk, max_size=4), max_size=3),
    st.builds(
        lambda calls: {"role": "assistant", "tool_calls": calls},
        st.lists(st.dictionaries(st.sampled_from(sorted(MEANINGFUL)), junk, max_size=4), max_size=3) | junk,
    ),
    st.builds(lambda output: {"object": "response", "output": output}, junk),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=anything)
async def test_arbitrary_values_are_answered_or_refused_and_never_run(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], value: Any
) -> None:
    adapter, peer = served
    before = len(peer.calls)
    try:
        answers = await adapter.dispatch(value)
    except ToolCallFormatError as exc:
        # The message names what it got: the value's type, or the offending part and its type.
        message = str(exc)
        part = r"(item \d+ is not a tool call|tool_calls is not a list|has no output list): \w+ "
        unmatched = r"has no usable (call_)?id \(got "
        assert type(value).__name__ in message or re.search(part, message) or re.search(unmatched, message)
    else:
        assert isinstance(answers, list)
        for answer in answers:
            content = answer.get("content", answer.get("output"))
            assert isinstance(content, str) and content.startswith("Error: ")
    # Names are junk here (never the published one), so nothing may have run.
    assert len(peer.calls) == before


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=junk, extra=st.dictionaries(st.text(max_size=6), junk, max_size=3), as_json=st.booleans())
async def test_any_argument_values_for_a_published_tool_get_one_answer(
    served: tuple[OpenAIPeerToolAdapter, RecordingPeer], text: Any, extra: dict[str, Any], as_json: bool
) -> None:
    adapter, peer = served
    arguments = {**extra, "text": text}
    if as_json:
        try:
            encoded: Any = json.dumps(arguments)
        except (TypeError, ValueError):
            encoded = arguments
    else:
        encoded = arguments
    before = len(peer.calls)
    (answer,) = await adapter.dispatch(
        [{"id": "c", "type": "function", "function": {"name": TOOL, "arguments": encoded}}]
    )
    assert answer["tool_call_id"] == "c" and isinstance(answer["content"], str)
    if not isinstance(text, str):
        assert answer["content"].startswith("Error: p__echo was not called.")
        assert len(peer.calls) == before
