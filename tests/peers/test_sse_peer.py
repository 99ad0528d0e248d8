"""The Router with our own MCPServer over the legacy HTTP+SSE transport (uvicorn in a subprocess on
127.0.0.1, the `mcp` SDK's `sse_app`), through `SsePeer` and config files.

"auto" negotiates 2026-07-28 with this server (tool-list changes come through
subscriptions/listen); "legacy" uses the initialize handshake.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcpx_router import (
    CallProgress,
    HealthChanged,
    PeerUnavailableError,
    Reconnect,
    Router,
    SsePeer,
    ToolsChanged,
    load_config,
)

from ..support.router_support import (
    ABANDONED_HTTP_STREAMS,
    WAIT,
    file_contains,
    free_port,
    http_server,
    next_event,
)

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]

MODES = ["auto", "legacy"]
FAST = Reconnect(initial_delay=0.1, max_delay=0.5, jitter=0)


@pytest.mark.parametrize("mode", MODES)
async def test_headers_changes_progress_and_cancellation(mode: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    async with http_server(log, sse=True) as server, Router() as router:
        peer = SsePeer(server.url, headers={"X-Agent": "sse-test"}, mode=mode, tool_timeouts={"slow": 0.5})
        await router.join("old", peer)
        assert (await router.call("old__header", {"name": "X-Agent"})).text == "sse-test"
        with router.events() as events:
            assert (await router.call("old__add_tool", {"name": "extra"})).text == "added"
            changed = await next_event(events, ToolsChanged)
            assert changed.added == ("old__extra",)
            finished = await router.dispatch(
                [
                    {
                        "id": "p1",
                        "type": "function",
                        "function": {"name": "old__slow", "arguments": '{"seconds": 0.2}'},
                    }
                ],
                call_timeout=5,
            )
            assert finished[0]["content"] == "slow done"
            progress = await next_event(events, CallProgress)
            assert progress.call_id == "p1"
        timed_out = await router.call("old__slow", {"seconds": 30})
        assert timed_out.text == "Error: old__slow did not answer within 0.5 s; the call was abandoned"
        await file_contains(log, "cancelled slow")  # the server was told, and cancelled its handler


@pytest.mark.parametrize("mode", MODES)
async def test_a_stopped_and_restarted_server_comes_back(mode: str) -> None:
    async with http_server(sse=True) as server, Router(reconnect=FAST, health_interval=0.2) as router:
        names = await router.join("old", SsePeer(server.url, mode=mode))
        assert (await router.call("old__echo", {"text": "first"})).text == "first"
        with router.events() as events:
            await server.kill()
            lost = await next_event(events, HealthChanged)
            assert not lost.healthy and router.adapter.tools_of("old") == ()
            outcome = await router.call("old__echo", {"text": "x"})
            assert "peer 'old' is unavailable" in outcome.text
            await server.start()
            back = await next_event(events, HealthChanged, lambda e: e.healthy)
        assert back.version > lost.version
        assert [t.name for t in router.adapter.tools_of("old")] == list(names)
        assert server.process is not None
        assert int((await router.call("old__pid", {})).text) == server.process.pid
        with router.events() as events:  # the new connection follows tool-list changes too
            assert (await router.call("old__add_tool", {"name": "late"})).text == "added"
            changed = await next_event(events, ToolsChanged)
        assert changed.added == ("old__late",)


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_in_flight_when_the_server_dies_is_answered(mode: str) -> None:
    async with http_server(sse=True) as server, Router(reconnect=FAST, health_interval=None) as router:
        await router.join("old", SsePeer(server.url, mode=mode))
        with router.events() as events:
            async with anyio.create_task_group() as tg:

                async def kill_soon() -> None:
                    await next_event(events, CallProgress)  # the call is running on the server
                    await server.kill()

                tg.start_soon(kill_soon)
                with anyio.fail_after(WAIT):
                    outcome = await router.call("old__slow", {"seconds": 30})
            assert outcome.text.startswith(
                "Error: old__slow: the call was sent, but the connection to peer 'old' failed ("
            ) and outcome.text.endswith("before it answered; it may or may not have taken effect")
            # The event stream's end is the loss: no probe is needed (health_interval=None).
            lost = await next_event(events, HealthChanged)
        assert not lost.healthy and router.adapter.tools_of("old") == ()


async def test_a_config_file_with_an_sse_server(tmp_path: Path) -> None:
    async with http_server(sse=True) as server, Router() as router:
        config = tmp_path / "mcp.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "old": {
                            "url": server.url.replace(str(server.port), "${SSE_PORT}"),
                            "headers": {"X-Agent": "${AGENT:-from-default}"},
                            "includeTools": ["echo", "header", "pid", "slow*"],
                            "excludeTools": ["slow", "add_*"],
                        }
                    }
                }
            )
        )
        peers = load_config(config, environ={"SSE_PORT": str(server.port)})
        assert peers == {
            "old": SsePeer(
                server.url,
                headers={"X-Agent": "from-default"},
                include_tools=["echo", "header", "pid", "slow*"],
                exclude_tools=["slow", "add_*"],
            )
        }
        names = (await router.join_all(peers))["old"]
        assert names == ("old__echo", "old__header", "old__pid")
        assert (await router.call("old__header", {"name": "X-Agent"})).text == "from-default"


async def test_nothing_listening_is_a_clear_join_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/sse"
    async with Router(connect_timeout=5) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("old", url)  # a URL whose path ends in /sse is an SsePeer
        assert router.peers == ()
    message = str(caught.value)
    assert message.startswith(f"could not connect to peer 'old' ({url} (SSE)): ")
    assert message.endswith("check that the server is running and the URL is its MCP endpoint")
