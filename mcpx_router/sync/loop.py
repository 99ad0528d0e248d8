"""The tool-calling loop with the `openai` SDK's sync client, over a blocking facade.

As `mcpx_router.loop`, turn for turn: the tools are taken afresh each turn, every call of a turn
is answered (concurrently, in the facade's loop thread), and the conversation goes on until the
model answers without tools or the turn limit is reached. The messages are appended in the same
form; `stream=True` is assembled before the calls are dispatched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Unpack

from openai import OpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.responses import Response, ResponseInputItemParam

from ..loop import LoopResult, _assistant_message, _check_turns, _cut, _input_item
from ..model._loop_options import ChatCreateOptions, ResponsesCreateOptions
from ..model.calls._call_guard import DEFAULT_MAX_CALLS_PER_TURN, CallGuard
from ..model.calls._written_calls import function_calls
from ._calls import BlockingCalls

__all__ = ["LoopResult", "run_chat", "run_responses"]


def run_chat(
    client: OpenAI,
    router: BlockingCalls,
    *,
    model: str,
    messages: Iterable[ChatCompletionMessageParam],
    max_turns: int = 10,
    text_calls: bool = False,
    dedupe_calls: bool | Literal["turn", "conversation"] = True,
    max_calls_per_turn: int | None = DEFAULT_MAX_CALLS_PER_TURN,
    **create: Unpack[ChatCreateOptions],
) -> LoopResult:
    """Run a Chat Completions conversation until the model answers without calling tools.

    Example:
        ```python
        with sync.Router() as router:
            router.join("weather", weather_server)
            result = run_chat(OpenAI(), router, model="gpt-4o-mini",
                              messages=[{"role": "user", "content": "Weather in Oslo?"}])
        print(result.text)
        ```

    Args:
        client: Any `OpenAI` client (`base_url` may point at a compatible endpoint).
        router: A `sync.Router` or `sync.OpenAIPeerToolAdapter`.
        model, messages, max_turns, text_calls, dedupe_calls, max_calls_per_turn, create: As
            `mcpx_router.loop.run_chat`.
    """
    _check_turns(max_turns)
    history = list(messages)
    result = LoopResult(history, None, "max_turns", 0, 0)
    guard = CallGuard(lambda: router.tools, dedupe=dedupe_calls, max_calls=max_calls_per_turn)
    while result.turns < max_turns:
        tools = router.get_openai_tools(relevant_to=history)
        result.catalogue_versions.append(router.version)
        params: dict[str, Any] = {"model": model, "messages": history, **create}
        if tools:
            params["tools"] = list(tools)
        response = _chat_completion(client, params)
        result.turns += 1
        if not response.choices:
            raise ValueError(f"the model's response {response.id!r} holds no choices")
        message = response.choices[0].message
        history.append(_assistant_message(message))
        calls: list[Any] = list(message.tool_calls or [])
        if not calls and text_calls:  # unknown names too: their answers name the close tools
            cut = response.choices[0].finish_reason == "length"
            written = router.recover_text_calls(history[-1], unknown=True, truncated=cut)
            if written is not None:
                history[-1], calls = written, list(written.get("tool_calls") or [])
        if not calls:
            result.text, result.stopped = message.content, "answer"
            break
        turn = guard.plan(calls)
        history.extend(turn.answers(router.dispatch(turn.to_dispatch)))
        result.tool_calls += len(calls)
    return result


def run_responses(
    client: OpenAI,
    router: BlockingCalls,
    *,
    model: str,
    input: str | Iterable[ResponseInputItemParam],
    max_turns: int = 10,
    text_calls: bool = False,
    dedupe_calls: bool | Literal["turn", "conversation"] = True,
    max_calls_per_turn: int | None = DEFAULT_MAX_CALLS_PER_TURN,
    **create: Unpack[ResponsesCreateOptions],
) -> LoopResult:
    """Run a Responses API conversation until the model answers without calling tools.

    Args: as `mcpx_router.loop.run_responses`, with an `OpenAI` client and a blocking facade.
    """
    _check_turns(max_turns)
    items: list[ResponseInputItemParam] = (
        [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
    )
    result = LoopResult(items, None, "max_turns", 0, 0)
    guard = CallGuard(lambda: router.tools, dedupe=dedupe_calls, max_calls=max_calls_per_turn)
    while result.turns < max_turns:
        tools = router.get_responses_tools(relevant_to=items)
        result.catalogue_versions.append(router.version)
        params: dict[str, Any] = {"model": model, "input": items, **create}
        if tools:
            params["tools"] = list(tools)
        response = _response(client, params)
        result.turns += 1
        items.extend(_input_item(item) for item in response.output)
        turn = guard.plan(response)
        answers = turn.answers(router.dispatch(turn.to_dispatch))
        written = None
        if not answers and text_calls:
            written = router.recover_text_call_items(response, unknown=True, truncated=_cut(response))
        if written is not None:
            items[len(items) - len(response.output) :] = written
            turn = guard.plan(function_calls(written))
            answers = turn.answers(router.dispatch(turn.to_dispatch))
        if not answers:
            result.text, result.stopped = response.output_text, "answer"
            break
        items.extend(answers)
        result.tool_calls += len(answers)
    return result


def _chat_completion(client: OpenAI, params: dict[str, Any]) -> ChatCompletion:
    if params.get("stream") is not True:
        completion: ChatCompletion = client.chat.completions.create(**params)
        return completion
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    with client.chat.completions.create(**params) as stream:
        for chunk in stream:
            state.handle_chunk(chunk)
    return state.get_final_completion()


def _response(client: OpenAI, params: dict[str, Any]) -> Response:
    if params.get("stream") is not True:
        response: Response = client.responses.create(**params)
        return response
    final: Response | None = None
    with client.responses.create(**params) as stream:
        for event in stream:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    if final is None:
        raise ValueError("the streamed response ended without a response.completed event")
    return final
