"""The Router with real third-party MCP servers: mcp-server-time (PyPI) over stdio, and
@modelcontextprotocol/server-everything (npm) over stdio and streamable HTTP
(see tests/support/_servers.py)."""

from __future__ import annotations

import json
import os
import signal

import anyio
import pytest

from mcpx_router import CallProgress, HealthChanged, HttpPeer, Reconnect, Router, StdioPeer, ToolsChanged

from ..support import _servers
from ..support.router_support import ABANDONED_HTTP_STREAMS, WAIT, child_pids, next_event

pytestmark = [pytest.mark.anyio, pytest.mark.thirdparty, *ABANDONED_HTTP_STREAMS]

LATE_TOOL = "everything__simulate-research-query"
"""server-everything registers this one after the handshake and announces it with list_changed."""


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    _servers.install_python_server("mcp-server-time")
    _servers.install_everything()


def _stdio(params: object) -> StdioPeer:
    from mcp import StdioServerParameters

    assert isinstance(params, StdioServerParameters)
    return StdioPeer(params.command, list(params.args), env=params.env)


async def _all_tools(router: Router, peer: str, expected: str) -> list[str]:
    """The peer's published names once `expected` is among them (it may come with a later change)."""
    with router.events() as events:
        while expected not in (names := [t.name for t in router.adapter.tools_of(peer)]):
            await next_event(events, ToolsChanged, lambda e: e.peer == peer)
    return names


async def test_time_server_over_stdio() -> None:
    async with Router() as router:
        names = await router.join("time", _stdio(_servers.time_server_params()))
        assert names == ("time__get_current_time", "time__convert_time")
        answer = await router.dispatch(
            [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {
                        "name": "time__convert_time",
                        "arguments": json.dumps(
                            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
                        ),
                    },
                }
            ]
        )
        converted = json.loads(answer[0]["content"])
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
        bad_zone = await router.call("time__get_current_time", {"timezone": "Mars/Olympus"})
        assert bad_zone.is_error and "Mars/Olympus" in bad_zone.text


async def test_everything_over_stdio_changes_progress_and_media() -> None:
    async with Router() as router:
        await router.join("everything", _stdio(_servers.everything_stdio_params()))
        names = await _all_tools(router, "everything", LATE_TOOL)
        assert "everything__get-tiny-image" in names and len(names) == 13
        image = await router.call("everything__get-tiny-image", {})
        assert not image.is_error and "[image: image/png" in image.text
        resource = await router.call(
            "everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}
        )
        assert not resource.is_error and "[resource " in resource.text
        with router.events() as events:
            done = await router.call(
                "everything__trigger-long-running-operation", {"duration": 0.3, "steps": 3}
            )
            updates = [await next_event(events, CallProgress) for _ in range(3)]
        assert not done.is_error
        assert [(u.progress, u.total) for u in updates] == [(1, 3), (2, 3), (3, 3)]
        assert {u.name for u in updates} == {"everything__trigger-long-running-operation"}


async def test_everything_killed_mid_call_recovers_under_the_same_names() -> None:
    async with Router(reconnect=Reconnect(initial_delay=0.1, jitter=0)) as router:
        await router.join("time", _stdio(_servers.time_server_params()))
        before = child_pids()
        await router.join("everything", _stdio(_servers.everything_stdio_params()))
        (node,) = child_pids() - before
        names = await _all_tools(router, "everything", LATE_TOOL)
        with router.events() as events:
            async with anyio.create_task_group() as tg:

                async def kill_when_running() -> None:
                    await next_event(events, CallProgress)
                    os.kill(node, signal.SIGKILL)

                tg.start_soon(kill_when_running)
                in_flight = await router.call(
                    "everything__trigger-long-running-operation", {"duration": 30, "steps": 30}
                )
            assert in_flight.text.startswith(
                "Error: everything__trigger-long-running-operation: the call was sent, but the "
                "connection to peer 'everything' failed ("
            ) and in_flight.text.endswith("before it answered; it may or may not have taken effect")
            assert router.adapter.tools_of("everything") == ()
            assert (await router.call("everything__echo", {"message": "x"})).text.startswith(
                "Error: 'everything__echo' is not available now: peer 'everything' is unavailable"
            )
            # The other peer goes on working meanwhile.
            assert not (await router.call("time__get_current_time", {"timezone": "UTC"})).is_error
            lost = await next_event(events, HealthChanged)
            back = await next_event(events, HealthChanged, lambda e: e.healthy, within=2 * WAIT)
        assert not lost.healthy and back.version > lost.version
        assert await _all_tools(router, "everything", LATE_TOOL) == names
        echo = await router.call("everything__echo", {"message": "back again"})
        assert echo.text == "Echo: back again"


async def test_everything_over_streamable_http() -> None:
    async with _servers.everything_http() as url, Router() as router:
        await router.join("everything", HttpPeer(url))
        names = await _all_tools(router, "everything", LATE_TOOL)
        assert len(names) == 13
        assert (await router.call("everything__get-sum", {"a": 2, "b": 3})).text == "The sum of 2 and 3 is 5."
        image = await router.call("everything__get-tiny-image", {})
        assert "[image: image/png" in image.text
        with router.events() as events:
            done = await router.call(
                "everything__trigger-long-running-operation", {"duration": 0.2, "steps": 2}
            )
            updates = [await next_event(events, CallProgress) for _ in range(2)]
        assert not done.is_error and [u.progress for u in updates] == [1, 2]
        timed_out = await router.call(
            "everything__trigger-long-running-operation", {"duration": 30, "steps": 2}, call_timeout=0.5
        )
        assert timed_out.text.endswith("did not answer within 0.5 s; the call was abandoned")
        # The session survives an abandoned call.
        assert (await router.call("everything__echo", {"message": "still"})).text == "Echo: still"
