"""The adapter's call methods, typed with the `openai` SDK's own types: each shape answered in its own."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, overload

from ._answering import UNSET, Answerer
from ._dispatch import Outcome, check_timeout
from .model._calls import ToolCall, parse_one_call, parse_tool_call, tool_call_items

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionFunctionMessageParam,
        ChatCompletionMessage,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses import Response, ResponseCustomToolCallOutputParam
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
        self, tool_calls: Iterable[ChatCall] | ChatCall | None, *, call_timeout: float | None = ...
    ) -> list[ChatAnswer]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Response | Iterable[ResponsesItem] | ResponsesFunctionCall | ResponsesCustomCall,
        *,
        call_timeout: float | None = ...,
    ) -> list[ResponsesAnswer]: ...
    @overload
    async def dispatch(
        self, tool_calls: LegacyCall, *, call_timeout: float | None = ...
    ) -> list[ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self, tool_calls: ChatCompletionMessage, *, call_timeout: float | None = ...
    ) -> list[ChatAnswer | ChatCompletionFunctionMessageParam]: ...
    @overload
    async def dispatch(
        self, tool_calls: Iterable[Mapping[str, Any]] | Mapping[str, Any], *, call_timeout: float | None = ...
    ) -> list[Any]: ...
    @overload
    async def dispatch(
        self,
        tool_calls: Iterable[ChatCall | ResponsesItem | LegacyCall | Mapping[str, Any]],
        *,
        call_timeout: float | None = ...,
    ) -> list[Answer]: ...
    async def dispatch(self, tool_calls: Any, *, call_timeout: float | None = UNSET) -> list[Any]:
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

        Raises:
            ToolCallFormatError: Something passed is no tool call of a known shape, or a call has
                no usable id, so its answer could not be matched to it (nothing runs).
        """
        self._check_open()
        if call_timeout is not UNSET:
            check_timeout(call_timeout)
        items, whole_response = tool_call_items(tool_calls)
        answerer = self._answering()
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
