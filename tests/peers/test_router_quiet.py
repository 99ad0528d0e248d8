"""Expected conditions are not log noise: a peer without `subscriptions/listen` is told at debug level."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as mt
import pytest
from mcp.server import Server

from mcpx_router import InProcessPeer, Router

pytestmark = pytest.mark.anyio


def _server(name: str) -> Server[Any]:
    tools = [mt.Tool(name="echo", input_schema={"type": "object", "properties": {}})]

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    return Server(name, on_list_tools=list_tools)


async def test_a_peer_without_listen_is_told_once_at_debug_level(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpx_router")
    async with Router() as router:
        await router.join_all({f"p{i}": InProcessPeer(_server(f"p{i}")) for i in range(3)})
        assert len(router.tools) == 3
    told = [r for r in caplog.records if "does not offer subscriptions/listen" in r.getMessage()]
    assert sorted(r.getMessage().split("'")[1] for r in told) == ["p0", "p1", "p2"]
    assert all(r.levelno == logging.DEBUG for r in told)
    assert not [r for r in caplog.records if r.name.startswith("mcpx_router") and r.levelno >= logging.INFO]
