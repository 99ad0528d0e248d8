"""The MCPx gateway served for real on 127.0.0.1, spoken to with raw WebSocket frames."""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import pytest

from mcpx_router.mcpx import PROTOCOL, Gateway, GatewayConfig, TokenGrant, run_gateway, websocket_url
from mcpx_router.mcpx._ws import WebSocketClosed, connect_websocket

from ...support.mcpx_support import is_error, is_presence, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
NOTE = {"jsonrpc": "2.0", "method": "notifications/chat/message", "params": {"text": "hi"}}


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, str]]:
    gw = Gateway(GatewayConfig(history_limit=50))
    async with run_gateway(gw) as url:
        yield gw, url


async def test_dev_token_welcome_and_presence(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{url}/v0/auth/token", json={"participantId": "alice", "topic": TOPIC})
    assert response.status_code == 200
    body = response.json()
    assert body["participantId"] == "alice" and body["token"]
    async with raw_peer(url, TOPIC, "alice", token=body["token"]) as alice:
        welcome = alice.welcome
        assert welcome["protocol"] == PROTOCOL and welcome["from"] == "system:gateway"
        assert welcome["payload"]["participant"]["id"] == "alice"
        assert welcome["payload"]["participants"] == []
        async with raw_peer(url, TOPIC, "bob", gw) as bob:
            assert [p["id"] for p in bob.welcome["payload"]["participants"]] == ["alice"]
            join = await alice.recv_until(is_presence("join", "bob"))
            assert join["protocol"] == PROTOCOL and join["id"]
            assert [p["id"] for p in gw.participants(TOPIC)] == ["alice", "bob"]
        await alice.recv_until(is_presence("leave", "bob"))
        assert [p["id"] for p in gw.participants(TOPIC)] == ["alice"]


@pytest.mark.parametrize("token", ["bogus", None])
async def test_bad_token_is_closed_with_1008(gateway: tuple[Gateway, str], token: str | None) -> None:
    _, url = gateway
    headers = [("Authorization", f"Bearer {token}")] if token else []
    async with connect_websocket(websocket_url(url, TOPIC), headers=headers) as ws:
        with pytest.raises(WebSocketClosed) as info:
            await ws.receive_text()
    assert info.value.code == 1008


async def test_token_is_scoped_to_its_topic(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    token = gw.issue_token("alice", "other-topic")
    async with connect_websocket(
        websocket_url(url, TOPIC), headers=[("Authorization", f"Bearer {token}")]
    ) as ws:
        with pytest.raises(WebSocketClosed) as info:
            await ws.receive_text()
    assert info.value.code == 1008 and "token" in info.value.reason


@pytest.mark.parametrize(
    "body",
    [
        {"participantId": "", "topic": TOPIC},
        {"participantId": "system:gateway", "topic": TOPIC},
        {"participantId": "has space", "topic": TOPIC},
        {"participantId": "alice"},
        [1, 2],
    ],
)
async def test_token_endpoint_validates(gateway: tuple[Gateway, str], body: Any) -> None:
    _, url = gateway
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{url}/v0/auth/token", json=body)
    assert response.status_code == 400 and response.json()["error"] == "bad_request"


async def test_pre_shared_tokens_only() -> None:
    config = GatewayConfig(dev_tokens=False, tokens={"s3cret": TokenGrant("alice", frozenset({TOPIC}))})
    async with run_gateway(config=config) as url:
        async with httpx2.AsyncClient() as http:
            response = await http.post(f"{url}/v0/auth/token", json={"participantId": "bob", "topic": TOPIC})
            assert response.status_code == 403
        async with raw_peer(url, TOPIC, "alice", token="s3cret") as alice:
            assert alice.welcome["payload"]["participant"]["id"] == "alice"


async def test_forged_from_is_rejected_not_delivered(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "mallory", gw) as mallory, raw_peer(url, TOPIC, "bob", gw) as bob:
        await mallory.recv_until(is_presence("join", "bob"))
        sent = await mallory.send_mcp(NOTE, to=("bob",), sender="alice")
        error = await mallory.recv_until(is_error("from_mismatch"))
        assert error["correlation_id"] == sent["id"] and error["to"] == ["mallory"]
        sent = await mallory.send_mcp(NOTE, sender="alice")  # a forged broadcast too
        await mallory.recv_until(is_error("from_mismatch"))
        assert [f for f in await bob.frames_within(0.3) if f["kind"] == "mcp"] == []
        assert gw.history(TOPIC) == [h for h in gw.history(TOPIC) if h["kind"] == "presence"]


async def test_addressed_delivery_broadcast_and_unknown_recipients(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with (
        raw_peer(url, TOPIC, "alice", gw) as alice,
        raw_peer(url, TOPIC, "bob", gw) as bob,
        raw_peer(url, TOPIC, "carol", gw) as carol,
    ):
        await alice.recv_until(is_presence("join", "carol"))
        await bob.recv_until(is_presence("join", "carol"))
        addressed = await alice.send_mcp(NOTE, to=("bob",))
        assert (await bob.recv_mcp())["id"] == addressed["id"]
        broadcast = await alice.send_mcp(NOTE)
        assert (await bob.recv_mcp())["id"] == broadcast["id"]
        assert (await carol.recv_mcp())["id"] == broadcast["id"]  # carol never saw the addressed one
        assert [f for f in await alice.frames_within(0.2) if f["kind"] == "mcp"] == []  # no echo
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        sent = await alice.send_mcp(request)  # a broadcast request
        assert (await alice.recv_until(is_error("invalid_request")))["correlation_id"] == sent["id"]
        sent = await alice.send_mcp(request, to=("ghost",))
        error = await alice.recv_until(is_error("unknown_recipient"))
        assert error["correlation_id"] == sent["id"] and "ghost" in error["payload"]["message"]
        # the gateway forwards the frame untouched, byte for byte
        raw = '{"protocol":"mcp-x/v0","id":"raw-1","from":"alice","to":["carol"],"kind":"mcp",' + (
            '"payload":{"jsonrpc":"2.0","id":"42","method":"x","params":{"n":1.50}}}'
        )
        await alice.send(raw)
        assert await carol.ws.receive_text() == raw


async def test_history_never_contains_addressed_traffic(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "alice", gw) as alice, raw_peer(url, TOPIC, "bob", gw) as bob:
        await alice.recv_until(is_presence("join", "bob"))
        public = await alice.send_mcp(NOTE)
        await bob.recv_mcp()
        private = await alice.send_mcp({**NOTE, "params": {"text": "secret"}}, to=("bob",))
        request = await alice.send_mcp({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, to=("bob",))
        await bob.recv_mcp()
        await bob.recv_mcp()
        reply = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
        await bob.send_mcp(reply, to=("alice",), correlation_id=request["id"])
        await alice.recv_mcp()
        async with raw_peer(url, TOPIC, "eve", gw) as eve:
            history = eve.welcome["payload"]["history"]
            ids = [h["id"] for h in history]
            assert public["id"] in ids
            assert private["id"] not in ids and request["id"] not in ids
            assert all(not h.get("to") for h in history)
            assert "secret" not in json.dumps(history)
            async with httpx2.AsyncClient() as http:
                token = gw.issue_token("eve", TOPIC)
                response = await http.get(
                    f"{url}/v0/topics/{TOPIC}/history", headers={"Authorization": f"Bearer {token}"}
                )
                rest = response.json()["history"]
            assert [h["id"] for h in rest] == [h["id"] for h in reversed(gw.history(TOPIC))]  # newest first
            assert is_presence("join", "eve")(rest[0]) and [h["id"] for h in rest[1:]] == list(reversed(ids))
            assert "secret" not in json.dumps(rest)


@pytest.mark.parametrize(
    ("frame", "error"),
    [
        ("not json", "invalid_json"),
        ("[1]", "invalid_envelope"),
        (
            '{"protocol": "mcp-x/v9", "id": "1", "from": "alice", "kind": "mcp", "payload": {}}',
            "invalid_envelope",
        ),
        ('{"protocol": "mcp-x/v0", "from": "alice", "kind": "mcp", "payload": {}}', "invalid_envelope"),
        (
            '{"protocol": "mcp-x/v0", "id": "1", "from": "alice", "kind": "presence", "payload": {}}',
            "invalid_kind",
        ),
        (
            '{"protocol": "mcp-x/v0", "id": "1", "from": "alice", "kind": "mcp", "payload": "x"}',
            "invalid_payload",
        ),
        (
            '{"protocol": "mcp-x/v0", "id": "1", "from": "alice", "kind": "mcp", "to": "bob", "payload": {}}',
            "invalid",
        ),
    ],
)
async def test_malformed_frames_are_answered_and_dropped(
    gateway: tuple[Gateway, str], frame: str, error: str
) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "alice", gw) as alice, raw_peer(url, TOPIC, "bob", gw) as bob:
        await alice.recv_until(is_presence("join", "bob"))
        await alice.send(frame)
        rejected = await alice.recv_until(lambda f: f["kind"] == "system")
        assert rejected["payload"]["event"] == "error" and rejected["payload"]["error"].startswith(error)
        sent = await alice.send_mcp(NOTE)  # the connection is still fine
        assert (await bob.recv_mcp())["id"] == sent["id"]


async def test_binary_garbage_is_rejected(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "alice", gw) as alice:
        from wsproto.events import BytesMessage

        await alice.ws._write(alice.ws._conn.send(BytesMessage(data=b"\xff\xfe")))
        await alice.recv_until(is_error("invalid_json"))


async def test_rate_limit_per_participant() -> None:
    gw = Gateway(GatewayConfig(rate_per_second=1.0, rate_burst=3))
    async with run_gateway(gw) as url:
        async with raw_peer(url, TOPIC, "alice", gw) as alice, raw_peer(url, TOPIC, "bob", gw) as bob:
            await alice.recv_until(is_presence("join", "bob"))
            for _ in range(10):
                await alice.send_mcp(NOTE)
            await alice.recv_until(is_error("rate_limited"))
            received = [f for f in await bob.frames_within(0.3) if f["kind"] == "mcp"]
            assert len(received) == 3


async def test_reconnect_under_the_same_id_replaces_the_old_connection(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "bob", gw) as bob, raw_peer(url, TOPIC, "alice", gw) as alice_old:
        await bob.recv_until(is_presence("join", "alice"))
        async with raw_peer(url, TOPIC, "alice", gw) as alice_new:
            assert [p["id"] for p in alice_new.welcome["payload"]["participants"]] == ["bob"]
            assert await alice_old.close_code() == 4000
            frames = await bob.frames_within(0.5)
            assert any(is_presence("join", "alice")(f) for f in frames)
            assert not any(is_presence("leave", "alice")(f) for f in frames)
            assert [p["id"] for p in gw.participants(TOPIC)] == ["bob", "alice"]
            sent = await bob.send_mcp(NOTE, to=("alice",))
            assert (await alice_new.recv_mcp())["id"] == sent["id"]
        await bob.recv_until(is_presence("leave", "alice"))


async def test_rest_endpoints_need_a_token(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "alice", gw), httpx2.AsyncClient(base_url=url) as http:
        for path in ("/v0/topics", f"/v0/topics/{TOPIC}/participants", f"/v0/topics/{TOPIC}/history"):
            assert (await http.get(path)).status_code == 401
        headers = {"Authorization": f"Bearer {gw.issue_token('bob', TOPIC)}"}
        assert (await http.get("/v0/topics", headers=headers)).json() == {"topics": [TOPIC]}
        participants = (await http.get(f"/v0/topics/{TOPIC}/participants", headers=headers)).json()
        assert [p["id"] for p in participants["participants"]] == ["alice"]
        other = {"Authorization": f"Bearer {gw.issue_token('bob', 'elsewhere')}"}
        assert (await http.get(f"/v0/topics/{TOPIC}/participants", headers=other)).status_code == 401
        assert (await http.get(f"/v0/topics/{TOPIC}/history?limit=x", headers=headers)).status_code == 400


async def test_shutdown_closes_participants_with_1001() -> None:
    gw = Gateway()
    async with run_gateway(gw) as url, raw_peer(url, TOPIC, "alice", gw) as alice:
        gw.close_all()
        assert await alice.close_code() == 1001
        with anyio.fail_after(5):
            async with connect_websocket(
                websocket_url(url, TOPIC),
                headers=[("Authorization", f"Bearer {gw.issue_token('bob', TOPIC)}")],
            ) as ws:
                with pytest.raises(WebSocketClosed) as info:
                    await ws.receive_text()
                assert info.value.code == 1001


def _participant_entries(ids: set[str]) -> int:
    """Live dicts shaped like the gateway's participant entries, for any of `ids`."""
    gc.collect()
    count = 0
    for obj in gc.get_objects():
        if isinstance(obj, dict) and obj.get("kind") == "agent" and "mcp" in obj:
            count += isinstance(obj.get("id"), str) and obj["id"] in ids
    return count


async def test_memory_per_connection_does_not_grow_with_the_topic() -> None:
    # The welcome lists everyone present. Were it kept for the life of each connection, a topic
    # of n would hold n²/2 participant entries (gigabytes at a few thousand participants).
    count = 24
    gw = Gateway(GatewayConfig(history_limit=0))
    ids = {f"p{i}" for i in range(count)}
    async with run_gateway(gw) as url, AsyncExitStack() as stack:
        for pid in sorted(ids):
            headers = [("Authorization", f"Bearer {gw.issue_token(pid, TOPIC)}")]
            target = websocket_url(url, TOPIC)
            ws = await stack.enter_async_context(connect_websocket(target, headers=headers))
            await ws.receive_text()  # the welcome, read and dropped: the client keeps none of it
        assert len(gw.participants(TOPIC)) == count
        assert _participant_entries(ids) < count  # the history is off: nothing needs to keep any
