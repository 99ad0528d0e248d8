"""The gateway's one port: WebSocket upgrades below ASGI, every other request through the ASGI app."""

from __future__ import annotations

import gc
import socket
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpx_router.mcpx import Gateway, GatewayConfig, run_gateway
from mcpx_router.mcpx.gateway import _front
from mcpx_router.mcpx.gateway._front import _ADMITTING
from mcpx_router.mcpx.gateway._serve import GC_OLDEST, _listen, gateway_cli, gateway_parser, tune_gc

from ...support.mcpx_support import raw_peer

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


def _upgrade(pid: str, token: str) -> bytes:
    return (
        f"GET /v0/ws?topic={TOPIC}&id={pid} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: bWNweC10ZXN0LWtleSEhIQ==\r\n"
        f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()


async def test_connections_that_send_no_head_hold_no_admission_turn() -> None:
    gw = Gateway(GatewayConfig())
    async with run_gateway(gw) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        idle = [await anyio.connect_tcp(host, int(port)) for _ in range(3 * _ADMITTING)]
        try:
            for stream in idle[::2]:  # half of them begin a head and never end it
                await stream.send(b"GET /v0/ws?topic=room HTTP/1.1\r\n")
            with anyio.fail_after(5):
                async with raw_peer(url, TOPIC, "alice", gw) as alice:
                    assert alice.welcome["payload"]["participant"]["id"] == "alice"
        finally:
            for stream in idle:
                await stream.aclose()


async def test_a_burst_of_upgrades_is_admitted_in_turns_and_refused_ones_give_theirs_back() -> None:
    # more upgrades at once than turns: the refused ones (a bad token, closed with 1008) and the
    # welcomed ones all end their turn, and every one of them is answered
    gw = Gateway(GatewayConfig())
    async with run_gateway(gw) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        answers: dict[str, bytes] = {}

        async def refused(index: int) -> None:
            async with await anyio.connect_tcp(host, int(port)) as stream:
                await stream.send(_upgrade(f"x{index}", "not-a-token"))
                data = b""
                while b"\x88" not in data.partition(b"\r\n\r\n")[2]:  # the close frame
                    data += await stream.receive()
                answers[f"x{index}"] = data

        async def welcomed(index: int) -> None:
            async with raw_peer(url, TOPIC, f"p{index}", gw) as peer:
                answers[f"p{index}"] = peer.welcome["payload"]["event"].encode()
                await anyio.sleep(0.2)  # all present at once

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for index in range(3 * _ADMITTING):
                    tg.start_soon(refused, index)
                    tg.start_soon(welcomed, index)
        assert len(answers) == 6 * _ADMITTING
        assert all(answers[f"p{i}"] == b"welcome" for i in range(3 * _ADMITTING))
        assert all(
            b" 101 " in answers[f"x{i}"] and b"\x03\xf0" in answers[f"x{i}"] for i in range(3 * _ADMITTING)
        )
        async with raw_peer(url, TOPIC, "late", gw) as late:  # and the turns are all free again
            assert late.welcome["payload"]["participant"]["id"] == "late"


def test_the_gateway_command_collects_its_oldest_generation_less_often(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert gateway_parser().parse_args([]).gc_oldest == GC_OLDEST
    assert gateway_parser().parse_args(["--gc-oldest", "10"]).gc_oldest == 10
    with pytest.raises(SystemExit) as refused:  # 0 leaves Python's collector as it is; less is refused
        gateway_cli(["--gc-oldest", "-1"])
    assert refused.value.code == 2
    assert "--gc-oldest must be 0" in capsys.readouterr().err
    before = gc.get_threshold()
    try:
        tune_gc(GC_OLDEST)
        assert gc.get_threshold() == (before[0], before[1], GC_OLDEST)
        assert gc.get_freeze_count() > 0  # what the process held at start-up: never scanned again
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


async def test_the_gateway_pings_its_participants_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # ten thousand pongs coming back in one pass of the loop held it (and every call) for 0.3 s
    monkeypatch.setattr(_front, "_PING_SLICE", 2)
    gw = Gateway(GatewayConfig(ping_interval=0.4, ping_timeout=5.0))
    async with run_gateway(gw) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        pinged: dict[str, float] = {}

        async def participant(pid: str) -> None:
            async with await anyio.connect_tcp(host, int(port)) as stream:
                await stream.send(_upgrade(pid, gw.issue_token(pid, TOPIC)))
                data = b""
                while pid not in pinged:
                    data += await stream.receive()
                    body = data.partition(b"\r\n\r\n")[2]
                    if b"\x89\x04mcpx" in body:  # the gateway's ping frame
                        pinged[pid] = anyio.current_time()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for index in range(6):
                    tg.start_soon(participant, f"p{index}")
        times = sorted(pinged.values())
        assert len(times) == 6
        assert times[-1] - times[0] >= 0.05  # three slices, up to 50 ms apart; not all at once
