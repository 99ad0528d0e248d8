"""The gateway's one port: WebSocket upgrades below ASGI, every other request through the ASGI app."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpx_router.mcpx import Gateway, GatewayConfig, run_gateway
from mcpx_router.mcpx._serve import _listen

from ..support.mcpx_support import raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"


async def test_http_requests_share_a_kept_alive_connection_and_the_port_with_websockets() -> None:
    gw = Gateway(GatewayConfig())
    async with run_gateway(gw) as url, raw_peer(url, TOPIC, "alice", gw):
        token = gw.issue_token("bob", TOPIC)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(base_url=url, headers=headers) as http:
            for _ in range(3):  # one connection, kept alive between the requests
                listed = await http.get(f"/v0/topics/{TOPIC}/participants")
                assert listed.status_code == 200
                assert [p["id"] for p in listed.json()["participants"]] == ["alice"]
            issued = await http.post("/v0/auth/token", json={"participantId": "carol", "topic": TOPIC})
            assert issued.status_code == 200 and issued.json()["participantId"] == "carol"
            assert (await http.get("/nowhere")).status_code == 404
            assert (await http.get("/v0/ws", params={"topic": TOPIC})).status_code == 404  # no upgrade
            assert (await http.get(f"/v0/topics/{TOPIC}/history")).status_code == 200


async def test_a_request_body_over_the_size_limit_is_refused_413() -> None:
    gw = Gateway(GatewayConfig(max_message_bytes=1_000))
    async with run_gateway(gw) as url, httpx2.AsyncClient() as http:
        response = await http.post(f"{url}/v0/auth/token", content=b"x" * 5_000)
        assert response.status_code == 413


async def test_a_malformed_request_is_answered_400_and_the_gateway_serves_on() -> None:
    gw = Gateway(GatewayConfig())
    async with run_gateway(gw) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(b"NOT HTTP AT ALL\r\n\r\n")
            answer = await stream.receive()
        assert answer.startswith(b"HTTP/1.1 400")
        async with await anyio.connect_tcp(host, int(port)) as stream:  # an upgrade without its key
            await stream.send(
                b"GET /v0/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            )
            answer = await stream.receive()
        assert answer.startswith(b"HTTP/1.1 400")
        async with raw_peer(url, TOPIC, "alice", gw) as alice:
            assert alice.welcome["payload"]["participant"]["id"] == "alice"


def test_the_listener_holds_a_reconnect_storm_it_has_not_accepted_yet() -> None:
    # a busy gateway accepts late: the kernel must hold the connections meanwhile (the usual
    # backlog of 128 dropped the rest, and their clients tried again a second or more later)
    kernel_limit = int(Path("/proc/sys/net/core/somaxconn").read_text())
    storm = min(kernel_limit, 1_000)
    listener = _listen("127.0.0.1", 0)
    clients: list[socket.socket] = []
    try:
        address = listener.getsockname()
        for _ in range(storm):
            client = socket.socket()
            clients.append(client)
            client.settimeout(0.5)  # a dropped handshake is retried after 1 s: too late
            client.connect(address)
    finally:
        for client in clients:
            client.close()
        listener.close()
    assert len(clients) == storm
