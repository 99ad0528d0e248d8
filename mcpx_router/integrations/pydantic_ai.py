"""A Router (or a bare adapter) as a Pydantic AI toolset (`pip install 'mcpx-router[pydantic-ai]'`).

Example:
    ```python
    from pydantic_ai import Agent
    from mcpx_router import Router, StdioPeer
    from mcpx_router.integrations.pydantic_ai import RouterToolset

    async with Router() as router:
        await router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
        agent = Agent("openai:gpt-5", toolsets=[RouterToolset(router)])
        result = await agent.run("What time is it in Oslo?")
    ```

The agent asks its toolsets for their tools at every step of a run, and this toolset answers
with what the Router publishes then, so a peer that joins mid-conversation is offered at the
next step. Every call goes through the Router's `call`: validation and repair of the arguments
against the peer's own schema, groups and failover, timeouts, progress, statistics and the
`execute_tool` span (a child of the agent's own tool span when it is instrumented).

A call that fails is answered with the Router's text (`Error: ...`) as a `ToolFailed`: the model
reads it as the tool's failed result, and no retry is consumed (a `ModelRetry` would end the run
once the retries are spent, and the Router's answer already says what to change). Images and
audio a tool returns reach the model as `BinaryImage` / `BinaryContent` beside the text.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from pydantic_ai import BinaryContent, BinaryImage
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from ._offered import media_blocks, offered_tools

if TYPE_CHECKING:
    from .. import OpenAIPeerToolAdapter, Router
    from ..codemode import CodeMode

__all__ = ["RouterToolset"]

_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))
"""The arguments are only parsed here: the Router checks (and repairs) them against the peer's schema."""


class RouterToolset(AbstractToolset[AgentDepsT]):
    """The tools a Router publishes, as one toolset: `Agent(model, toolsets=[RouterToolset(router)])`.

    Tools keep their public names (`peer__tool`, and the groups' names). The toolset opens and
    closes nothing: the Router's own `async with` owns its peers.

    Args:
        source: The Router (or `OpenAIPeerToolAdapter`) whose tools are offered; or a `CodeMode`
            (docs/code-mode.md), whose `run_python` and `find_tools` are then the tools offered.
        id: The toolset's id among the agent's toolsets (durable execution needs one).
        relevant: When the Router publishes more tools than its `max_tools`, choose those
            most relevant to the run's prompt; False: the first ones.
    """

    def __init__(
        self,
        source: OpenAIPeerToolAdapter | Router | CodeMode,
        *,
        id: str | None = None,
        relevant: bool = True,
    ) -> None:
        self.source = source
        self._id = id
        self._relevant = relevant
        self._view: tuple[Any, ...] | None = None
        self._defs: list[ToolDefinition] = []

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The tools the Router publishes now, as the model will see them (asked at every step)."""
        prompt = ctx.prompt if self._relevant and isinstance(ctx.prompt, str) else None
        view, offered = offered_tools(self.source, prompt or None)
        if view is not self._view:
            self._defs = [
                ToolDefinition(
                    name=tool.name,
                    description=tool.description,
                    parameters_json_schema=tool.parameters,
                    strict=tool.strict or None,
                )
                for tool in offered
            ]
            self._view = view
        return {
            tool_def.name: ToolsetTool(
                toolset=self, tool_def=tool_def, max_retries=ctx.max_retries, args_validator=_ANY_OBJECT
            )
            for tool_def in self._defs
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Call a tool by its public name through the Router.

        Raises:
            ToolFailed: The call failed; its message is the Router's answer, for the model.
        """
        outcome = await self.source.call(name, tool_args)
        if outcome.is_error:
            raise ToolFailed(outcome.text)
        media = [_binary(block) for block in media_blocks(outcome, (mt.ImageContent, mt.AudioContent))]
        return [outcome.text, *media] if media else outcome.text


def _binary(block: mt.ImageContent | mt.AudioContent) -> BinaryContent:
    data = base64.b64decode(block.data)
    if isinstance(block, mt.ImageContent):
        return BinaryImage(data=data, media_type=block.mime_type)
    return BinaryContent(data=data, media_type=block.mime_type)
