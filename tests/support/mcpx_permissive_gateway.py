"""A permissive MCPx gateway, as some deployments run one: it forwards frames of any kind.

It checks what the draft requires of every gateway (`from` is the authenticated participant)
and nothing else: a participant may send a frame that looks like presence, a welcome or any
other system message, and the others receive it as sent. The token is the participant id
(`static_token("alice")` joins as `alice`). Served for real (Starlette on Hypercorn) with
`permissive_gateway()`; used to show that our topic client trusts only the gateway.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mcpx_router.mcpx import PROTOCOL
from mcpx_router.mcpx.gateway._serve import serve_asgi


class PermissiveGateway:
    """The rooms of the permissive gateway: participant id → its queue of frames to send."""

    def __init__(self) -> None:
        self.members: dict[str, anyio.abc.ObjectSendStream[str]] = {}
        self.app = Starlette(routes=[WebSocketRoute("/v0/ws", self._endpoint)])

    def _system(self, kind: str, payload: dict[str, Any], to: list[str] | None = None) -> str:
        frame = {"protocol": PROTOCOL, "id": str(uuid.uuid4()), "from": "system:gateway", "kind": kind}
        return json.dumps({**frame, "to": to or [], "payload": payload})

    def _send(self, text: str, to: list[str], sender: str) -> None:
        for pid, queue in list(self.members.items()):
            if pid != sender and (not to or pid in to):
                queue.send_nowait(text)

    async def _endpoint(self, websocket: WebSocket) -> None:
        auth = websocket.headers.get("authorization", "")
        pid = auth.removeprefix("Bearer ").strip()
        await websocket.accept()
        if not pid or pid in self.members:
            await websocket.close(1008, "a token is the participant id, once")
            return
        others = [{"id": p, "name": p, "kind": "agent"} for p in self.members]
        welcome = {"event": "welcome", "participant": {"id": pid}, "participants": others, "history": []}
        queue_send, queue_recv = anyio.create_memory_object_stream[str](1000)
        self.members[pid] = queue_send
        queue_send.send_nowait(self._system("system", welcome, [pid]))
        self._send(self._system("presence", {"event": "join", "participant": {"id": pid}}), [], pid)
        try:
            async with anyio.create_task_group() as tg:

                async def write() -> None:
                    async with queue_recv:
                        async for text in queue_recv:
                            await websocket.send_text(text)

                tg.start_soon(write)
                with contextlib.suppress(WebSocketDisconnect):  # the participant left
                    while True:
                        self._forward(pid, await websocket.receive_text())
                tg.cancel_scope.cancel()
        finally:
            queue_send.close()
            del self.members[pid]
            self._send(self._system("presence", {"event": "leave", "participant": {"id": pid}}), [], pid)

    def _forward(self, pid: str, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or frame.get("from") != pid:
            error = {"error": "from_mismatch", "details": "`from` must be your participant id"}
            self.members[pid].send_nowait(json.dumps(error))
            return
        to = frame.get("to")
        self._send(text, to if isinstance(to, list) else [], pid)


@asynccontextmanager
async def permissive_gateway() -> AsyncIterator[tuple[PermissiveGateway, str]]:
    """Serve a `PermissiveGateway` on 127.0.0.1; yield it and its base URL."""
    gateway = PermissiveGateway()
    async with serve_asgi(gateway.app) as url:
        yield gateway, url
