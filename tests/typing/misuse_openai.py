"""Mistakes `mypy --strict` must report, each at its line: the comment `# error: CODE` says which.

Never run, only type-checked (tests/typing/test_typing.py).
"""

from __future__ import annotations

from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.responses import Response, ResponseInputItemParam

from mcpx_router import OpenAIPeerToolAdapter, Router, sync
from mcpx_router.loop import run_chat, run_responses
from mcpx_router.sync.loop import run_chat as sync_run_chat


async def misuse(
    client: AsyncOpenAI,
    adapter: OpenAIPeerToolAdapter,
    router: Router,
    message: ChatCompletionMessage,
    response: Response,
) -> None:
    messages: list[ChatCompletionMessageParam] = []
    items: list[ResponseInputItemParam] = []
    adapter.get_openai_tools(relevent_to=messages)  # error: call-arg
    adapter.get_responses_tools(max_tools="all")  # error: arg-type
    router.get_openai_tools(max_tool=3)  # error: call-arg
    await adapter.dispatch(message.tool_calls, timeout=5)  # error: call-overload
    await adapter.dispatch(42)  # error: call-overload
    await router.dispatch(message.tool_calls, call_timeout="5")  # error: call-overload
    messages += await adapter.dispatch(response)  # error: arg-type
    items += await adapter.dispatch(message.tool_calls)  # error: arg-type
    await adapter.call("weather__forecast", 42)  # error: arg-type
    await router.call("weather__forecast", {}, timeout=1)  # error: call-arg
    for call in message.tool_calls or []:
        answer = await adapter.execute_function_call(call)
        print(answer["output"])  # error: typeddict-item
    OpenAIPeerToolAdapter(call_timout=5)  # error: call-arg
    await run_chat(client, adapter, model="m", messages=messages, temprature=0.2)  # error: call-arg
    await run_chat(client, adapter, model="m", messages=messages, temperature="warm")  # error: arg-type
    await run_responses(client, adapter, model="m", input="hi", max_tokens=10)  # error: call-arg
    await run_chat(client, adapter, model="m", messages=["hello"])  # error: list-item
    await run_responses(client, adapter, model="m", input=messages)  # error: arg-type
    blocking = sync.Router(backend="curio")  # error: arg-type
    await blocking.dispatch(message.tool_calls)  # error: misc
    items += blocking.dispatch(message.tool_calls)  # error: arg-type
    sync.OpenAIPeerToolAdapter().add_peer("x", "http://h/mcp", include_tools=["a"])  # error: call-arg
    sync_run_chat(client, blocking, model="m", messages=messages)  # error: arg-type
    sync_run_chat(OpenAI(), blocking, model="m", messages=messages, temprature=1)  # error: call-arg
