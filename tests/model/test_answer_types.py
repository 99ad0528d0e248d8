"""Every answer is a value of the `openai` SDK type its static signature claims.

`dispatch` and `execute_function_call` are overloaded by the call's type (`_adapter.py`): Chat
calls get `ChatCompletionToolMessageParam`s (and, with media="attach", one
`ChatCompletionUserMessageParam`), Responses function calls `FunctionCallOutput`s, custom
Responses calls `ResponseCustomToolCallOutputParam`s, legacy calls
`ChatCompletionFunctionMessageParam`s. Each answer is checked at run time against that TypedDict
(pydantic validates it strictly, and it has no key the TypedDict lacks), for generated calls of
every shape, run or refused, and for results with media.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import (
    ChatCompletionFunctionMessageParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from openai.types.responses import ResponseCustomToolCallOutputParam, ResponseFunctionToolCall
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

from mcpx_router import OpenAIPeerToolAdapter

from ..support._model_peers import RecordingPeer, connected, media_peer
from ..support.sdk_examples import example
from .calls.test_calls_properties import TEXT, Expect, error_calls, served_calls

pytestmark = pytest.mark.anyio

DECLARED: dict[str, Any] = {
    "chat": ChatCompletionToolMessageParam,
    "responses": FunctionCallOutput,
    "custom": ResponseCustomToolCallOutputParam,
    "legacy": ChatCompletionFunctionMessageParam,
}
"""The type the overloads declare for the answer to each shape of call."""


def conforms(answer: Any, declared: Any) -> None:
    """`answer` is a value of the TypedDict `declared`: its types, its required keys, no others."""
    TypeAdapter(declared).validate_python(answer, strict=True)
    assert set(answer) <= declared.__required_keys__ | declared.__optional_keys__


@pytest.fixture
async def served() -> AsyncIterator[OpenAIPeerToolAdapter]:
    async with connected(p=RecordingPeer("p").tool("echo", TEXT)) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", c["p"])
        yield adapter


# Calls whose id is of the SDK's type (junk ids come only from dicts, typed Any, or from SDK objects
# built without validation): their answers must be of the declared type.
typed_calls = st.one_of(served_calls(), error_calls()).filter(
    lambda item: item[1].shape == "legacy" or (isinstance(item[1].call_id, str) and item[1].call_id != "")
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(typed_calls, max_size=5), one=st.booleans())
async def test_every_answer_is_of_the_type_declared_for_its_call(
    served: OpenAIPeerToolAdapter, batch: list[tuple[Any, Expect]], one: bool
) -> None:
    if one and batch:
        item, expect = batch[0]
        conforms(await served.execute_function_call(item), DECLARED[expect.shape])
        return
    answers = await served.dispatch([item for item, _ in batch])
    assert len(answers) == len(batch)
    for answer, (_, expect) in zip(answers, batch, strict=True):
        conforms(answer, DECLARED[expect.shape])


@pytest.mark.parametrize("media", ["attach", "describe"])
async def test_answers_with_media_are_of_the_declared_types(media: str) -> None:
    calls = [("c_snap", "media__snapshot", '{"camera": "door"}'), ("c_report", "media__report", "")]
    async with connected(media=media_peer()) as c, OpenAIPeerToolAdapter(media=media) as adapter:
        await adapter.add_peer("media", c["media"])
        chat = await adapter.dispatch(
            [
                example(ChatCompletionMessageFunctionToolCall, id=i, function={"name": n, "arguments": a})
                for i, n, a in calls
            ]
        )
        responses = await adapter.dispatch(
            [example(ResponseFunctionToolCall, call_id=i, name=n, arguments=a) for i, n, a in calls]
        )
    for answer in chat[: len(calls)]:
        conforms(answer, ChatCompletionToolMessageParam)
    for answer in responses:
        conforms(answer, FunctionCallOutput)
    if media == "attach":
        (follow_up,) = chat[len(calls) :]
        conforms(follow_up, ChatCompletionUserMessageParam)
        assert any(isinstance(a["output"], list) for a in responses)  # parts, not text
        assert json.dumps(responses).count("input_image") >= 1
    else:
        assert len(chat) == len(calls)
        assert all(isinstance(a["output"], str) for a in responses)
