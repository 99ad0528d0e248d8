"""A topic with a third-party stdio server behind the bridge (mcp-server-time, see tests/support/_servers.py),
an in-process agent and a Router, through a leave, a return and a gateway restart."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import anyio.abc
import pytest

from mcpx_router import HealthChanged, PeerJoined, PeerLeft, Router, RouterEvent
from mcpx_router.mcpx import TopicClient, bridge_stdio_server

from ..support import _servers
from ..support.mcpx_router_support import (
    FAST,
    TOPIC,
    Agents,
    GatedTokens,
    RestartableGateway,
    call,
    lost_and_back,
    until_all,
)
from ..support.router_support import free_port, next_event

pytestmark = [pytest.mark.anyio, pytest.mark.thirdparty]


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    _servers.install_python_server("mcp-server-time")


async def bridged_time_server(url: str, *, task_status: anyio.abc.TaskStatus[TopicClient]) -> None:
    """mcp-server-time as participant `time`, through the bridge, reconnecting to the gateway."""
    params = _servers.time_server_params()
    client = TopicClient(url, TOPIC, "time", reconnect=FAST)
    async with bridge_stdio_server(client, [params.command, *params.args]), client:
        task_status.started(client)
        await anyio.sleep_forever()


def healthy(peer: str, value: bool) -> Callable[[RouterEvent], bool]:
    return lambda e: isinstance(e, HealthChanged) and e.peer == peer and e.healthy is value


async def test_bridged_time_server_agent_and_router_through_a_gateway_restart() -> None:
    port = free_port()
    tokens = GatedTokens(f"http://127.0.0.1:{port}", "router")
    async with anyio.create_task_group() as tg:
        gateway = RestartableGateway(tg, port)
        await gateway.start()
        time_client: TopicClient = await tg.start(bridged_time_server, gateway.url)
        agents = Agents(tg, gateway.url)
        await agents.start("agent-b", reconnect=FAST)
        async with Router(reconnect=FAST) as router:
            with router.events() as events:
                topic = await router.join_topic(
                    gateway.url, TOPIC, "router", token_provider=tokens, handshake_timeout=30
                )
                assert set(topic.peers) == {"time", "agent-b"} and topic.skipped == {}
                names = {peer: router.status(peer).tools for peer in topic.peers}
                assert names == {
                    "time": ("time__get_current_time", "time__convert_time"),
                    "agent-b": ("agent-b__add", "agent-b__slow_echo"),
                }
                convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
                batch = [
                    call("time__convert_time", convert, "c1"),
                    call("agent-b__add", {"a": 40, "b": 2}, "c2"),
                    call("time__get_current_time", {"timezone": "Not/AZone"}, "c3"),
                ]
                converted, added, refused = await router.dispatch(batch)
                target = json.loads(converted["content"])["target"]
                assert target["timezone"] == "Asia/Tokyo" and "T21:00:00" in target["datetime"]
                assert added["content"] == "42"
                assert refused["content"].startswith("Error: time__get_current_time reported a failure")

                await agents.stop("agent-b")  # a leave, then a return under the same id
                await next_event(events, PeerLeft, lambda e: e.peer == "agent-b")
                await agents.start("agent-b", reconnect=FAST)
                joined = await next_event(events, PeerJoined, lambda e: e.peer == "agent-b")
                assert joined.tools == names["agent-b"]

                async with (
                    time_client.subscribe() as time_events,
                    agents.clients["agent-b"].subscribe() as agent_events,
                ):
                    await gateway.stop()  # everyone is disconnected; the bridged server keeps running
                    await until_all(events, healthy("time", False), healthy("agent-b", False))
                    assert router.tools == ()
                    await gateway.start()
                    async with anyio.create_task_group() as waiting:  # both participants come back
                        waiting.start_soon(lost_and_back, time_events)
                        waiting.start_soon(lost_and_back, agent_events)
                tokens.gate.set()  # now the Router
                seen = await until_all(events, healthy("time", True), healthy("agent-b", True))
                assert not any(isinstance(e, PeerLeft) for e in seen)
                assert {peer: router.status(peer).tools for peer in topic.peers} == names
                converted, added, _ = await router.dispatch(batch)
                assert json.loads(converted["content"])["target"]["timezone"] == "Asia/Tokyo"
                assert added["content"] == "42"
        tg.cancel_scope.cancel()
