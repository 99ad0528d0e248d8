"""What the Router shows the model: its adapter's tool lists and dispatch, handed through unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, overload

from .._adapter import OpenAIPeerToolAdapter
from .._answering import UNSET
from .._catalogue import PublishedTool
from .._dispatch import Outcome
from .._naming import ToolKey
from ..groups._grouping import AdapterEvent
from ..groups._groups import GroupInfo
from ..groups._reputation import StatsReport
from ._events import EventHub

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

    from ..model.calls._answers import Answer, ChatAnswer, ResponsesAnswer
    from ..model.calls._calls import (
        ChatCall,
        LegacyCall,
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

    def resolve(self, name: str) -> ToolKey:
        """The (peer, tool) published under a public name; raise UnknownToolError if none is."""
        return self._adapter.resolve(name)

    def why_unknown(self, name: str) -> str:
        """What a call to an unpublished `name` is answered with (see the adapter's `why_unknown`)."""
        return self._adapter.why_unknown(name)

    def public_name(self, peer_id: str, tool: str) -> str:
        """The public name of `peer_id`'s tool `tool`; raise UnknownToolError if it is not published."""
        return self._adapter.public_name(peer_id, tool)

    def rejected_tools(self, peer_id: str) -> dict[str, str]:
        """Tools of `peer_id` that could not be published, each with the reason."""
        return self._adapter.rejected_tools(peer_id)

    def stats(self) -> StatsReport:
        """Calls, failures by kind, latency and feedback per peer and per tool (see the adapter's `stats`)."""
        return self._adapter.stats()

    def feedback(self, call_id: str, ok: bool, weight: float = 1.0) -> ToolKey:
        """Judge the answer to a tool call (see the adapter's `feedback`)."""
        return self._adapter.feedback(call_id, ok, weight)

    def groups(self) -> tuple[GroupInfo, ...]:
        """Every group of equivalent tools now (see the adapter's `groups`)."""
        return self._adapter.groups()

    def set_aliases(self, aliases: Mapping[str, Any], *, auto_groups: bool | None = None) -> None:
        """Add or replace groups of equivalent tools (see the adapter's `set_aliases`)."""
        self._adapter.set_aliases(aliases, auto_groups=auto_groups)

    def _forward_events(self, hub: EventHub | None) -> None:
        """Hand the adapter's events (groups, failovers, finished calls) to `hub` as well; None: stop."""
        adapter = self._adapter
        if hub is None:
            adapter.on_event = getattr(self, "_adapter_on_event", None)
            return
        previous = self._adapter_on_event = adapter.on_event

        def forward(event: AdapterEvent) -> None:
            if previous is not None:
                previous(event)
            hub.emit(event)

        adapter.on_event = forward

    # -- the calls: the adapter's own, typed as its overloads type them -------------------

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
        """Answer every tool call, concurrently (see `OpenAIPeerToolAdapter.dispatch`)."""
        answers: list[Any] = await self._adapter.dispatch(
            tool_calls, call_timeout=call_timeout, text_calls=text_calls
        )
        return answers

    def recover_text_calls(
        self, message: Any, *, unknown: bool = False, truncated: bool = False
    ) -> ChatCompletionAssistantMessageParam | None:
        """The assistant message with the calls the model wrote as text (see
        `OpenAIPeerToolAdapter.recover_text_calls`)."""
        return self._adapter.recover_text_calls(message, unknown=unknown, truncated=truncated)

    def recover_text_call_items(
        self, response: Any, *, unknown: bool = False, truncated: bool = False
    ) -> list[ResponseInputItemParam] | None:
        """A Responses reply's items with the calls written as text (see
        `OpenAIPeerToolAdapter.recover_text_call_items`)."""
        return self._adapter.recover_text_call_items(response, unknown=unknown, truncated=truncated)

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
        """Answer a single tool call in its own shape (see `OpenAIPeerToolAdapter.execute_function_call`)."""
        return await self._adapter.execute_function_call(call, call_timeout=call_timeout)

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None, *, call_timeout: float | None = UNSET
    ) -> Outcome:
        """Call a tool by public name and say what became of it (see `OpenAIPeerToolAdapter.call`)."""
        return await self._adapter.call(name, arguments, call_timeout=call_timeout)
