"""The blocking call methods, typed as the async ones: each call shape answered in its own type."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, overload

from .._answering import UNSET
from .._dispatch import Outcome
from .._naming import ToolKey
from ._portal import LoopThread

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionFunctionMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessage,
        ChatCompletionToolMessageParam,
    )
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseCustomToolCallOutputParam,
        ResponseInputItemParam,
    )
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from openai.types.shared_params import FunctionDefinition

    from .._catalogue import PublishedTool
    from ..model.calls._answers import Answer, ChatAnswer, ResponsesAnswer
    from ..model.calls._calls import (
        ChatCall,
        LegacyCall,
        ResponsesCustomCall,
        ResponsesFunctionCall,
        ResponsesItem,
    )
    from ..peers._router import Router as AsyncRouter

__all__ = ["BlockingCalls"]


class BlockingCalls:
    """The tool lists and the call methods of a blocking facade, each run in its event loop thread."""

    _loop: LoopThread[AsyncRouter]

    # -- the catalogue ----------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Changes whenever the published tools change, and only then."""
        return self._loop.call(lambda: self._loop.value.version)

    @property
    def tools(self) -> tuple[PublishedTool, ...]:
        """Every published tool, in peer registration order."""
        return self._loop.call(lambda: self._loop.value.tools)

    def get_openai_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """The Chat Completions `tools` list (see `OpenAIPeerToolAdapter.get_openai_tools`)."""
        return self._loop.call(
            self._loop.value.get_openai_tools, relevant_to=relevant_to, max_tools=max_tools
        )

    def get_responses_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionToolParam, ...]:
        """The Responses API `tools` list (see `OpenAIPeerToolAdapter.get_responses_tools`)."""
        return self._loop.call(
            self._loop.value.get_responses_tools, relevant_to=relevant_to, max_tools=max_tools
        )

    def get_openai_functions(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionDefinition, ...]:
        """The legacy `functions` list (see `OpenAIPeerToolAdapter.get_openai_functions`)."""
        return self._loop.call(
            self._loop.value.get_openai_functions, relevant_to=relevant_to, max_tools=max_tools
        )

    def resolve(self, name: str) -> ToolKey:
        """The (peer, tool) published under a public name; raise UnknownToolError if none is."""
        return self._loop.call(self._loop.value.resolve, name)

    def why_unknown(self, name: str) -> str:
        """What a call to an unpublished `name` is answered with (see the adapter's `why_unknown`)."""
        return self._loop.call(self._loop.value.why_unknown, name)

    def public_name(self, peer_id: str, tool: str) -> str:
        """The public name of `peer_id`'s tool `tool`; raise UnknownToolError if it is not published."""
        return self._loop.call(self._loop.value.public_name, peer_id, tool)

    def rejected_tools(self, peer_id: str) -> dict[str, str]:
        """Tools of `peer_id` that could not be published, each with the reason."""
        return self._loop.call(self._loop.value.rejected_tools, peer_id)

    # -- calls ------------------------------------------------------------------------------

    @overload
    def dispatch(
        self,
        tool_calls: Iterable[ChatCall] | ChatCall | None,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ChatAnswer]: ...
    @overload
    def dispatch(
        self,
        tool_calls: Response | Iterable[ResponsesItem] | ResponsesFunctionCall | ResponsesCustomCall,
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[ResponsesAnswer]: ...
    @overload
    def dispatch(
        self, tool_calls: LegacyCall, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatCompletionFunctionMessageParam]: ...
    @overload
    def dispatch(
        self, tool_calls: ChatCompletionMessage, *, call_timeout: float | None = ..., text_calls: bool = ...
    ) -> list[ChatAnswer | ChatCompletionFunctionMessageParam]: ...
    @overload
    def dispatch(
        self,
        tool_calls: Iterable[Mapping[str, Any]] | Mapping[str, Any],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Any]: ...
    @overload
    def dispatch(
        self,
        tool_calls: Iterable[ChatCall | ResponsesItem | LegacyCall | Mapping[str, Any]],
        *,
        call_timeout: float | None = ...,
        text_calls: bool = ...,
    ) -> list[Answer]: ...
    def dispatch(
        self, tool_calls: Any, *, call_timeout: float | None = UNSET, text_calls: bool = False
    ) -> list[Any]:
        """Answer every tool call, concurrently; one answer per call, in call order.

        As `OpenAIPeerToolAdapter.dispatch`: nothing a model or a peer does makes this raise.
        A generator of calls is read in the caller's thread.
        """
        if isinstance(tool_calls, Iterator):
            tool_calls = list(tool_calls)  # a generator is read here, not in the loop thread
        answers: list[Any] = self._loop.call(
            self._loop.value.dispatch, tool_calls, call_timeout=call_timeout, text_calls=text_calls
        )
        return answers

    def recover_text_calls(
        self, message: Any, *, unknown: bool = False, truncated: bool = False
    ) -> ChatCompletionAssistantMessageParam | None:
        """The assistant message with the calls written in its text as `tool_calls` (see
        `OpenAIPeerToolAdapter.recover_text_calls`); None when it holds none."""
        recover = self._loop.value.recover_text_calls
        return self._loop.call(recover, message, unknown=unknown, truncated=truncated)

    def recover_text_call_items(
        self, response: Any, *, unknown: bool = False, truncated: bool = False
    ) -> list[ResponseInputItemParam] | None:
        """A Responses reply's output with its written calls as `function_call` items (see
        `OpenAIPeerToolAdapter.recover_text_call_items`); None when it holds none."""
        recover = self._loop.value.recover_text_call_items
        return self._loop.call(recover, response, unknown=unknown, truncated=truncated)

    @overload
    def execute_function_call(
        self, call: ChatCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionToolMessageParam: ...
    @overload
    def execute_function_call(
        self, call: ResponsesFunctionCall, *, call_timeout: float | None = ...
    ) -> FunctionCallOutput: ...
    @overload
    def execute_function_call(
        self, call: ResponsesCustomCall, *, call_timeout: float | None = ...
    ) -> ResponseCustomToolCallOutputParam: ...
    @overload
    def execute_function_call(
        self, call: LegacyCall, *, call_timeout: float | None = ...
    ) -> ChatCompletionFunctionMessageParam: ...
    @overload
    def execute_function_call(self, call: Mapping[str, Any], *, call_timeout: float | None = ...) -> Any: ...
    def execute_function_call(self, call: Any, *, call_timeout: float | None = UNSET) -> Any:
        """Answer a single tool call (any shape `dispatch` accepts), in the call's own shape."""
        return self._loop.call(self._loop.value.execute_function_call, call, call_timeout=call_timeout)

    def call(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None = None,
        *,
        call_timeout: float | None = UNSET,
    ) -> Outcome:
        """Call a tool by public name with arguments (a JSON string or a dict) and say what became of it."""
        outcome: Outcome = self._loop.call(self._loop.value.call, name, arguments, call_timeout=call_timeout)
        return outcome
