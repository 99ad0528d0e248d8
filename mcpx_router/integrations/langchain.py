"""The router's tools as LangChain tools, for LangChain's `create_agent` and LangGraph's agents.

Install with `pip install 'mcpx-router[langchain]'`. Each published tool (`peer__tool`, a
group's function) becomes a `RouterTool`, a LangChain `BaseTool` whose `args_schema` is the JSON
schema the router publishes; calls go through the router (validation, repair, failover) and
its answer becomes the tool message: text, with LangChain image blocks for images, and the
router's `Outcome` as the message's artifact. A bad call is a `ToolMessage` with
`status="error"` holding the router's explanation, never an exception that ends the graph.

`LangChainTools` keeps them current: `middleware()` for `create_agent`, `tool_node()` and
`model(chat_model)` for LangGraph's `ToolNode` and `create_react_agent`, `tools()` for the rest.

Example:
    ```python
    from langchain.agents import create_agent
    from mcpx_router.integrations.langchain import LangChainTools

    async with Router() as router:
        await router.join("weather", StdioPeer("python", ["weather.py"]))
        toolset = LangChainTools(router)
        agent = create_agent(chat_model, tools=[], middleware=[toolset.middleware()])
        # LangGraph: create_react_agent(toolset.model(chat_model), toolset.tool_node())
        state = await agent.ainvoke({"messages": [("user", "Weather in Oslo?")]})
    ```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool, ToolException
from langgraph.prebuilt import ToolNode
from pydantic import ConfigDict, Field

from ._router_calls import RouterCalls, ShadowedToolWarning, ToolRouter, images_of

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

    from .._catalogue import PublishedTool
    from .._dispatch import Outcome
    from ._langchain_agents import RouterMiddleware

__all__ = ["LangChainTools", "LiveToolNode", "RouterTool", "ShadowedToolWarning"]

_ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


class RouterTool(BaseTool):
    """One of the router's tools as a LangChain tool; sync (`invoke`) and async (`ainvoke`).

    Its content is the router's answer: the text the model reads, followed by standard image
    blocks (`{"type": "image", "base64": ..., "mime_type": ...}`) when the tool returned images;
    its artifact is the router's `Outcome` (the peer's own `CallToolResult`, which member of a
    group served the call). A call the router answers with an error raises `ToolException`,
    which `handle_tool_error=True` turns into a `ToolMessage` with `status="error"`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    calls: RouterCalls = Field(exclude=True, repr=False)
    """How the call reaches the router."""
    response_format: Any = "content_and_artifact"
    handle_tool_error: Any = True

    def _run(self, **arguments: Any) -> tuple[str | list[str | dict[str, Any]], Outcome]:
        return _content(self.calls.call(self.name, arguments))

    async def _arun(self, **arguments: Any) -> tuple[str | list[str | dict[str, Any]], Outcome]:
        return _content(await self.calls.acall(self.name, arguments))


def _content(outcome: Outcome) -> tuple[str | list[str | dict[str, Any]], Outcome]:
    if outcome.is_error:
        raise ToolException(outcome.text)
    images = images_of(outcome)
    if not images:
        return outcome.text, outcome
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": outcome.text}]
    blocks += [{"type": "image", "base64": image.data, "mime_type": image.mime_type} for image in images]
    return blocks, outcome


def _tool(calls: RouterCalls, published: PublishedTool) -> RouterTool:
    return RouterTool(
        name=published.name,
        description=published.description,
        args_schema=published.parameters,
        calls=calls,
    )


class LangChainTools:
    """The router's tools as LangChain tools, kept current as peers join, leave and change.

    `tools()` is the list now (the same objects while the router's `version` stays);
    `tool_node()` is a LangGraph `ToolNode` that runs whatever the router publishes when a call
    arrives; `model(chat_model)` is a model for `create_react_agent` that binds the current
    tools on every turn. A peer that joins mid-conversation is offered on the next turn.

    Args:
        router: A `Router` or `OpenAIPeerToolAdapter` (made inside its event loop: async use,
            and sync use from other threads), or a blocking one from `mcpx_router.sync` (sync
            and async use from anywhere).
    """

    def __init__(self, router: ToolRouter) -> None:
        self._calls = RouterCalls(router)
        self._version: int | None = None
        self._tools: list[BaseTool] = []
        self._by_name: dict[str, BaseTool] = {}

    def tools(self) -> list[BaseTool]:
        """Every tool the router publishes now, groups' functions included."""
        version = self._calls.router.version
        if version != self._version:
            self._tools = [_tool(self._calls, published) for published in self._calls.router.tools]
            self._by_name = {tool.name: tool for tool in self._tools}
            self._version = version
        return list(self._tools)

    def tool(self, name: str) -> BaseTool:
        """The tool published as `name`; for a name the router does not know, a tool whose
        every call the router answers with its own error (why it is gone, or close names)."""
        self.tools()
        found = self._by_name.get(name)
        if found is None:
            return RouterTool(name=name, description="", args_schema=_ANY_ARGUMENTS, calls=self._calls)
        return found

    def tool_node(self, **options: Any) -> LiveToolNode:
        """A `ToolNode` over the router's tools as they are when each call arrives.

        Args:
            options: Passed to `ToolNode` (`name`, `handle_tool_errors`, `wrap_tool_call`...).
        """
        return LiveToolNode(self, **options)

    def middleware(self) -> RouterMiddleware:
        """A middleware for LangChain's `create_agent` (the `langchain` package): every model
        call is offered the router's current tools, after the agent's own, and calls to them run
        through the router. `create_agent(model, tools=[...], middleware=[toolset.middleware()])`.

        The agent's own tools come first: a router tool named as one of them is not offered
        (`ShadowedToolWarning`, once per name), and a call to that name runs the agent's.
        """
        from ._langchain_agents import RouterMiddleware

        return RouterMiddleware(self)

    def model(
        self, chat_model: BaseChatModel, **bind_options: Any
    ) -> Callable[[Any, Any], Runnable[LanguageModelInput, BaseMessage]]:
        """A model for `create_react_agent` (its `(state, runtime)` form) that is bound to the
        router's current tools before each turn (rebound only when they changed).

        Args:
            chat_model: A chat model that supports `bind_tools`.
            bind_options: Passed to `bind_tools` (`tool_choice`, `strict`, ...).
        """
        bound: dict[int | None, Runnable[LanguageModelInput, BaseMessage]] = {}

        def current(state: Any, runtime: Any) -> Runnable[LanguageModelInput, BaseMessage]:
            tools = self.tools()
            if self._version not in bound:
                bound.clear()
                bound[self._version] = chat_model.bind_tools(tools, **bind_options)
            return bound[self._version]

        return current


class LiveToolNode(ToolNode):
    """A `ToolNode` whose tools are the router's when each call arrives (see `LangChainTools`).

    A call to a name the router no longer publishes (its peer left) is answered by the router,
    with its own explanation, as a tool message with `status="error"`.
    """

    def __init__(self, toolset: LangChainTools, **options: Any) -> None:
        super().__init__(toolset.tools(), **options)
        self._toolset = toolset

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        return _AnyName(self._toolset)


class _AnyName(dict[str, BaseTool]):
    """The router's tools by name, where a name no tool answers to still finds the router."""

    def __init__(self, toolset: LangChainTools) -> None:
        super().__init__((tool.name, tool) for tool in toolset.tools())
        self._toolset = toolset

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name) or self._toolset.tool(name)
