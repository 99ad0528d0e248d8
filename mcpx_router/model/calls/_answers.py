"""The answers a model expects, each in its call's own shape (pure functions).

A Chat call is answered by a tool message, a Responses call by a `function_call_output` item (a
custom call by a `custom_tool_call_output`), a legacy call by a function message; a client
`tool_search_call` by a `tool_search_output` holding the tools found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias, cast

if TYPE_CHECKING:
    # The `openai` SDK's own types, for annotations only: importing the package loads no openai.
    from openai.types.chat import (
        ChatCompletionFunctionMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionUserMessageParam,
    )
    from openai.types.responses import ResponseCustomToolCallOutputParam
    from openai.types.responses.response_function_call_output_item_list_param import (
        ResponseFunctionCallOutputItemListParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    from ._calls import ToolCall

    ChatAnswer: TypeAlias = ChatCompletionToolMessageParam | ChatCompletionUserMessageParam
    """A tool message; with `media="attach"`, one user message showing the media follows them."""
    ResponsesAnswer: TypeAlias = FunctionCallOutput | ResponseCustomToolCallOutputParam
    Answer: TypeAlias = ChatAnswer | ResponsesAnswer | ChatCompletionFunctionMessageParam
    """Any answer `dispatch` gives: a Chat message or a Responses input item."""

__all__ = ["answer", "search_output"]


def answer(call: ToolCall, content: str | list[dict[str, Any]]) -> Answer:
    """The message or item that answers `call`, in the call's own shape (only Responses function
    call outputs carry parts; every other answer is text)."""
    if call.shape == "chat":
        return {"role": "tool", "tool_call_id": call.call_id, "content": cast("str", content)}
    if call.shape == "responses":
        output = cast("str | ResponseFunctionCallOutputItemListParam", content)
        return {"type": "function_call_output", "call_id": call.call_id, "output": output}
    if call.shape == "custom":
        return {"type": "custom_tool_call_output", "call_id": call.call_id, "output": cast("str", content)}
    return {"role": "function", "name": call.name, "content": cast("str", content)}


def search_output(call_id: Any, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The `tool_search_output` item that answers a client `tool_search_call` with the tools found
    (Responses function tools: the API loads them for the rest of the conversation)."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": tools,
    }
