"""Converting a sampling request to a Chat Completions request, and choosing the model: pure parts."""

from __future__ import annotations

from typing import Any

import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from mcpx_router.peers._sampling import (
    MAX_STOP_SEQUENCES,
    SamplingRefused,
    choose_model,
    completion_request,
    sampling_result,
)

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
_B64 = st.sampled_from(["", "iVBORw0KGgo=", "AAAA"])

text_block = st.builds(lambda t: mt.TextContent(type="text", text=t), _TEXT)
image_block = st.builds(
    lambda d, m: mt.ImageContent(type="image", data=d, mime_type=m),
    _B64,
    st.sampled_from(["image/png", "image/jpeg", "image/webp", "text/plain"]),
)
audio_block = st.builds(
    lambda d, m: mt.AudioContent(type="audio", data=d, mime_type=m),
    _B64,
    st.sampled_from(["audio/wav", "audio/mpeg", "audio/ogg"]),
)
block = st.one_of(text_block, text_block, image_block, audio_block)
message = st.builds(
    lambda role, content: mt.SamplingMessage(role=role, content=content),
    st.sampled_from(["user", "assistant"]),
    st.one_of(block, st.lists(block, min_size=1, max_size=3)),
)


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else [content]


def _sendable(m: mt.SamplingMessage) -> bool:
    for b in _blocks(m.content):
        if b.type == "image" and (m.role != "user" or not b.mime_type.startswith("image/")):
            return False
        if b.type == "audio" and (m.role != "user" or b.mime_type == "audio/ogg"):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(message, min_size=1, max_size=5),
    system=st.one_of(st.none(), _TEXT),
    max_tokens=st.integers(-2, 5000),
    temperature=st.one_of(st.none(), st.floats(-1, 3, allow_nan=False)),
    stops=st.one_of(st.none(), st.lists(_TEXT, max_size=6)),
)
def test_a_request_is_converted_whole_or_refused_with_a_reason(
    messages: list[mt.SamplingMessage],
    system: str | None,
    max_tokens: int,
    temperature: float | None,
    stops: list[str] | None,
) -> None:
    params = mt.CreateMessageRequestParams(
        messages=messages,
        system_prompt=system,
        max_tokens=max_tokens,
        temperature=temperature,
        stop_sequences=stops,
    )
    acceptable = (
        all(_sendable(m) for m in messages)
        and max_tokens >= 1
        and (temperature is None or 0 <= temperature <= 2)
        and len(stops or []) <= MAX_STOP_SEQUENCES
    )
    if not acceptable:
        with pytest.raises(SamplingRefused) as refused:
            completion_request(params, "m")
        assert str(refused.value)  # a reason the server can read
        return
    request = completion_request(params, "m")
    sent = request["messages"]
    if system:
        assert sent.pop(0) == {"role": "system", "content": system}
    assert [m["role"] for m in sent] == [m.role for m in messages]
    for original, converted in zip(messages, sent, strict=True):
        blocks = _blocks(original.content)
        if isinstance(converted["content"], str):
            assert all(b.type == "text" for b in blocks)
            assert converted["content"] == "".join(b.text for b in blocks)
        else:
            assert original.role == "user" and len(converted["content"]) == len(blocks)
            for b, part in zip(blocks, converted["content"], strict=True):
                if b.type == "text":
                    assert part == {"type": "text", "text": b.text}
                elif b.type == "image":
                    assert part["image_url"]["url"] == f"data:{b.mime_type};base64,{b.data}"
                else:
                    assert part["input_audio"] == {
                        "data": b.data,
                        "format": "wav" if "wav" in b.mime_type else "mp3",
                    }
    assert request["max_completion_tokens"] == max_tokens
    assert request.get("temperature") == temperature
    assert request.get("stop") == (stops or None)
    assert params.messages == messages  # nothing of the request was changed


def test_sampling_with_tools_is_refused() -> None:
    tool = mt.Tool(name="t", input_schema={"type": "object"})
    params = mt.CreateMessageRequestParams(
        messages=[mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text="hi"))],
        max_tokens=5,
        tools=[tool],
    )
    with pytest.raises(SamplingRefused, match="sampling with tools is not supported"):
        completion_request(params, "m")


_NAME = st.text(st.sampled_from("abcAB-1."), min_size=0, max_size=6)


@settings(max_examples=500)
@given(
    hints=st.lists(st.one_of(st.none(), _NAME), max_size=4), allowed=st.lists(_NAME, min_size=1, max_size=4)
)
def test_the_model_is_the_first_hint_naming_an_allowed_one_else_the_default(
    hints: list[str | None], allowed: list[str]
) -> None:
    preferences = mt.ModelPreferences(hints=[mt.ModelHint(name=h) for h in hints])
    chosen = choose_model(preferences, allowed[0], allowed)
    expected = next(
        (m for h in hints if h for m in allowed if h.casefold() in m.casefold()),
        allowed[0],
    )
    assert chosen == expected
    assert chosen in allowed  # never a name the host did not allow


def _completion(**message: Any) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m-1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": message.pop("finish", "stop"),
                    "message": {"role": "assistant", **message},
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("finish", "reason"), [("stop", "endTurn"), ("length", "maxTokens"), ("content_filter", "content_filter")]
)
def test_the_answer_is_text_with_the_stop_reason(finish: str, reason: str) -> None:
    result = sampling_result(_completion(content="hi", finish=finish))
    assert isinstance(result, mt.CreateMessageResult)
    assert (result.content, result.model, result.stop_reason) == (
        mt.TextContent(type="text", text="hi"),
        "m-1",
        reason,
    )


def test_a_refusal_or_no_text_is_an_error() -> None:
    refused = sampling_result(_completion(content=None, refusal="I cannot."))
    assert isinstance(refused, mt.ErrorData) and refused.message == "the model refused: I cannot."
    empty = sampling_result(_completion(content=None))
    assert isinstance(empty, mt.ErrorData) and "without text" in empty.message
