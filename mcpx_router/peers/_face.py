"""What the Router shows the model: its adapter's tool lists and dispatch, handed through unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._adapter import OpenAIPeerToolAdapter, Outcome
from .._catalogue import PublishedTool

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from openai.types.shared_params import FunctionDefinition

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

    def get_openai_tools(self, **options: Any) -> tuple[ChatCompletionFunctionToolParam, ...]:
        """The Chat Completions `tools` list (see `OpenAIPeerToolAdapter.get_openai_tools`)."""
        return self._adapter.get_openai_tools(**options)

    def get_responses_tools(self, **options: Any) -> tuple[FunctionToolParam, ...]:
        """The Responses API `tools` list (see `OpenAIPeerToolAdapter.get_responses_tools`)."""
        return self._adapter.get_responses_tools(**options)

    def get_openai_functions(self, **options: Any) -> tuple[FunctionDefinition, ...]:
        """The legacy `functions` list (see `OpenAIPeerToolAdapter.get_openai_functions`)."""
        return self._adapter.get_openai_functions(**options)

    async def dispatch(self, tool_calls: Any, **options: Any) -> list[dict[str, Any]]:
        """Answer the model's tool calls, one answer each, in order (see `OpenAIPeerToolAdapter.dispatch`)."""
        return await self._adapter.dispatch(tool_calls, **options)

    async def call(self, name: str, arguments: Any, **options: Any) -> Outcome:
        """Call one tool by public name (see `OpenAIPeerToolAdapter.call`)."""
        return await self._adapter.call(name, arguments, **options)
