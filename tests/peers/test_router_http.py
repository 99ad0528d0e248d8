"""The Router with our own MCPServer over streamable HTTP (uvicorn in a subprocess on 127.0.0.1).

"auto" negotiates 2026-07-28 with this server (tool-list changes come through
subscriptions/listen); "legacy" uses the initialize handshake and a session id.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcpx_router import CallProgress, HealthChanged, HttpPeer, Reconnect, Router, ToolsChanged

from ..support.router_support import ABANDONED_HTTP_STREAMS, WAIT, file_contains, http_server, next_event

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]

MODES = ["auto", "legacy"]
FAST = Reconnect(initial_delay=0.1, max_delay=0.5, jitter=0)


@pytest.mark.parametrize("mode", MODES)
async def test_a_stopped_and_restarted_server_comes_back(mode: str) -> None:
    async with http_server() as server, Router(reconnect=FAST, health_interval=0.2) as router:
        names = await router.join("web", HttpPeer(server.url, mode=mode))
        assert (await router.call("web__echo", {"text": "first"})).text == "first"
        with router.events() as events:
            await server.kill()
            lost = await next_event(events, HealthChanged)
            assert not lost.healthy and router.adapter.tools_of("web") == ()
            outcome = await router.call("web__echo", {"text": "x"})
            assert "peer 'web' is unavailable" in outcome.text
            await server.start()
            back = await next_event(events, HealthChanged, lambda e: e.healthy)
        assert back.version > lost.version
        assert [t.name for t in router.adapter.tools_of("web")] == list(names)
        assert (await router.call("web__echo", {"text": "again"})).text == "again"


@pytest.mark.parametrize("mode", MODES)
async def test_changes_headers_progress_and_cancellation(mode: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    async with http_server(log) as server, Router() as router:
        peer = HttpPeer(
            server.url, headers={"X-Agent": "router-test"}, mode=mode, tool_timeouts={"slow": 0.5}
        )
        await router.join("web", peer)
        assert (await router.call("web__header", {"name": "X-Agent"})).text == "router-test"
        with router.events() as events:
            assert (await router.call("web__add_tool", {"name": "extra"})).text == "added"
            changed = await next_event(events, ToolsChanged)
            assert changed.added == ("web__extra",)
            finished = await router.dispatch(
                [
                    {
                        "id": "p1",
                        "type": "function",
                        "function": {"name": "web__slow", "arguments": '{"seconds": 0.2}'},
                    }
                ],
                call_timeout=5,
            )
            assert finished[0]["content"] == "slow done"
        timed_out = await router.call("web__slow", {"seconds": 30})
        assert timed_out.text == "Error: web__slow did not answer within 0.5 s; the call was abandoned"
        # The server learns of it (a notifications/cancelled, or at 2026-07-28 the request's stream
        # closing) and cancels its handler, which writes to the log: wait for that line.
        await file_contains(log, "cancelled slow")


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_in_flight_when_the_server_dies_is_answered(mode: str) -> None:
    async with http_server() as server, Router(reconnect=FAST, health_interval=0.2) as router:
        await router.join("web", HttpPeer(server.url, mode=mode))
        with router.events() as events:
            async with anyio.create_task_group() as tg:

                async def kill_soon() -> None:
                    await next_event(events, CallProgress)  # the call is running on the server
                    await server.kill()

                tg.start_soon(kill_soon)
                with anyio.fail_after(WAIT):
                    outcome = await router.call("web__slow", {"seconds": 30})
            assert outcome.text.startswith(
                "Error: web__slow: the call was sent, but the connection to peer 'web' failed ("
            ) and outcome.text.endswith("before it answered; it may or may not have taken effect")
            lost = await next_event(events, HealthChanged)
        assert not lost.healthy and router.adapter.tools_of("web") == ()


@pytest.mark.parametrize("mode", MODES)
async def test_a_quickly_restarted_server_is_noticed(mode: str) -> None:
    """Restarted before any probe: an older-version session is unknown to the new server; at
    2026-07-28 the listen stream broke. Either way calls reach the new server again, under the
    same names, and its tool-list changes are followed."""
    async with http_server() as server, Router(reconnect=FAST, health_interval=None) as router:
        names = await router.join("web", HttpPeer(server.url, mode=mode))
        with router.events() as events:
            await server.kill()
            await server.start()
            assert server.process is not None
            with anyio.fail_after(WAIT):
                while (outcome := await router.call("web__pid", {})).is_error:
                    await next_event(events, HealthChanged, lambda e: e.healthy)
            assert int(outcome.text) == server.process.pid
            assert [t.name for t in router.adapter.tools_of("web")] == list(names)
            assert (await router.call("web__add_tool", {"name": "late"})).text == "added"
            changed = await next_event(events, ToolsChanged)
        assert changed.added == ("web__late",)
