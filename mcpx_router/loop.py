"""The tool-calling loop against an OpenAI-compatible endpoint (Chat Completions or Responses API).

Each turn sends the current tools, dispatches every tool call of the turn concurrently, appends
one answer per call id, and goes on until the model answers without tools or the turn limit is
reached. The tool list is taken from the adapter afresh each turn, so a catalogue that changed
between turns (a peer joined or left) is what the model sees next.

What the model said is appended in a form any compatible endpoint takes back: Chat assistant
messages keep only the fields of an assistant message (endpoints reject extras such as
`annotations` or `reasoning_content`), Responses output items keep exactly the fields the
endpoint sent. With `stream=True` among the create arguments the reply is streamed and
assembled before its tool calls are dispatched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Unpack, cast

from openai import AsyncOpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageParam,
)
from openai.types.responses import Response, ResponseInputItemParam

from ._adapter import OpenAIPeerToolAdapter
from ._errors import UsageError
from .codemode._codemode import CodeMode
from .model._loop_options import ChatCreateOptions, ResponsesCreateOptions
from .model.calls._call_guard import DEFAULT_MAX_CALLS_PER_TURN, CallGuard
from .model.calls._written_calls import function_calls
from .relevance._tool_search import ToolSearch

__all__ = ["LoopResult", "run_chat", "run_responses"]

Stop = Literal["answer", "max_turns"]


@dataclass
class LoopResult:
    """What a tool-calling conversation produced."""

    messages: list[Any]
    """The whole conversation, the new messages appended: `ChatCompletionMessageParam`s from
    `run_chat`, `ResponseInputItemParam`s from `run_responses` (typed `Any`, so that code reading
    them need not narrow the SDK's unions)."""
    text: str | None
    """The model's final answer, or None when the turn limit stopped it."""
    stopped: Stop
    turns: int
    """Requests sent to the model."""
    tool_calls: int
    """Tool calls answered."""
    catalogue_versions: list[int] = field(default_factory=list)
    """The catalogue version sent with each request; a change means the tool list was re-sent changed."""


async def run_chat(
    client: AsyncOpenAI,
    adapter: OpenAIPeerToolAdapter,
    *,
    model: str,
    messages: Iterable[ChatCompletionMessageParam],
    max_turns: int = 10,
    tool_search: bool | ToolSearch = False,
    text_calls: bool = False,
    dedupe_calls: bool | Literal["turn", "conversation"] = True,
    max_calls_per_turn: int | None = DEFAULT_MAX_CALLS_PER_TURN,
    code_mode: CodeMode | None = None,
    **create: Unpack[ChatCreateOptions],
) -> LoopResult:
    """Run a Chat Completions conversation until the model answers without calling tools.

    Example:
        ```python
        result = await run_chat(AsyncOpenAI(), adapter, model="gpt-4o-mini",
                                messages=[{"role": "user", "content": "Weather in Oslo?"}])
        print(result.text)
        ```

    Args:
        client: Any `AsyncOpenAI` client (`base_url` may point at a compatible endpoint).
        adapter: Publishes the tools and answers their calls.
        model: The model name.
        messages: The conversation so far (not modified; the result holds a new list).
        max_turns: The most requests to send.
        tool_search: When more tools are published than one request carries, offer a
            `find_tools` function and the most relevant tools; what the model finds joins the
            next request (True: a new `ToolSearch`; or pass one). False: the most relevant tools.
        text_calls: When a reply calls nothing but holds calls written as text (Hermes
            `<tool_call>`, JSON, Mistral, Llama, pythonic; see docs/model.md), the assistant
            message is appended with them as `tool_calls` and they are answered: a call of a
            name no tool answers to with the close names (and, with tool search, what the
            search finds for it); in a reply cut by `max_tokens`, the calls written whole.
        dedupe_calls: Identical calls (same name, same arguments) run once, unless the tool is
            marked read-only or idempotent (`_call_guard`): in one turn they share the answer,
            and a call that already ran and succeeded in an earlier turn of this run is
            answered with what it returned, saying so (True or "conversation"). "turn": only
            within a turn. False: each runs.
        max_calls_per_turn: The most calls one turn runs; those beyond are answered with an
            error naming the limit, never run (None: no limit).
        code_mode: Offer the model `run_python` and `find_tools` of this `CodeMode` (entered
            with `async with`) instead of one function per tool (docs/code-mode.md); not with
            `tool_search`. With `text_calls`, a reply that calls nothing natively is read for
            calls of the two written as text, else its first fenced python block is run.
        **create: Further arguments for `chat.completions.create` (temperature, tool_choice,
            stream, ...), typed as the SDK types them (`ChatCreateOptions`).
    """
    _check_turns(max_turns)
    history = list(messages)
    result = LoopResult(history, None, "max_turns", 0, 0)
    search = _searcher(adapter, tool_search)
    guard = CallGuard(lambda: adapter.tools, dedupe=dedupe_calls, max_calls=max_calls_per_turn)
    dispatch = _dispatcher(adapter, search, code_mode, text_calls)
    recoverer: Any = code_mode if code_mode is not None else adapter if search is None else search
    while result.turns < max_turns:
        if code_mode is not None:
            tools: Any = code_mode.chat_tools()
        elif search is None:
            tools = await adapter.select_tools("chat", relevant_to=history)
        else:
            tools = await search.chat_tools(history)
        result.catalogue_versions.append(adapter.version)
        params: dict[str, Any] = {"model": model, "messages": history, **create}
        if tools:
            params["tools"] = list(tools)
        response = await _chat_completion(client, params)
        result.turns += 1
        if not response.choices:
            raise ValueError(f"the model's response {response.id!r} holds no choices")
        message = response.choices[0].message
        history.append(_assistant_message(message))
        calls: list[Any] = list(message.tool_calls or [])
        written = None
        if text_calls and not calls:  # unknown names too: their answers name the close tools
            cut = response.choices[0].finish_reason == "length"
            written = recoverer.recover_text_calls(history[-1], unknown=True, truncated=cut)
        if written is not None:
            history[-1], calls = written, list(written.get("tool_calls") or [])
        if not calls:
            result.text, result.stopped = message.content, "answer"
            break
        # custom tool calls are answered with an error
        turn = guard.plan(calls)
        history.extend(turn.answers(await dispatch(turn.to_dispatch)))
        result.tool_calls += len(calls)
    return result


async def run_responses(
    client: AsyncOpenAI,
    adapter: OpenAIPeerToolAdapter,
    *,
    model: str,
    input: str | Iterable[ResponseInputItemParam],
    max_turns: int = 10,
    tool_search: bool | ToolSearch = False,
    text_calls: bool = False,
    dedupe_calls: bool | Literal["turn", "conversation"] = True,
    max_calls_per_turn: int | None = DEFAULT_MAX_CALLS_PER_TURN,
    code_mode: CodeMode | None = None,
    **create: Unpack[ResponsesCreateOptions],
) -> LoopResult:
    """Run a Responses API conversation until the model answers without calling tools.

    The whole input is sent each turn (no server-side state is assumed), so any compatible
    endpoint works.

    Args:
        client: Any `AsyncOpenAI` client.
        adapter: Publishes the tools and answers their calls.
        model: The model name.
        input: A user prompt, or the input items so far (not modified).
        max_turns: The most requests to send.
        tool_search: As for `run_chat`; on the Responses API the search is the API's own
            client-executed `tool_search` tool unless the `ToolSearch` passed says `native=False`.
        text_calls: As for `run_chat`: an assistant `message` item holding written calls is
            followed by them as `function_call` items, which are answered.
        dedupe_calls, max_calls_per_turn, code_mode: As for `run_chat`.
        **create: Further arguments for `responses.create`, typed as the SDK types them
            (`ResponsesCreateOptions`).
    """
    _check_turns(max_turns)
    items: list[ResponseInputItemParam] = (
        [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
    )
    result = LoopResult(items, None, "max_turns", 0, 0)
    search = _searcher(adapter, tool_search)
    guard = CallGuard(lambda: adapter.tools, dedupe=dedupe_calls, max_calls=max_calls_per_turn)
    dispatch = _dispatcher(adapter, search, code_mode, text_calls)
    recoverer: Any = code_mode if code_mode is not None else adapter if search is None else search
    while result.turns < max_turns:
        if code_mode is not None:
            tools: Any = code_mode.responses_tools()
        elif search is None:
            tools = await adapter.select_tools("responses", relevant_to=items)
        else:
            tools = await search.responses_tools(items)
        result.catalogue_versions.append(adapter.version)
        params: dict[str, Any] = {"model": model, "input": items, **create}
        if tools:
            params["tools"] = list(tools)
        response = await _response(client, params)
        result.turns += 1
        items.extend(_input_item(item) for item in response.output)
        # Function calls are answered, custom tool calls refused; every other item (reasoning,
        # messages, calls the API ran itself) needs no answer. A ToolSearch answers searches too.
        turn = guard.plan(response)
        answers = turn.answers(await dispatch(turn.to_dispatch))
        written_items = None
        if text_calls and not answers:
            cut = _cut(response)
            written_items = recoverer.recover_text_call_items(response, unknown=True, truncated=cut)
        if written_items is not None:
            items[len(items) - len(response.output) :] = written_items
            turn = guard.plan(function_calls(written_items))
            answers = turn.answers(await dispatch(turn.to_dispatch))
        if not answers:
            result.text, result.stopped = response.output_text, "answer"
            break
        items.extend(answers)
        result.tool_calls += len(answers)
    return result


async def _chat_completion(client: AsyncOpenAI, params: dict[str, Any]) -> ChatCompletion:
    if params.get("stream") is not True:
        completion: ChatCompletion = await client.chat.completions.create(**params)
        return completion
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    async with await client.chat.completions.create(**params) as stream:
        async for chunk in stream:
            state.handle_chunk(chunk)
    return state.get_final_completion()


async def _response(client: AsyncOpenAI, params: dict[str, Any]) -> Response:
    if params.get("stream") is not True:
        response: Response = await client.responses.create(**params)
        return response
    final: Response | None = None
    async with await client.responses.create(**params) as stream:
        async for event in stream:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    if final is None:
        raise ValueError("the streamed response ended without a response.completed event")
    return final


def _input_item(item: Any) -> ResponseInputItemParam:
    """An output item as input: exactly what the endpoint sent (wire names, its nulls kept)."""
    dumped: dict[str, Any] = item.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return cast("ResponseInputItemParam", dumped)


def _assistant_message(message: ChatCompletionMessage) -> ChatCompletionAssistantMessageParam:
    """The assistant message to send back: only the fields Chat Completions takes in a request."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.refusal is not None:
        out["refusal"] = message.refusal
    if message.audio is not None:
        out["audio"] = {"id": message.audio.id}
    if message.function_call is not None:
        call = message.function_call
        out["function_call"] = {"name": call.name, "arguments": call.arguments}
    calls: list[dict[str, Any]] = []
    for tool_call in message.tool_calls or []:
        if tool_call.type == "function":
            function = {"name": tool_call.function.name, "arguments": tool_call.function.arguments}
            calls.append({"id": tool_call.id, "type": "function", "function": function})
        else:
            custom = {"name": tool_call.custom.name, "input": tool_call.custom.input}
            calls.append({"id": tool_call.id, "type": "custom", "custom": custom})
    if calls:
        out["tool_calls"] = calls
    return cast("ChatCompletionAssistantMessageParam", out)


def _cut(response: Response) -> bool:
    """Whether a Responses reply was cut by its token limit."""
    details = response.incomplete_details
    return response.status == "incomplete" and (details is None or details.reason == "max_output_tokens")


def _searcher(adapter: OpenAIPeerToolAdapter, tool_search: bool | ToolSearch) -> ToolSearch | None:
    if isinstance(tool_search, ToolSearch):
        return tool_search
    if tool_search is True:
        return ToolSearch(adapter)
    if tool_search is False:
        return None
    raise UsageError(f"tool_search must be True, False or a ToolSearch, not {tool_search!r}")


def _dispatcher(
    adapter: OpenAIPeerToolAdapter, search: ToolSearch | None, code_mode: CodeMode | None, text_calls: bool
) -> Any:
    """Who answers the model's calls: the adapter, the tool search, or code mode."""
    if code_mode is None:
        return adapter.dispatch if search is None else search.dispatch
    if not isinstance(code_mode, CodeMode):
        raise UsageError(f"code_mode must be a CodeMode or None, not {type(code_mode).__name__}")
    if search is not None:
        raise UsageError("code_mode offers run_python and find_tools only: leave tool_search off")
    return code_mode.dispatch


def _check_turns(max_turns: int) -> None:
    if not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be a positive integer, not {max_turns!r}")
