"""The competitors' MCP tool wrappers, each driven the way its library calls an MCP tool for a model.

Only imported with `python -m benchmarks --compare`. Every third-party package is imported
inside the function that needs it (`importlib`), so a missing one is skipped with one line and
the dev environment's type check never sees these packages. What each one calls:

- openai-agents: an `agents.mcp` server (`_MCPServerWithClientSession`, the base of its stdio,
  SSE and streamable-HTTP servers, with `create_streams` giving `mcp.Client` the in-process
  server) and `MCPUtil.invoke_mcp_tool(server, tool, RunContextWrapper(None), arguments_json)`,
  what the function tool made by `MCPUtil.to_function_tool` runs when the model calls it.
- pydantic-ai: `pydantic_ai.mcp.MCPToolset(fastmcp.Client(server))`, its tools from
  `get_tools(ctx)`, each call `toolset.call_tool(name, args, ctx, tool)` (what the agent's tool
  manager calls with the arguments it parsed).
- fastmcp: `fastmcp.Client(server)` (in-process transport) and `client.call_tool(name, args)`.
- mcp: `ClientSessionGroup` holding the session of an `mcp.Client` (`connect_with_session`),
  `group.call_tool(name, args)`.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import mcp

Call = Callable[[], Awaitable[object]]

RIVALS = ("openai-agents", "pydantic-ai", "fastmcp")
_MODULES = {"openai-agents": "agents", "pydantic-ai": "pydantic_ai", "fastmcp": "fastmcp"}


def installed(backend: str) -> list[str]:
    """The competitors this environment can run, printing one line for each that it cannot."""
    found: list[str] = []
    for name in RIVALS:
        try:
            importlib.import_module(_MODULES[name])
        except ImportError as exc:
            print(f"  {name}: skipped, not installed ({exc}); `pip install -e .[bench]` adds it")
            continue
        if backend != "asyncio":
            print(f"  {name}: skipped, its MCP client runs on asyncio only in this comparison")
            continue
        found.append(name)
    return found


def _agents_server(server: Any, name: str, cache_tools_list: bool = True) -> Any:
    """An openai-agents MCP server whose streams are `mcp.Client`'s in-process transport."""
    agents_mcp = importlib.import_module("agents.mcp.server")
    base = agents_mcp._MCPServerWithClientSession

    class InProcess(base):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__(cache_tools_list=cache_tools_list, client_session_timeout_seconds=60)
            self._name = name

        @property
        def name(self) -> str:
            return self._name

        def create_streams(self) -> Any:
            return server  # mcp 2.x: `mcp.Client(server)` connects to an `MCPServer` in process

    return InProcess()


async def _agents(stack: AsyncExitStack, server: Any, tool: str, arguments: dict[str, Any]) -> Call:
    agents = importlib.import_module("agents")
    util = importlib.import_module("agents.mcp.util").MCPUtil
    agents.set_tracing_disabled(True)
    peer = await stack.enter_async_context(_agents_server(server, "echo"))
    (listed,) = [t for t in await peer.list_tools() if t.name == tool]
    context = agents.RunContextWrapper(context=None)
    text = json.dumps(arguments)
    return lambda: util.invoke_mcp_tool(peer, listed, context, text)


async def _pydantic_ai(stack: AsyncExitStack, server: Any, tool: str, arguments: dict[str, Any]) -> Call:
    fastmcp = importlib.import_module("fastmcp")
    pai_mcp = importlib.import_module("pydantic_ai.mcp")
    toolset = await stack.enter_async_context(pai_mcp.MCPToolset(fastmcp.Client(server)))
    ctx = _run_context()
    listed = (await toolset.get_tools(ctx))[tool]
    return lambda: toolset.call_tool(tool, dict(arguments), ctx, listed)


def _run_context() -> Any:
    """A pydantic-ai `RunContext` as an agent run passes to its toolsets (a test model, no deps)."""
    pai = importlib.import_module("pydantic_ai")
    test_model = importlib.import_module("pydantic_ai.models.test").TestModel
    usage = importlib.import_module("pydantic_ai.usage").RunUsage
    return pai.RunContext(deps=None, model=test_model(), usage=usage())


async def _fastmcp(stack: AsyncExitStack, server: Any, tool: str, arguments: dict[str, Any]) -> Call:
    fastmcp = importlib.import_module("fastmcp")
    client = await stack.enter_async_context(fastmcp.Client(server))
    return lambda: client.call_tool(tool, arguments)


async def _session_group(
    stack: AsyncExitStack, client: mcp.Client, tool: str, arguments: dict[str, Any]
) -> Call:
    group = mcp.ClientSessionGroup()
    assert client.server_info is not None
    await group.connect_with_session(client.server_info, client.session)
    assert tool in group.tools, sorted(group.tools)
    return lambda: group.call_tool(tool, arguments)


_OPENERS = {"openai-agents": _agents, "pydantic-ai": _pydantic_ai, "fastmcp": _fastmcp}


async def open_calls(
    stack: AsyncExitStack, server: Any, client: mcp.Client, tool: str, arguments: dict[str, Any], backend: str
) -> dict[str, Call]:
    """One in-process call of `tool` through each available competitor, connected on `stack`."""
    calls = {"ClientSessionGroup": await _session_group(stack, client, tool, arguments)}
    for name in installed(backend):
        calls[name] = await _OPENERS[name](stack, server, tool, arguments)
    return calls


def text_of(result: object) -> str:
    """The text a competitor's call returned, whatever wrapper it comes in (for the sanity check)."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        return str(result.get("text", result))
    content = getattr(result, "content", None)
    if isinstance(content, list) and content:
        return str(getattr(content[0], "text", content[0]))
    return str(result)
