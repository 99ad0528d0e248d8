"""What the Router shows the model: its adapter's tool lists and dispatch, handed through unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._adapter import OpenAIPeerToolAdapter
from .._answering import UNSET, Answerer
from .._calling import CallMethods
from .._catalogue import PublishedTool

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

    # dispatch, execute_function_call and call: the adapter's own methods (`_calling.py`), with
    # their typed overloads, answered by the adapter's answerer.
    def _answering(self) -> Answerer:
        return self._adapter._answering()

    def _check_open(self) -> None:
        self._adapter._check_open()
