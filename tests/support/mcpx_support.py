"""Helpers for the MCPx tests: raw WebSocket participants and a small MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from mcpx_router.mcpx import PROTOCOL, Gateway, new_envelope, websocket_url
from mcpx_router.mcpx._ws import WebSocket, WebSocketClosed, connect_websocket

TIMEOUT = 5.0


def make_server(name: str = "agent-b") -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def slow_echo(text: str, delay: float = 0.5) -> str:
        """Return the text after a delay (seconds)."""
        await anyio.sleep(delay)
        return text

    return server


class RawPeer:
    """A participant that speaks frames directly: for spoofing and malformed-frame tests."""

    def __init__(self, ws: WebSocket, participant_id: str) -> None:
        self.ws = ws
        self.participant_id = participant_id
        self.welcome: dict[str, Any] = {}

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.ws.send_text(frame if isinstance(frame, str) else json.dumps(frame))

    async def send_mcp(
        self,
        payload: dict[str, Any],
        *,
        to: tuple[str, ...] = (),
        correlation_id: str | None = None,
        sender: str | None = None,
    ) -> dict[str, Any]:
        """Send an mcp envelope (optionally with a forged `from`); return what was sent."""
        env = {
            "protocol": PROTOCOL,
            "id": new_envelope(sender="x", kind="mcp", payload={"jsonrpc": "2.0", "method": "x"}).id,
            "ts": "2025-08-17T14:00:00Z",
            "from": sender or self.participant_id,
            "to": list(to),
            "kind": "mcp",
            "payload": payload,
        }
        if correlation_id is not None:
            env["correlation_id"] = correlation_id
        await self.send(env)
        return env

    async def recv(self, limit: float = TIMEOUT) -> dict[str, Any]:
        with anyio.fail_after(limit):
            frame: dict[str, Any] = json.loads(await self.ws.receive_text())
            return frame

    async def recv_until(
        self, match: Callable[[dict[str, Any]], bool], limit: float = TIMEOUT
    ) -> dict[str, Any]:
        with anyio.fail_after(limit):
            while True:
                frame = await self.recv(limit)
                if match(frame):
                    return frame

    async def recv_mcp(self, limit: float = TIMEOUT) -> dict[str, Any]:
        return await self.recv_until(lambda f: f.get("kind") == "mcp", limit)

    async def frames_within(self, seconds: float) -> list[dict[str, Any]]:
        """Everything that arrives within `seconds`."""
        frames: list[dict[str, Any]] = []
        with anyio.move_on_after(seconds):
            while True:
                frames.append(json.loads(await self.ws.receive_text()))
        return frames

    async def close_code(self, limit: float = TIMEOUT) -> int:
        """Read until the gateway closes the socket; return the close code."""
        with anyio.fail_after(limit):
            try:
                while True:
                    await self.ws.receive_text()
            except WebSocketClosed as closed:
                return closed.code


@asynccontextmanager
async def raw_peer(
    url: str,
    topic: str,
    participant_id: str,
    gateway: Gateway | None = None,
    *,
    token: str | None = None,
    presence: str | None = None,
) -> AsyncIterator[RawPeer]:
    if token is None:
        assert gateway is not None
        token = gateway.issue_token(participant_id, topic)
    async with connect_websocket(
        websocket_url(url, topic, presence=presence), headers=[("Authorization", f"Bearer {token}")]
    ) as ws:
        peer = RawPeer(ws, participant_id)
        peer.welcome = await peer.recv()
        assert peer.welcome["kind"] == "system" and peer.welcome["payload"]["event"] == "welcome"
        yield peer


async def eventually(condition: Callable[[], bool], limit: float = TIMEOUT) -> None:
    """Poll `condition` until it holds (for state that has no event of its own, like log records)."""
    with anyio.fail_after(limit):
        while True:
            if condition():
                return
            await anyio.sleep(0.02)


def is_presence(event: str, pid: str) -> Callable[[dict[str, Any]], bool]:
    def match(frame: dict[str, Any]) -> bool:
        payload = frame.get("payload") or {}
        return (
            frame.get("kind") == "presence"
            and payload.get("event") == event
            and payload.get("participant", {}).get("id") == pid
        )

    return match


def is_error(error: str) -> Callable[[dict[str, Any]], bool]:
    def match(frame: dict[str, Any]) -> bool:
        payload = frame.get("payload") or {}
        return (
            frame.get("kind") == "system"
            and payload.get("event") == "error"
            and payload.get("error") == error
        )

    return match
