"""The adapter's call methods, typed with the `openai` SDK's own types: each shape answered in its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast, overload

from ._answering import UNSET, Answerer
from ._dispatch import Outcome, check_timeout
from ._text_hook import chat_with_text_calls, resolver, responses_with_text_calls, text_call_items
from .model._calls import ToolCall, parse_one_call, parse_tool_call, tool_call_items

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionMessageParam,
        ChatCompletionMessage,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses import Response, ResponseCustomToolCallOutputParam, ResponseInputItemParam
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    from .model._calls import (
        Answer,
        ChatAnswer,
        ChatCall,
        LegacyCall,
        ResponsesAnswer,
        ResponsesCustomCall,
        ResponsesFunctionCall,
        ResponsesItem,
    )

__all__ = ["CallMethods"]


class CallMethods:
    """`dispatch`, `execute_function_call` and `call`, for `OpenAIPeerToolAdapter`.

    What each returns is typed by what it is given: Chat tool calls get
    `ChatCompletionToolMessageParam`s (`messages += await adapter.dispatch(message.tool_calls)`
    type-checks with `messages: list[ChatCompletionMessageParam]`), Responses items get
    `FunctionCallOutput` items (`input_items += ...` with `list[ResponseInputItemParam]`), legacy
    function calls `ChatCompletionFunctionMessageParam`s; calls of mixed types the union of them
    all. Plain dicts (`dict[str, Any]`) say nothing of their shape to a type checker: their
    answers are typed `Any`.
    """

    _answerer: Answerer

    if TYPE_CHECKING:  # the adapter's own

        def _check_open(self) -> None: ...

    def _answering(self) -> Answerer:
        """What answers the calls: the adapter's answerer (a Router's face hands its adapter's)."""
        return self._answerer

    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[ChatCall] | ChatCall | None,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ChatAnswer]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Response | Iterable[ResponsesItem] | ResponsesFunctionCall | ResponsesCustomCall,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ResponsesAnswer]: ...
    @overload
    async def dispatch(
        self, tool_calls: LegacyCall, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self, tool_calls: ChatCompletionMessage, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatAnswer | ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[Mapping[str, Any]] | Mapping[str, Any],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Any]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[ChatCall | ResponsesItem | LegacyCall | Mapping[str, Any]],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Answer]: ...
    async def dispatch(
        self, tool_calls: Any, *, call_timeout: float | None = UNSET, text_calls: bool = False
    ) -> list[Any]:
        """Answer every tool call, concurrently; one answer per call, in call order.

        A call to an unknown tool, malformed arguments, a failing or slow peer: each becomes an
        error answer for the model; nothing a model or a peer does makes this raise. With
        `media="attach"`, images that Chat tool calls returned follow the answers in one user
        message (Chat tool messages carry text only).

        Args:
            tool_calls: Chat Completions tool calls, Responses `function_call` items and legacy
                function calls, SDK objects or dicts, shapes mixed; or None, one call, an
                assistant message, a whole `Response`. Custom tool calls get an error answer;
                other Responses items (reasoning, calls the API ran...) are passed over.
            call_timeout: Seconds each call may take, overriding the peer's and adapter's default.
            text_calls: Given an assistant message that called nothing, or a `Response` without
                function calls, answer the calls the model wrote in its text instead
                (`recover_text_calls` gives the message to append, with the same ids).

        Raises:
            ToolCallFormatError: Something passed is no tool call of a known shape, or a call has
                no usable id, so its answer could not be matched to it (nothing runs).
        """
        self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        answerer = self._answering()
        if text_calls:
            tool_calls = text_call_items(tool_calls, resolver(answerer))
        items, whole_response = tool_call_items(tool_calls)
        if len(items) == 1:  # the usual turn: no task group, no coroutine between here and the peer
            item = items[0]
            call = parse_tool_call(item, lenient=whole_response, index=None if item is tool_calls else 0)
            if call is None:
                return []
            return answerer.answers([call], [await answerer.run(call, call_timeout)])
        parsed = (
            parse_tool_call(item, lenient=whole_response, index=None if item is tool_calls else index)
            for index, item in enumerate(items)
        )
        calls = [call for call in parsed if call is not None]
        if len(calls) == 1:  # one call among items passed over
            return answerer.answers(calls, [await answerer.run(calls[0], call_timeout)])
        return answerer.answers(calls, await answerer.run_all(calls, call_timeout))

    def recover_text_calls(self, message: Any) -> ChatCompletionAssistantMessageParam | None:
        """The Chat assistant message to append instead of `message` when the model wrote its tool
        calls as text (Hermes `<tool_call>`, JSON, Mistral `[TOOL_CALLS]`, Llama
        `<|python_tag|>`, pythonic `[f(a=1)]`): with those calls as `tool_calls` and only the rest
        of the text as content; None when it holds none that can all be recovered (see
        docs/model.md). `dispatch(message, text_calls=True)` answers them, with the same ids."""
        return cast(
            "ChatCompletionAssistantMessageParam | None",
            chat_with_text_calls(message, resolver(self._answering())),
        )

    def recover_text_call_items(self, response: Any) -> list[ResponseInputItemParam] | None:
        """As `recover_text_calls`, for a Responses reply (a `Response` or its `output`): the input
        items to append instead of its output, the written calls as `function_call` items."""
        items = responses_with_text_calls(response, resolver(self._answering()))
        return cast("list[ResponseInputItemParam] | None", items)

    @overload
    async def execute_function_call(
        self, call: ChatCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionToolMessageParam: ...
    @overload
    async def execute_function_call(
        self, call: ResponsesFunctionCall, *, call_timeout: float | None = ...
    ) -> FunctionCallOutput: ...
    @overload
    async def execute_function_call(
        self, call: ResponsesCustomCall, *, call_timeout: float | None = ...
    ) -> ResponseCustomToolCallOutputParam: ...
    @overload
    async def execute_function_call(
        self, call: LegacyCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionFunctionMessageParam: ...
    @overload
    async def execute_function_call(
        self, call: Mapping[str, Any], *, call_timeout: float | None = ...
    ) -> Any: ...
    async def execute_function_call(self, call: Any, *, call_timeout: float | None = UNSET) -> Any:
        """Answer a single tool call (any shape `dispatch` accepts), in the call's own shape."""
        self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        parsed = parse_one_call(call)
        answerer = self._answering()
        return answerer.answer(parsed, await answerer.run(parsed, call_timeout))

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None, *, call_timeout: float | None = UNSET
    ) -> Outcome:
        """Call a tool by public name with arguments (a JSON string or a dict) and say what became of it."""
        self._check_open()
        return await self._answering().run(ToolCall("function", None, name, arguments), call_timeout)
