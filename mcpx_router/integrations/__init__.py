"""mcpx_router's tools in other agent frameworks, each an optional extra, loaded only when imported.

- `mcpx_router.integrations.agents` (`pip install 'mcpx-router[agents]'`): `RouterMCPServer`,
  a Router or adapter as one of the OpenAI Agents SDK's MCP servers
  (`Agent(mcp_servers=[RouterMCPServer(router)])`).
- `mcpx_router.integrations.pydantic_ai` (`pip install 'mcpx-router[pydantic-ai]'`):
  `RouterToolset`, a Router or adapter as a Pydantic AI toolset
  (`Agent(model, toolsets=[RouterToolset(router)])`).
- `mcpx_router.integrations.langchain` (`pip install 'mcpx-router[langchain]'`): `LangChainTools`,
  the router's tools as LangChain tools for `create_agent`, LangGraph's `ToolNode` and
  `create_react_agent`, kept current as peers come and go.
- `mcpx_router.integrations.dspy` (`pip install 'mcpx-router[dspy]'`): `DSPyTools`, the router's
  tools as `dspy.Tool` objects, and a `dspy.ReAct` that takes the current tools before each step.

Each offers the tools the router publishes now and sends every call through the router's own
dispatch. docs/frameworks.md compares them with each framework's own MCP support. Nothing here is
imported by `import mcpx_router`.
"""

from __future__ import annotations

import importlib

_INTEGRATIONS = frozenset({"agents", "dspy", "langchain", "pydantic_ai"})


def __getattr__(name: str) -> object:
    # `mcpx_router.integrations.agents` reachable as the docs write it; its framework loads with it.
    if name in _INTEGRATIONS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
