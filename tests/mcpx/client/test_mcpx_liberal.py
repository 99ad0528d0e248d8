"""The topic client against a gateway that behaves like real deployments, not like the draft.

The fake gateway below (a real Starlette app on Hypercorn) sends our own presence join before the
welcome, names the welcome under `type` with `participant_id`, lists us among the participants,
sends history as a list of envelopes, error frames that are not envelopes, garbage, copies of
replies addressed to someone else, and echoes every frame back to its sender. It also plays a
peer that answers `initialize` with the older protocol version 2024-11-05 and implements neither
`ping` nor `server/discover`.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mcpx_router.mcpx import (
    GatewayErrorEvent,
    MCPxAuthError,
    MCPxConnectionError,
    PresenceEvent,
    TopicClient,
    static_token,
)
from mcpx_router.mcpx.gateway._serve import serve_asgi

from ...support.mcpx_support import eventually

pytestmark = pytest.mark.anyio

NOTE = {"jsonrpc": "2.0", "method": "notifications/chat/message", "params": {"text": "earlier"}}


def peer_answer(payload: dict[str, Any]) -> dict[str, Any]:
    method = payload["method"]
    if method == "initialize":
        info = {"name": "old-peer", "version": "0.1"}
        result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}, "serverInfo": info}
    elif method == "tools/list":
        result = {"tools": [{"name": "shout", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        text = f"called {payload['params']['name']}"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        error = {"code": -32601, "message": f"unknown method {method}"}
        return {"jsonrpc": "2.0", "id": payload["id"], "error": error}
    return {"jsonrpc": "2.0", "id": payload["id"], "result": result}


async def quirky_endpoint(websocket: WebSocket) -> None:
    token = websocket.headers.get("authorization")
    if token == "Bearer refuse":
        await websocket.send_denial_response(PlainTextResponse("no such token", status_code=403))
        return
    await websocket.accept()
    if token == "Bearer mute":
        with contextlib.suppress(WebSocketDisconnect):
            await websocket.receive_text()
        return
    if token != "Bearer good":
        await websocket.send_text(json.dumps({"error": "unauthorized", "details": "bad token"}))
        await websocket.close(1008, "authentication failed")
        return
    send = websocket.send_text
    await send(json.dumps({"kind": "presence", "payload": {"type": "join", "participant_id": "me"}}))
    history = [{"protocol": "mcp-x/v0", "id": "h1", "from": "peer", "kind": "mcp", "payload": NOTE}]
    welcome = {"type": "welcome", "participant_id": "me", "participants": [{"id": "me"}, {"id": "peer"}]}
    await send(
        json.dumps(
            {
                "id": "w",
                "from": "system:gateway",
                "kind": "system",
                "payload": {**welcome, "history": history},
            }
        )
    )
    await send(json.dumps({"error": "rate_limited", "details": "slow down a little"}))
    await send("this is not json")
    await send(json.dumps({"event": "join", "participant": {"id": "other", "name": "Other"}}))
    try:
        while True:
            text = await websocket.receive_text()
            await send(text)  # the echo of everything we send
            envelope = json.loads(text)
            payload = envelope["payload"]
            if payload.get("method") == "notifications/please-complain":
                await send(json.dumps({"error": "rate_limited", "details": "slow down a little"}))
            if envelope["to"] == ["peer"] and "method" in payload and "id" in payload:
                if payload["method"] == "tools/call":  # first a copy for someone else: not ours to take
                    text = {"content": [{"type": "text", "text": "misaddressed"}], "isError": False}
                    misaddressed = {"jsonrpc": "2.0", "id": payload["id"], "result": text}
                    frame = {"id": "m", "from": "peer", "to": ["someone-else"], "kind": "mcp"}
                    await send(
                        json.dumps({**frame, "correlation_id": envelope["id"], "payload": misaddressed})
                    )
                reply = {
                    "id": str(uuid.uuid4()),
                    "from": "peer",
                    "to": "me",  # a bare string
                    "kind": "mcp",
                    "correlationId": envelope["id"],  # camelCase, no protocol, no ts
                    "payload": peer_answer(payload),
                }
                await send(json.dumps(reply))
    except WebSocketDisconnect:
        pass


@pytest.fixture
async def quirky_url() -> AsyncIterator[str]:
    app = Starlette(routes=[WebSocketRoute("/v0/ws", quirky_endpoint)])
    async with serve_asgi(app) as url:
        yield url


async def test_a_quirky_gateway_is_understood(quirky_url: str) -> None:
    async with TopicClient(quirky_url, "room", "me", token_provider=static_token("good")) as topic:
        assert topic.participant_id == "me"
        await eventually(lambda: set(topic.participants) == {"peer", "other"})  # "other" joins later
        assert [h.id for h in topic.history] == ["h1"]
        async with topic.subscribe() as events:
            seeded = [await events.receive() for _ in range(3)]
            assert {e.participant.id for e in seeded if isinstance(e, PresenceEvent)} == {"peer", "other"}
            await topic.notify("notifications/chat/message", {"text": "hello"})  # echoed back: ignored
            for mode in ("legacy", "auto"):  # auto: server/discover is refused, then initialize
                async with Client(topic.participant_transport("peer"), mode=mode) as client:
                    assert client.protocol_version == "2024-11-05"
                    assert [t.name for t in (await client.list_tools()).tools] == ["shout"]
                    result = await client.call_tool("shout", {})
                    assert result.content[0].text == "called shout"  # type: ignore[union-attr]
            with anyio.move_on_after(0.2):
                async for event in events:
                    assert not isinstance(event, PresenceEvent)


async def test_error_frames_reach_subscribers(quirky_url: str) -> None:
    async with TopicClient(quirky_url, "room", "me", token_provider=static_token("good")) as topic:
        async with topic.subscribe() as events:
            await topic.notify("notifications/please-complain")
            with anyio.fail_after(5):
                async for event in events:
                    if isinstance(event, GatewayErrorEvent):
                        break
            assert (event.error, event.details) == ("rate_limited", "slow down a little")


async def test_close_1008_is_an_auth_error(quirky_url: str) -> None:
    with pytest.raises(MCPxAuthError, match="authentication failed"):
        async with TopicClient(quirky_url, "room", "me", token_provider=static_token("bad")):
            pass


async def test_a_refused_upgrade_is_an_auth_error(quirky_url: str) -> None:
    with pytest.raises(MCPxAuthError, match="403: no such token"):
        async with TopicClient(quirky_url, "room", "me", token_provider=static_token("refuse")):
            pass


async def test_a_gateway_that_never_welcomes_times_out(quirky_url: str) -> None:
    ws_url = quirky_url.replace("http", "ws")  # ws:// base URLs work as well
    with pytest.raises(MCPxConnectionError, match="no welcome"):
        async with TopicClient(
            ws_url, "room", "me", token_provider=static_token("mute"), welcome_timeout=0.5
        ):
            pass
