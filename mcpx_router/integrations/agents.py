"""A Router (or a bare adapter) as an MCP server of the OpenAI Agents SDK (the `agents` extra).

Example:
    ```python
    from agents import Agent, RunConfig, Runner
    from mcpx_router import Router, StdioPeer
    from mcpx_router.integrations.agents import RouterMCPServer

    async with Router() as router:
        await router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
        server = RouterMCPServer(router)
        agent = Agent(name="assistant", mcp_servers=[server])
        result = await Runner.run(
            agent,
            "What time is it in Oslo?",
            # a name this turn did not offer (its peer left) is answered with the Router's reason
            # instead of ending the run with ModelBehaviorError
            run_config=RunConfig(
                tool_not_found_behavior="return_error_to_model",
                tool_error_formatter=server.tool_error_formatter,
            ),
        )
    ```

The SDK asks its MCP servers for their tools before every model call (this server keeps no
cache), so a peer that joins mid-conversation is offered at the next turn and one that leaves is
no longer offered. Every call goes through the Router's `call`: validation and repair of the
arguments, groups and failover, timeouts, progress, statistics and the `execute_tool` span
(a child of the OpenTelemetry span current where the SDK runs the tool), and an answer that says
what went wrong as text the model reads (`Error: ...`), never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from agents.mcp import MCPServer

from .. import UsageError
from ._offered import media_blocks, offered_tools

if TYPE_CHECKING:
    from agents.agent import AgentBase
    from agents.mcp.server import RequireApprovalSetting
    from agents.run_config import ToolErrorFormatterArgs
    from agents.run_context import RunContextWrapper
    from agents.tool_guardrails import ToolInputGuardrail, ToolOutputGuardrail

    from .. import OpenAIPeerToolAdapter, Outcome, Router
    from ..codemode import CodeMode

__all__ = ["RouterMCPServer", "call_tool_result"]


class RouterMCPServer(MCPServer):
    """The tools a Router publishes, as one of the SDK's MCP servers: `Agent(mcp_servers=[...])`.

    Tools keep their public names (`peer__tool`, and the groups' names), unique across peers, so
    the agent needs no `include_server_in_tool_names`. `connect` and `cleanup` do nothing: the
    Router's own `async with` opens and closes its peers.

    Args:
        source: The Router (or `OpenAIPeerToolAdapter`) whose tools are offered; or a `CodeMode`
            (docs/code-mode.md), whose `run_python` and `find_tools` are then the tools offered.
        name: The server's name in the SDK's traces and errors.
        relevant: When the Router publishes more tools than its `max_tools`, choose those
            most relevant to the run's input (the SDK's `turn_input`); False: the first ones.
        require_approval, tool_input_guardrails, tool_output_guardrails: As the SDK's own MCP
            servers take them.
    """

    def __init__(
        self,
        source: OpenAIPeerToolAdapter | Router | CodeMode,
        *,
        name: str = "mcpx-router",
        relevant: bool = True,
        require_approval: RequireApprovalSetting = None,
        tool_input_guardrails: list[ToolInputGuardrail[Any]] | None = None,
        tool_output_guardrails: list[ToolOutputGuardrail[Any]] | None = None,
    ) -> None:
        super().__init__(
            require_approval=require_approval,
            tool_input_guardrails=tool_input_guardrails,
            tool_output_guardrails=tool_output_guardrails,
        )
        self.source = source
        self._name = name
        self._relevant = relevant
        self._view: tuple[Any, ...] | None = None
        self._tools: list[mt.Tool] = []

    @property
    def name(self) -> str:
        return self._name

    async def connect(self) -> None:
        """Nothing to open: the Router holds its peers' connections."""

    async def cleanup(self) -> None:
        """Nothing to close: the Router's `async with` closes its peers."""

    async def list_tools(
        self, run_context: RunContextWrapper[Any] | None = None, agent: AgentBase | None = None
    ) -> list[mt.Tool]:
        """The tools the Router publishes now, as the model will see them (asked before every turn)."""
        relevant_to = run_context.turn_input if self._relevant and run_context is not None else None
        view, offered = offered_tools(self.source, relevant_to or None)
        if view is not self._view:
            self._tools = [
                mt.Tool(name=tool.name, description=tool.description, input_schema=tool.parameters)
                for tool in offered
            ]
            self._view = view
        return list(self._tools)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> mt.CallToolResult:
        """Call a tool by its public name through the Router; what fails is answered, not raised."""
        return call_tool_result(await self.source.call(tool_name, arguments))

    async def tool_error_formatter(self, error: ToolErrorFormatterArgs[Any]) -> str | None:
        """For `RunConfig(tool_error_formatter=...)`, beside `tool_not_found_behavior=
        "return_error_to_model"`: a call to a name the turn did not offer is answered with what
        the Router answers such a call with (why the tool went away, or the close names) in
        place of the SDK's `Tool 'x' not found.`; nothing is called. Other errors keep the SDK's
        own message (None)."""
        if error.kind != "tool_not_found":
            return None
        name = error.tool_name
        if any(tool.name == name for tool in self.source.tools):  # published, not offered this turn
            return (
                f"Error: {name!r} was not offered in this turn, so it was not called. "
                "Call only the functions offered now."
            )
        return f"Error: {self.source.why_unknown(name)}"

    async def list_prompts(self) -> mt.ListPromptsResult:
        """The Router's prompts, under their public names (none for a bare adapter)."""
        prompts = getattr(self.source, "prompts", None)
        if prompts is None:
            return mt.ListPromptsResult(prompts=[])
        return mt.ListPromptsResult(
            prompts=[item.prompt.model_copy(update={"name": item.name}) for item in prompts()]
        )

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None = None) -> mt.GetPromptResult:
        """The prompt published under `name`, filled in (see `Router.get_prompt`)."""
        get_prompt = getattr(self.source, "get_prompt", None)
        if get_prompt is None:
            raise UsageError(f"cannot get prompt {name!r}: a bare adapter holds no prompts; use a Router")
        result: mt.GetPromptResult = await get_prompt(
            name, None if arguments is None else {key: str(value) for key, value in arguments.items()}
        )
        return result


def call_tool_result(outcome: Outcome) -> mt.CallToolResult:
    """An `Outcome` as the `CallToolResult` the SDK turns into the tool's output.

    The text is what the model reads everywhere else (an error starts with `Error:`); the result's
    images follow it, which the SDK hands to the model as its own image outputs.
    """
    content: list[Any] = [mt.TextContent(type="text", text=outcome.text)]
    content += media_blocks(outcome, (mt.ImageContent,))
    return mt.CallToolResult(content=content, is_error=outcome.is_error)
