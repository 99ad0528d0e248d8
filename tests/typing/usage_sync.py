"""User code of the blocking facade with the `openai` SDK's sync client; `mypy --strict` must accept it.

Never run, only type-checked (tests/typing/test_typing.py).
"""

from __future__ import annotations

import threading
from typing import assert_type

from mcp.server.mcpserver import MCPServer
from openai import OpenAI
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
from openai.types.responses.response_input_item_param import FunctionCallOutput

from mcpx_router import Outcome, PeerStatus, RouterEvent, StdioPeer, ToolKey, sync
from mcpx_router.loop import LoopResult
from mcpx_router.sync.loop import run_chat, run_responses

ChatAnswer = ChatCompletionToolMessageParam | ChatCompletionUserMessageParam


def chat(client: OpenAI, server: MCPServer) -> str | None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    with sync.Router(backend="trio", call_timeout=20) as router:
        names = router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
        assert_type(names, tuple[str, ...])
        router.join("local", server, include_tools=["forecast*"])
        tools = router.get_openai_tools(relevant_to=messages)
        assert_type(tools, tuple[ChatCompletionFunctionToolParam, ...])
        completion = client.chat.completions.create(model="m", messages=messages, tools=tools)
        message = completion.choices[0].message
        answers = router.dispatch(message.tool_calls, call_timeout=30)
        assert_type(answers, list[ChatAnswer])
        messages += answers
        for call in message.tool_calls or []:
            messages.append(router.execute_function_call(call))
        assert_type(router.call("time__now", {"tz": "UTC"}), Outcome)
        assert_type(router.resolve("time__now"), ToolKey)
        assert_type(router.status("time"), PeerStatus)
        with router.events() as events:
            for event in events:
                assert_type(event, RouterEvent)
                break
        return message.content


def responses(client: OpenAI) -> None:
    adapter = sync.OpenAIPeerToolAdapter(strict=True, max_tools=64)
    adapter.add_peer("time", StdioPeer("uvx", ["mcp-server-time"]), max_concurrency=2, include=["get_*"])
    items: list[ResponseInputItemParam] = [{"role": "user", "content": "What time is it?"}]
    tools = adapter.get_responses_tools(relevant_to=items)
    assert_type(tools, tuple[FunctionToolParam, ...])
    response = client.responses.create(model="m", input=items, tools=tools)
    items += adapter.dispatch(response)
    for item in response.output:
        if item.type == "function_call":
            assert_type(adapter.execute_function_call(item), FunctionCallOutput)
    worker = threading.Thread(target=adapter.call, args=("time__get_current_time", {}))
    worker.start()
    worker.join()
    adapter.close()


def loops(client: OpenAI, router: sync.Router, adapter: sync.OpenAIPeerToolAdapter) -> str | None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather?"}]
    result = run_chat(client, router, model="m", messages=messages, temperature=0.2, max_turns=4)
    assert_type(result, LoopResult)
    again = run_responses(client, adapter, model="m", input="Weather?", stream=True)
    return result.text or again.text
