"""User code written against the `openai` SDK's own types; `mypy --strict` must accept it as is.

Never run, only type-checked (tests/typing/test_typing.py); `assert_type` pins what each
call is typed as, so a return type that falls back to `Any` fails the check too.
"""

from __future__ import annotations

from typing import Any, assert_type

from mcp import Client
from openai import AsyncOpenAI
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
    ChatCompletionUserMessageParam,
)
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseCustomToolCallOutputParam,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
    ToolParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from openai.types.shared_params import FunctionDefinition

from mcpx_router import (
    GroupSuggestion,
    OpenAIEmbedder,
    OpenAIPeerToolAdapter,
    Outcome,
    Router,
    RouterError,
    StdioPeer,
    ToolCallFormatError,
    ToolSearch,
    UnknownToolError,
    as_aliases,
)
from mcpx_router.loop import LoopResult, run_chat, run_responses
from mcpx_router.testing import HashingEmbedder, weather_station

ChatAnswer = ChatCompletionToolMessageParam | ChatCompletionUserMessageParam
ResponsesAnswer = FunctionCallOutput | ResponseCustomToolCallOutputParam


def assistant_message(message: ChatCompletionMessage) -> ChatCompletionAssistantMessageParam:
    """The model's message, to send back with the conversation."""
    out: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content}
    calls = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ]
    return out


async def chat_loop(client: AsyncOpenAI, adapter: OpenAIPeerToolAdapter) -> str | None:
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    for _ in range(5):
        tools = adapter.get_openai_tools(relevant_to=messages, max_tools=64)
        assert_type(tools, tuple[ChatCompletionFunctionToolParam, ...])
        completion = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        message = completion.choices[0].message
        messages.append(assistant_message(message))
        if not message.tool_calls:
            return message.content
        answers = await adapter.dispatch(message.tool_calls, call_timeout=30)
        assert_type(answers, list[ChatAnswer])
        for answer in answers:
            if answer["role"] == "tool":
                print(answer["tool_call_id"], answer["content"])
        messages += answers
        messages.extend(await adapter.dispatch(message.tool_calls or []))
        messages += await adapter.dispatch(completion.choices[0].message.tool_calls)
    return None


async def one_call_at_a_time(adapter: OpenAIPeerToolAdapter, message: ChatCompletionMessage) -> None:
    messages: list[ChatCompletionMessageParam] = []
    for call in message.tool_calls or []:
        answer = await adapter.execute_function_call(call)
        assert_type(answer, ChatCompletionToolMessageParam)
        print(answer["tool_call_id"])
        messages.append(answer)
    # the legacy function_call, and a whole assistant message
    if message.function_call is not None:
        legacy = await adapter.dispatch(message.function_call)
        assert_type(legacy, list[ChatCompletionFunctionMessageParam])
        messages += legacy
        messages.append(await adapter.execute_function_call(message.function_call))
    messages += await adapter.dispatch(message)
    # calls a local model wrote as text: the message to append, then its answers
    written = adapter.recover_text_calls(message)
    if written is not None:
        messages.append(written)
        messages += await adapter.dispatch(message, text_calls=True)
    # the request form of a call, as a TypedDict
    answer = await adapter.execute_function_call(
        {"id": "call_1", "type": "function", "function": {"name": "weather__forecast", "arguments": "{}"}}
    )
    assert_type(answer, ChatCompletionToolMessageParam)


async def legacy_functions(client: AsyncOpenAI, adapter: OpenAIPeerToolAdapter) -> None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather?"}]
    functions = adapter.get_openai_functions()
    assert_type(functions, tuple[FunctionDefinition, ...])
    completion = await client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, functions=functions
    )
    call = completion.choices[0].message.function_call
    if call is not None:
        messages += await adapter.dispatch(call)


async def responses_loop(client: AsyncOpenAI, adapter: OpenAIPeerToolAdapter) -> str:
    input_items: list[ResponseInputItemParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    tools = adapter.get_responses_tools(relevant_to=input_items)
    assert_type(tools, tuple[FunctionToolParam, ...])
    response = await client.responses.create(model="gpt-4.1-mini", input=input_items, tools=tools)
    answers = await adapter.dispatch(response)
    assert_type(answers, list[ResponsesAnswer])
    input_items += answers
    input_items += await adapter.dispatch(response.output)
    for item in response.output:
        if isinstance(item, ResponseFunctionToolCall):
            output = await adapter.execute_function_call(item)
            assert_type(output, FunctionCallOutput)
            print(output["output"])
            input_items.append(output)
    return response.output_text


async def plain_dicts(adapter: OpenAIPeerToolAdapter) -> None:
    # Calls as plain dicts say nothing of their shape to a type checker: their answers are `Any`.
    calls: list[dict[str, Any]] = [
        {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
    ]
    answers = await adapter.dispatch(calls)
    assert_type(answers, Any)
    messages: list[ChatCompletionMessageParam] = []
    messages += answers
    outcome = await adapter.call("weather__forecast", {"city": "Oslo"})
    assert_type(outcome, Outcome)
    if outcome.is_error:
        print(outcome.text)
    await adapter.call("weather__forecast", '{"city": "Oslo"}', call_timeout=None)


async def with_a_router(client: AsyncOpenAI) -> None:
    async with Router(call_timeout=20) as router:
        await router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Time?"}]
        tools: tuple[ChatCompletionToolParam, ...] = router.get_openai_tools(relevant_to=messages)
        completion = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        messages += await router.dispatch(completion.choices[0].message.tool_calls)
        response: Response = await client.responses.create(
            model="gpt-4.1-mini", input="Time?", tools=router.get_responses_tools(max_tools=None)
        )
        items: list[ResponseInputItemParam] = []
        items += await router.dispatch(response)
        print(router.get_openai_functions(), await router.call("time__now", {}))


async def errors(adapter: OpenAIPeerToolAdapter, payload: object) -> None:
    try:
        await adapter.dispatch([payload] if isinstance(payload, dict) else [])
        adapter.resolve("weather__forcast")
    except UnknownToolError as exc:
        print(exc.name)
    except ToolCallFormatError as exc:
        print(exc)
    except RouterError:
        raise


async def loops(client: AsyncOpenAI) -> None:
    async with (
        Client(weather_station()) as weather,
        OpenAIPeerToolAdapter(strict=None, media="attach") as adapter,
    ):
        await adapter.add_peer("weather", weather, call_timeout=10, include=["forecast*"])
        chat: LoopResult = await run_chat(
            client,
            adapter,
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Weather in Oslo?"}],
            max_turns=4,
            temperature=0.2,
            tool_choice="auto",
            stream=True,
            extra_headers={"X-Trace": "1"},
        )
        print(chat.text, chat.turns)
        done = await run_responses(
            client,
            adapter,
            model="gpt-4.1-mini",
            input="Weather?",
            instructions="Be brief.",
            max_output_tokens=200,
        )
        print(done.stopped)
        items: list[ResponseInputItemParam] = [{"role": "user", "content": "And tomorrow?"}]
        again = await run_responses(
            client, adapter, model="gpt-4.1-mini", input=items, parallel_tool_calls=False
        )
        print(again.messages[len(items) :], again.catalogue_versions)


async def ranked_and_searched(client: AsyncOpenAI) -> None:
    async with OpenAIPeerToolAdapter(embedder=OpenAIEmbedder(client), semantic_weight=0.4) as adapter:
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Time in Tokyo?"}]
        tools = await adapter.select_tools("chat", relevant_to=messages)
        assert_type(tools, tuple[ChatCompletionFunctionToolParam, ...])
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        assert_type(await adapter.select_tools("responses", max_tools=None), tuple[FunctionToolParam, ...])
        assert_type(await adapter.select_tools("functions"), tuple[FunctionDefinition, ...])
        suggestions = await adapter.suggest_groups(min_score=0.6)
        assert_type(suggestions, list[GroupSuggestion])
        aliases: dict[str, list[str]] = as_aliases(suggestions, min_score=0.8)
        print(aliases)
        search = ToolSearch(adapter, per_search=5)
        offered = await search.chat_tools(messages)
        assert_type(offered, list[ChatCompletionFunctionToolParam])
        completion = await client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=offered
        )
        messages += await search.dispatch(completion.choices[0].message.tool_calls)
        items: list[ResponseInputItemParam] = [{"role": "user", "content": "Time in Tokyo?"}]
        native = await search.responses_tools(items)
        assert_type(native, list[ToolParam])
        response = await client.responses.create(model="gpt-5.4", input=items, tools=native)
        items += await search.dispatch(response)
        await run_chat(client, adapter, model="m", messages=messages, tool_search=search)
        await run_responses(client, adapter, model="m", input="Time?", tool_search=True)
    async with OpenAIPeerToolAdapter(embedder=HashingEmbedder()) as local:
        print(await local.rank_tools("time"))
