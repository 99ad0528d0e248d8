"""What the Router shows the model: its adapter's tool lists and dispatch, handed through unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, overload

from .._adapter import OpenAIPeerToolAdapter, Outcome
from .._answering import UNSET
from .._catalogue import PublishedTool

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionFunctionMessageParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessage,
    )
    from openai.types.responses import FunctionToolParam, Response
    from openai.types.shared_params import FunctionDefinition

    from ..model._calls import (
        Answer,
        ChatAnswer,
        ChatCall,
        LegacyCall,
        ResponsesAnswer,
        ResponsesCustomCall,
        ResponsesFunctionCall,
        ResponsesItem,
    )

__all__ = ["AdapterFace"]


class AdapterFace:
    """The adapter's face of a Router: the tools it publishes and the calls it answers."""

    _adapter: OpenAIPeerToolAdapter

    @property
    def adapter(self) -> OpenAIPeerToolAdapter:
        """The adapter the tools are published through."""
        return self._adapter

    @property
    def version(self) -> int:
        """The catalogue version: it changes whenever the published tools do."""
        return self._adapter.version

    @property
    def tools(self) -> tuple[PublishedTool, ...]:
        """Every published tool."""
        return self._adapter.tools

    def get_openai_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """The Chat Completions `tools` list (see `OpenAIPeerToolAdapter.get_openai_tools`)."""
        return self._adapter.get_openai_tools(relevant_to=relevant_to, max_tools=max_tools)

    def get_responses_tools(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionToolParam, ...]:
        """The Responses API `tools` list (see `OpenAIPeerToolAdapter.get_responses_tools`)."""
        return self._adapter.get_responses_tools(relevant_to=relevant_to, max_tools=max_tools)

    def get_openai_functions(
        self, *, relevant_to: str | Iterable[Any] | None = None, max_tools: int | None = UNSET
    ) -> tuple[FunctionDefinition, ...]:
        """The legacy `functions` list (see `OpenAIPeerToolAdapter.get_openai_functions`)."""
        return self._adapter.get_openai_functions(relevant_to=relevant_to, max_tools=max_tools)

    # The same overloads as `OpenAIPeerToolAdapter.dispatch` (`_calling.py`): answers typed by the calls.
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
        """Answer the model's tool calls, one answer each, in order (see `OpenAIPeerToolAdapter.dispatch`)."""
        answers: list[Any] = await self._adapter.dispatch(tool_calls, call_timeout=call_timeout)
        return answers

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None, *, call_timeout: float | None = UNSET
    ) -> Outcome:
        """Call one tool by public name (see `OpenAIPeerToolAdapter.call`)."""
        return await self._adapter.call(name, arguments, call_timeout=call_timeout)
