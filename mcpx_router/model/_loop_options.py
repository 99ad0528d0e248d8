"""The further arguments `run_chat` and `run_responses` hand to the `openai` SDK's `create`, typed as
it types them, so that a misspelt or mistyped argument is a type error (annotations only, no I/O).

Each is `create`'s own keyword arguments less those the loop sets itself (`model`, the
conversation, `tools`); `tests/core/test_loop.py` compares them with the installed SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    import httpx2
    from openai._types import Body, Headers, NotGiven, Query, SequenceNotStr
    from openai.types.chat import (
        ChatCompletionAudioParam,
        ChatCompletionPredictionContentParam,
        ChatCompletionStreamOptionsParam,
        ChatCompletionToolChoiceOptionParam,
        completion_create_params,
    )
    from openai.types.responses import (
        ResponseIncludable,
        ResponsePromptParam,
        ResponseTextConfigParam,
        response_create_params,
    )
    from openai.types.responses.service_tier import ServiceTier
    from openai.types.shared_params import Metadata, Reasoning, ReasoningEffort

__all__ = ["ChatCreateOptions", "ResponsesCreateOptions"]


class _RequestOptions(TypedDict, total=False):
    extra_headers: Headers | None
    extra_query: Query | None
    extra_body: Body | None
    timeout: float | httpx2.Timeout | NotGiven | None


class ChatCreateOptions(_RequestOptions, total=False):
    """The arguments of `chat.completions.create` besides `model`, `messages` and `tools`."""

    audio: ChatCompletionAudioParam | None
    frequency_penalty: float | None
    function_call: completion_create_params.FunctionCall
    functions: Iterable[completion_create_params.Function]
    logit_bias: dict[str, int] | None
    logprobs: bool | None
    max_completion_tokens: int | None
    max_tokens: int | None
    metadata: Metadata | None
    modalities: list[Literal["text", "audio"]] | None
    moderation: completion_create_params.Moderation | None
    n: int | None
    parallel_tool_calls: bool
    prediction: ChatCompletionPredictionContentParam | None
    presence_penalty: float | None
    prompt_cache_key: str | None
    prompt_cache_options: completion_create_params.PromptCacheOptions
    prompt_cache_retention: Literal["in_memory", "24h"] | None
    reasoning_effort: ReasoningEffort | None
    response_format: completion_create_params.ResponseFormat
    safety_identifier: str | None
    seed: int | None
    service_tier: Literal["auto", "default", "flex", "scale", "priority", "fast"] | None
    stop: str | SequenceNotStr[str] | None
    store: bool | None
    stream: bool | None
    """True: the reply is streamed and assembled before its calls are answered."""
    stream_options: ChatCompletionStreamOptionsParam | None
    temperature: float | None
    tool_choice: ChatCompletionToolChoiceOptionParam
    top_logprobs: int | None
    top_p: float | None
    user: str
    verbosity: Literal["low", "medium", "high"] | None
    web_search_options: completion_create_params.WebSearchOptions


class ResponsesCreateOptions(_RequestOptions, total=False):
    """The arguments of `responses.create` besides `model`, `input` and `tools`."""

    access_programs: response_create_params.AccessPrograms
    background: bool | None
    background_options: response_create_params.BackgroundOptions
    context_management: Iterable[response_create_params.ContextManagement] | None
    conversation: response_create_params.Conversation | None
    image: response_create_params.Image
    include: list[ResponseIncludable] | None
    instructions: str | None
    max_output_tokens: int | None
    max_tool_calls: int | None
    metadata: Metadata | None
    moderation: response_create_params.Moderation | None
    parallel_tool_calls: bool | None
    previous_response_id: str | None
    prompt: ResponsePromptParam | None
    prompt_cache_key: str | None
    prompt_cache_options: response_create_params.PromptCacheOptions
    prompt_cache_retention: Literal["in_memory", "24h"] | None
    reasoning: Reasoning | None
    safety_identifier: str | None
    service_tier: ServiceTier | None
    store: bool | None
    stream: bool | None
    """True: the reply is streamed and its final response used."""
    stream_options: response_create_params.StreamOptions | None
    temperature: float | None
    text: ResponseTextConfigParam
    tool_choice: response_create_params.ToolChoice
    top_logprobs: int | None
    top_p: float | None
    truncation: Literal["auto", "disabled"] | None
    user: str
