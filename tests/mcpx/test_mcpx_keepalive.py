"""Connections that die quietly are noticed: both ends ping, through a proxy that freezes."""

from __future__ import annotations

import argparse

import anyio
import pytest
from mcp import Client

from mcpx_router import Reconnect
from mcpx_router.mcpx import (
    ConnectionEvent,
    ConnectionState,
    GatewayConfig,
    PresenceEvent,
    TopicClient,
    run_gateway,
    serve_participant,
)
from mcpx_router.mcpx._topic_options import add_topic_flags, topic_options

from ..support.mcpx_support import eventually, make_server
from ..support.pause_proxy import pause_proxy
from .client.test_mcpx_topic import next_event

pytestmark = pytest.mark.anyio

TOPIC = "room"
FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)
PING_TIMEOUT = 3.0
"""Seconds a ping may go unanswered: many pings (every 0.2 s) fit in it, and even a busy machine
answers one in time, so only the paused proxy loses a connection."""
LOST_WITHIN = PING_TIMEOUT + 5


async def test_the_client_notices_a_frozen_connection_and_reconnects() -> None:
    quiet_gateway = GatewayConfig(ping_interval=None)  # only the client pings here
    async with (
        run_gateway(config=quiet_gateway) as url,
        pause_proxy(url) as proxy,
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()),
        TopicClient(
            proxy.url, TOPIC, "agent-a", reconnect=FAST, ping_interval=0.2, ping_timeout=PING_TIMEOUT
        ) as a,
        a.subscribe() as events,
    ):
        assert (await next_event(events, ConnectionEvent)).state is ConnectionState.CONNECTED
        connections = proxy.connections  # the token request and the WebSocket
        await anyio.sleep(PING_TIMEOUT + 0.6)  # pings answered: still the first connection
        assert a.state is ConnectionState.CONNECTED and proxy.connections == connections
        proxy.pause()
        lost = await next_event(events, ConnectionEvent, limit=LOST_WITHIN)
        assert lost.state is ConnectionState.LOST
        assert lost.reason is not None and f"no answer to a ping within {PING_TIMEOUT:g} s" in lost.reason
        back = await next_event(events, ConnectionEvent, limit=LOST_WITHIN)
        assert back.state is ConnectionState.CONNECTED and proxy.connections > connections
        async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5}


async def test_the_gateway_removes_a_participant_that_stopped_answering() -> None:
    config = GatewayConfig(ping_interval=0.2, ping_timeout=PING_TIMEOUT)
    async with (
        run_gateway(config=config) as url,
        pause_proxy(url) as proxy,
        TopicClient(url, TOPIC, "watcher", ping_interval=None) as watcher,
        watcher.subscribe() as events,
        TopicClient(proxy.url, TOPIC, "agent-a", ping_interval=None) as a,
    ):
        joined = await next_event(events, PresenceEvent)
        assert (joined.event, joined.participant.id) == ("join", "agent-a")
        await anyio.sleep(PING_TIMEOUT + 0.8)  # the gateway's pings are answered: agent-a stays
        assert set(watcher.participants) == {"agent-a"}
        proxy.pause()
        left = await next_event(events, PresenceEvent, limit=LOST_WITHIN)  # pings every 0.2 s
        assert (left.event, left.participant.id) == ("leave", "agent-a")
        assert "agent-a" not in watcher.participants
        proxy.resume()  # the gateway closed its end: the client hears it now
        await eventually(lambda: a.state is ConnectionState.LOST)


@pytest.mark.parametrize(("interval", "timeout"), [(0, 1), (-1, 1), (1, 0), (float("nan"), 1)])
def test_keepalive_settings_are_checked(interval: float, timeout: float) -> None:
    with pytest.raises(ValueError, match="ping_interval and ping_timeout must be positive"):
        TopicClient("http://127.0.0.1:1", TOPIC, "a", ping_interval=interval, ping_timeout=timeout)


def test_keepalive_and_send_budget_flags() -> None:
    parser = argparse.ArgumentParser()
    add_topic_flags(parser)
    parser.add_argument("--topic", default=TOPIC)
    parser.add_argument("--id", dest="participant_id", default="a")
    args = parser.parse_args(["--send-rate", "60/min", "--ping-interval", "off", "--ping-timeout", "5"])
    assert topic_options(args) == {"send_rate": 1.0, "ping_interval": None, "ping_timeout": 5.0}
    defaults = topic_options(parser.parse_args([]))
    assert defaults == {"send_rate": 50.0, "ping_interval": 20.0, "ping_timeout": 20.0}
    assert "token_provider" in topic_options(parser.parse_args(["--token-url", "http://127.0.0.1:1/token"]))
    for bad in (["--ping-timeout", "off"], ["--ping-interval", "-1"], ["--send-rate", "fast"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
