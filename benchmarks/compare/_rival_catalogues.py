"""Each competitor's OpenAI tool list for many MCP peers, made the way its library makes it for a model.

Only imported with `python -m benchmarks --compare`; third-party packages are imported through
`importlib` (see `_rivals.py`). Each builder connects its own sessions to the in-process servers
once (`open_builders`), then every call gives the Chat Completions tool dicts with peer-prefixed
names. Without `cached`, every call lists every peer again (the catalogue comparison); with it,
the library's tool-list cache is on and `Rival.forget(i)` is what the library runs when peer
`i` says its tools changed (the change comparison):

- openai-agents: `MCPUtil.get_all_function_tools(servers, convert_schemas_to_strict=False,
  run_context, agent, include_server_in_tool_names=True)` (what an `Agent` with several MCP
  servers runs before each model turn), then `Converter.tool_to_openai(tool)` for each (its Chat
  Completions model's conversion).
- pydantic-ai: `CombinedToolset([MCPToolset(fastmcp.Client(server), cache_tools=False)
  .prefixed(peer)])`, `get_tools(ctx)`, then `OpenAIChatModel.customize_request_parameters`
  (the model profile's JSON-schema transformer) and `_map_tool_definition` for each tool.
- fastmcp: `client.list_tools()` on a `fastmcp.Client` per peer, then the conversion its OpenAI
  sampling handler applies (`OpenAISamplingHandler._convert_tools_to_openai`), the tool name
  prefixed with the peer afterwards. It keeps no tool list between calls, so it has no
  notion of a change (`forget` is None).
- Forgetting: openai-agents `server.invalidate_tools_cache()` (it has no list-changed handler of
  its own; this is the documented call); pydantic-ai `toolset._invalidate_tools_cache()`, what
  its `MCPToolset` message handler runs on `notifications/tools/list_changed`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from . import _rivals

Build = Callable[[], Awaitable[list[Any]]]


@dataclass(frozen=True, slots=True)
class Rival:
    """One competitor's catalogue: `build` makes its OpenAI tool list, `forget(i)` drops peer i's."""

    build: Build
    forget: Callable[[int], None] | None


async def _agents(stack: AsyncExitStack, servers: Sequence[tuple[str, Any]], cached: bool) -> Rival:
    agents = importlib.import_module("agents")
    util = importlib.import_module("agents.mcp.util").MCPUtil
    converter = importlib.import_module("agents.models.chatcmpl_converter").Converter
    agents.set_tracing_disabled(True)
    peers = [
        await stack.enter_async_context(_rivals._agents_server(server, peer_id, cache_tools_list=cached))
        for peer_id, server in servers
    ]
    agent = agents.Agent(name="bench")
    context = agents.RunContextWrapper(context=None)

    async def build() -> list[Any]:
        tools = await util.get_all_function_tools(
            peers, False, context, agent, include_server_in_tool_names=True
        )
        return [converter.tool_to_openai(tool) for tool in tools]

    return Rival(build, lambda index: peers[index].invalidate_tools_cache())


async def _pydantic_ai(stack: AsyncExitStack, servers: Sequence[tuple[str, Any]], cached: bool) -> Rival:
    fastmcp = importlib.import_module("fastmcp")
    pai_mcp = importlib.import_module("pydantic_ai.mcp")
    combined = importlib.import_module("pydantic_ai.toolsets").CombinedToolset
    models = importlib.import_module("pydantic_ai.models")
    chat_model = importlib.import_module("pydantic_ai.models.openai").OpenAIChatModel
    provider = importlib.import_module("pydantic_ai.providers.openai").OpenAIProvider
    mcp_toolsets = [pai_mcp.MCPToolset(fastmcp.Client(server), cache_tools=cached) for _, server in servers]
    toolsets = [each.prefixed(peer_id) for each, (peer_id, _) in zip(mcp_toolsets, servers, strict=True)]
    toolset = await stack.enter_async_context(combined(toolsets))
    model = chat_model("gpt-4o", provider=provider(api_key="not-used"))
    ctx = _rivals._run_context()

    async def build() -> list[Any]:
        tools = await toolset.get_tools(ctx)
        params = models.ModelRequestParameters(function_tools=[tool.tool_def for tool in tools.values()])
        params = model.customize_request_parameters(params)
        return [model._map_tool_definition(tool_def, {}) for tool_def in params.function_tools]

    return Rival(build, lambda index: mcp_toolsets[index]._invalidate_tools_cache())


async def _fastmcp(stack: AsyncExitStack, servers: Sequence[tuple[str, Any]], cached: bool) -> Rival:
    fastmcp = importlib.import_module("fastmcp")
    handler = importlib.import_module("fastmcp.client.sampling.handlers.openai").OpenAISamplingHandler
    clients = [
        (peer_id, await stack.enter_async_context(fastmcp.Client(server))) for peer_id, server in servers
    ]

    async def build() -> list[Any]:
        out: list[Any] = []
        for peer_id, client in clients:
            for entry in handler._convert_tools_to_openai(await client.list_tools()):
                entry["function"]["name"] = f"{peer_id}__{entry['function']['name']}"
                out.append(entry)
        return out

    return Rival(build, None)


_OPENERS = {"openai-agents": _agents, "pydantic-ai": _pydantic_ai, "fastmcp": _fastmcp}


async def open_builders(
    stack: AsyncExitStack, servers: Sequence[tuple[str, Any]], backend: str, *, cached: bool = False
) -> dict[str, Rival]:
    """A catalogue per available competitor, its sessions connected on `stack`."""
    return {name: await _OPENERS[name](stack, servers, cached) for name in _rivals.installed(backend)}
