"""Clients given several gateway URLs: the first that answers is used, a lost one is left for the
next; a single URL behaves as before. (Gateways here are independent, without NATS.)"""

from __future__ import annotations

import anyio
import pytest

from mcpx_router import Router
from mcpx_router.mcpx import ConnectionState, MCPxConnectionError, TopicClient, run_gateway
from mcpx_router.mcpx.bridge._bridge_cli import bridge_parser
from mcpx_router.mcpx.client._gateways import gateway_urls
from mcpx_router.mcpx.gateway._serve import gateway_parser

from ...support.mcpx_router_support import FAST, agent, call
from ...support.mcpx_support import eventually
from ...support.router_support import WAIT, free_port

pytestmark = pytest.mark.anyio


async def test_a_client_connects_to_the_first_gateway_that_answers() -> None:
    dead = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    async with run_gateway() as live:
        async with TopicClient([*dead, live], "room", "a") as client:
            assert client.gateway_url == live and client.gateway_urls == (*dead, live)
            assert client.state is ConnectionState.CONNECTED
    with pytest.raises(MCPxConnectionError, match="none of the 2 gateways could be reached") as caught:
        async with TopicClient(dead, "room", "a"):
            pass
    assert all(url.removeprefix("http://") in str(caught.value) for url in dead)


async def test_a_router_moves_to_the_next_gateway_when_its_own_stops() -> None:
    async with run_gateway() as second:
        async with Router(reconnect=FAST) as router:
            async with run_gateway() as first:
                # the participant is on both lists the other way round: it starts on `second`
                async with agent([second, first], "worker", reconnect=FAST) as (worker, _):
                    topic = await router.join_topic([first, second], "room", "host", reconnect=FAST)
                    assert topic.client.gateway_url == first and router.peers == ()
            # `first` stopped: the Router moves to `second`, where the worker is, and takes it as a peer
            await eventually(lambda: topic.client.gateway_url == second and topic.connected, WAIT)
            async with agent([second, first], "worker", reconnect=FAST):
                await eventually(lambda: "worker__add" in {t.name for t in router.tools}, WAIT)
                [answer] = await router.dispatch([call("worker__add", {"a": 20, "b": 22})])
                assert answer["content"] == "42"
            assert worker.state is ConnectionState.CLOSED


def test_gateway_lists_are_checked_and_the_commands_take_several() -> None:
    assert gateway_urls("http://a:1, http://b:2,http://a:1") == ("http://a:1", "http://b:2")
    assert gateway_urls(["ws://a:1"]) == ("ws://a:1",)
    for bad in ([], "", "ftp://a", ["http://a:1", "nonsense"]):
        with pytest.raises(ValueError):
            gateway_urls(bad)
    args = bridge_parser().parse_args(
        ["--gateway", "http://a:1", "--gateway", "http://b:2", "--topic", "t", "--id", "x", "--", "srv"]
    )
    assert args.gateway == ["http://a:1", "http://b:2"]
    args = gateway_parser().parse_args(
        ["--nats", "nats://n1:4222,nats://n2:4222", "--nats", "nats://n3:4222"]
    )
    assert args.nats == ["nats://n1:4222,nats://n2:4222", "nats://n3:4222"]
    with pytest.raises(SystemExit):
        gateway_parser().parse_args(["--nats-heartbeat", "soon"])


async def test_a_bare_client_keeps_one_url_as_before() -> None:
    async with run_gateway() as url:
        async with TopicClient(url, "room", "a") as client:
            assert client.gateway_url == url and client.gateway_urls == (url,)
    port = free_port()
    with anyio.fail_after(WAIT), pytest.raises(MCPxConnectionError, match=f"127.0.0.1:{port}") as caught:
        async with TopicClient(f"http://127.0.0.1:{port}", "room", "a"):
            pass
    assert "gateways could be reached" not in str(caught.value)  # the error of the one URL, as before
