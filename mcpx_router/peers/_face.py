"""What the Router shows the model: its adapter's tool lists and dispatch, handed through unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._adapter import OpenAIPeerToolAdapter
from .._answering import UNSET, Answerer
from .._calling import CallMethods
from .._catalogue import PublishedTool
from .._group_face import AdapterEvent
from .._groups import GroupInfo
from .._naming import ToolKey
from .._reputation import StatsReport
from ._events import EventHub

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from openai.types.shared_params import FunctionDefinition

__all__ = ["AdapterFace"]


class AdapterFace(CallMethods):
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

    # dispatch, execute_function_call and call: the adapter's own methods (`_calling.py`), with
    # their typed overloads, answered by the adapter's answerer.
    def _answering(self) -> Answerer:
        return self._adapter._answering()

    def _check_open(self) -> None:
        self._adapter._check_open()
