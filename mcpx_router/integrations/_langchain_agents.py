"""The router's tools in LangChain's `create_agent`: a middleware that offers the current tools on
every model call and runs calls to them (loaded with `LangChainTools.middleware()` only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

__all__ = ["RouterMiddleware", "Toolset"]


class Toolset(Protocol):
    """What the middleware uses of `LangChainTools` (named here, so neither module imports the other)."""

    def tools(self) -> list[BaseTool]: ...

    def tool(self, name: str) -> BaseTool: ...


class RouterMiddleware(AgentMiddleware[Any, Any, Any]):
    """Offers the router's tools as they are at each model call (after the agent's own), and
    runs each call to one of them through the router (see `LangChainTools.middleware`)."""

    def __init__(self, toolset: Toolset) -> None:
        super().__init__()
        self._toolset = toolset

    @property
    def name(self) -> str:
        return "mcpx_router"

    def _offered(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        mine = self._toolset.tools()
        names = {tool.name for tool in mine}
        others = [tool for tool in request.tools if isinstance(tool, dict) or tool.name not in names]
        return request.override(tools=[*others, *mine])

    def _resolved(self, request: ToolCallRequest) -> ToolCallRequest:
        if request.tool is not None:  # one of the agent's own tools
            return request
        return request.override(tool=self._toolset.tool(request.tool_call["name"]))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(self._offered(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._offered(request))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        return handler(self._resolved(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await handler(self._resolved(request))
