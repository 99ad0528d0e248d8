"""`OpenAISampler`: answers a peer's `sampling/createMessage` with the host's model, through `AsyncOpenAI`.

The request is converted to one Chat Completions call (pure functions below, no I/O):

- `systemPrompt` becomes the first, system, message; each sampling message keeps its role;
- text stays text; images (any `image/*`) go as data URLs and audio (`audio/wav`, `audio/mpeg`,
  `audio/mp3`) as `input_audio`, in user messages only (the API takes no media from the
  assistant); the answer is text;
- `maxTokens` → `max_completion_tokens`, `temperature` (0 to 2) and `stopSequences` (at most 4)
  as they are; `includeContext` and `metadata` are not sent (the host keeps no context to add);
- the model: the first of `modelPreferences.hints` that names (as a case-insensitive substring)
  one of the models the host allows, else the host's default; the priorities are not used.

What cannot be converted, and every failure of the API, is answered with an MCP error whose
message says what went wrong, so the server can read it; sampling with tools is refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from mcp.client.session import ClientRequestContext

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAISampler", "SamplingRefused", "choose_model", "completion_request", "sampling_result"]

logger = logging.getLogger("mcpx_router")

MAX_STOP_SEQUENCES = 4
"""What the Chat Completions API takes in `stop`."""

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}


class SamplingRefused(ValueError):
    """A sampling request that cannot be sent to the model; the message says why (for the server)."""


def choose_model(preferences: mt.ModelPreferences | None, default: str, allowed: Sequence[str]) -> str:
    """The model to ask: the first hint naming an allowed model (substring, any case), else `default`.

    Example:
        >>> prefs = mt.ModelPreferences(hints=[mt.ModelHint(name="claude"), mt.ModelHint(name="mini")])
        >>> choose_model(prefs, "gpt-4.1", ["gpt-4.1", "gpt-4.1-mini"])
        'gpt-4.1-mini'
    """
    for hint in (preferences.hints or ()) if preferences is not None else ():
        wanted = (hint.name or "").casefold()
        if not wanted:
            continue
        for model in allowed:
            if wanted in model.casefold():
                return model
    return default


def _blocks(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else [content]


def _part(block: Any, role: str) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind in ("image", "audio") and role != "user":
        raise SamplingRefused(f"an {role} message cannot carry {kind} for the model; only user messages can")
    if kind == "image":
        if not str(block.mime_type).startswith("image/"):
            raise SamplingRefused(f"an image must have an image/* MIME type, not {block.mime_type!r}")
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    if kind == "audio":
        audio_format = _AUDIO_FORMATS.get(str(block.mime_type).lower())
        if audio_format is None:
            raise SamplingRefused(f"audio of type {block.mime_type!r} cannot be sent; WAV or MP3 can")
        return {"type": "input_audio", "input_audio": {"data": block.data, "format": audio_format}}
    if kind in ("tool_use", "tool_result"):
        raise SamplingRefused("sampling with tools is not supported by this client")
    raise SamplingRefused(f"content of type {kind!r} cannot be sent to the model")


def _message(message: mt.SamplingMessage) -> dict[str, Any]:
    parts = [_part(block, message.role) for block in _blocks(message.content)]
    if message.role == "assistant" or all(part["type"] == "text" for part in parts):
        # Plain text keeps the simplest shape; an assistant message takes text only.
        return {"role": message.role, "content": "".join(part["text"] for part in parts)}
    return {"role": message.role, "content": parts}


def completion_request(params: mt.CreateMessageRequestParams, model: str) -> dict[str, Any]:
    """The `chat.completions.create` arguments for a sampling request.

    Raises:
        SamplingRefused: Something in it the API cannot take (its message says what).
    """
    if params.tools or params.tool_choice is not None:
        raise SamplingRefused("sampling with tools is not supported by this client")
    if not params.messages:
        raise SamplingRefused("a sampling request needs at least one message")
    messages = [_message(message) for message in params.messages]
    if params.system_prompt:
        messages.insert(0, {"role": "system", "content": params.system_prompt})
    request: dict[str, Any] = {"model": model, "messages": messages}
    if params.max_tokens < 1:
        raise SamplingRefused(f"maxTokens must be at least 1, not {params.max_tokens}")
    request["max_completion_tokens"] = params.max_tokens
    if params.temperature is not None:
        if not 0 <= params.temperature <= 2:
            raise SamplingRefused(f"temperature must be between 0 and 2, not {params.temperature}")
        request["temperature"] = params.temperature
    if params.stop_sequences:
        if len(params.stop_sequences) > MAX_STOP_SEQUENCES:
            raise SamplingRefused(
                f"at most {MAX_STOP_SEQUENCES} stop sequences can be sent, not {len(params.stop_sequences)}"
            )
        request["stop"] = list(params.stop_sequences)
    return request


def sampling_result(completion: Any) -> mt.CreateMessageResult | mt.ErrorData:
    """The model's answer as a sampling result (text), or an error if it gave none."""
    choices = getattr(completion, "choices", None) or []
    if not choices:
        return mt.ErrorData(code=mt.INTERNAL_ERROR, message="the model returned no answer")
    choice = choices[0]
    message = choice.message
    if getattr(message, "refusal", None):
        return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"the model refused: {message.refusal}")
    if message.content is None:
        return mt.ErrorData(code=mt.INTERNAL_ERROR, message="the model answered without text")
    reason = choice.finish_reason
    return mt.CreateMessageResult(
        role="assistant",
        content=mt.TextContent(type="text", text=message.content),
        model=str(completion.model),
        stop_reason=_STOP_REASONS.get(reason, reason) if reason else None,
    )


class OpenAISampler:
    """A sampling callback that asks the host's model through an `AsyncOpenAI` client.

    Example:
        ```python
        sampler = OpenAISampler(AsyncOpenAI(), model="gpt-4.1", models=["gpt-4.1", "gpt-4.1-mini"])
        async with Router(callbacks=PeerCallbacks(sampling=sampler)) as router: ...
        ```

    Args:
        client: The client to ask (its base URL, key and retries are its own).
        model: The model asked unless a hint of the server names one of `models`.
        models: The models a server may choose by its `modelPreferences.hints` (default: `model` only).
        max_tokens: An upper bound on any request's `maxTokens` (None: the server's own).
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        *,
        model: str,
        models: Sequence[str] = (),
        max_tokens: int | None = None,
    ) -> None:
        if isinstance(models, str):
            raise TypeError("models must be a list of model names, not a string")
        self.client = client
        self.model = model
        self.models = (model, *models)
        self.max_tokens = max_tokens

    async def __call__(
        self, context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        import openai

        model = choose_model(params.model_preferences, self.model, self.models)
        try:
            request = completion_request(params, model)
        except SamplingRefused as exc:
            return mt.ErrorData(code=mt.INVALID_PARAMS, message=str(exc))
        if self.max_tokens is not None:
            request["max_completion_tokens"] = min(request["max_completion_tokens"], self.max_tokens)
        try:
            completion = await self.client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            return mt.ErrorData(
                code=mt.INTERNAL_ERROR,
                message=f"the model API answered {exc.status_code}: {_api_message(exc)}",
            )
        except openai.APIError as exc:
            return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"the model API failed: {exc.message}")
        return sampling_result(completion)


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        return json.dumps(body)[:500]
    return str(exc.message)
