"""The router's tools in LangChain's `create_agent`: a middleware that offers the current tools on
every model call and runs calls to them (loaded with `LangChainTools.middleware()` only)."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from ._router_calls import ShadowedToolWarning

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
    runs each call to one of them through the router (see `LangChainTools.middleware`).

    The agent's own tools come first: a router tool with the name of one of them is left out of
    what the model is offered (a `ShadowedToolWarning` says so, once per name), so the name the
    model calls always runs the tool it was described.
    """

    def __init__(self, toolset: Toolset) -> None:
        super().__init__()
        self._toolset = toolset
        self._shadowed: set[str] = set()  # the router's names an agent's own tool took, told once

    @property
    def name(self) -> str:
        return "mcpx_router"

    def _offered(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        own = {_name(tool) for tool in request.tools} - {None}
        mine = []
        for tool in self._toolset.tools():
            if tool.name not in own:
                mine.append(tool)
            elif tool.name not in self._shadowed:
                self._shadowed.add(tool.name)
                warnings.warn(
                    f"the agent has a tool of its own named {tool.name!r}: the router's {tool.name!r} "
                    "is not offered to the model while that tool exists (calls to the name run the "
                    "agent's); rename the agent's tool, or give the router's another name (aliases=)",
                    ShadowedToolWarning,
                    stacklevel=2,
                )
        return request.override(tools=[*request.tools, *mine])

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


def _name(tool: BaseTool | dict[str, Any]) -> str | None:
    """A tool's name as the model is offered it: a `BaseTool`'s, or a tool dict's (a provider's
    built-in tool, or an OpenAI-format function)."""
    if not isinstance(tool, dict):
        return tool.name
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None
