"""Our own participant side: an in-process MCP server answers the requests addressed to us.

    async with TopicClient(url, "room", "agent-b") as topic, serve_participant(topic, mcp_server):
        ...

Each requesting participant gets its own server session (each runs its own `initialize`
handshake); a new `initialize`, a `leave` or a rejoin of that participant ends the old session.
Replies are addressed to the requester with `correlation_id` set to its request envelope.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.models import InitializationOptions
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from pydantic import ValidationError

from .._envelope import Envelope
from .._rpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    IdKey,
    classify,
    error_response,
    id_key,
    to_payload,
    to_session_message,
)
from ._channel import send_tracked
from ._topic import TopicClient

logger = logging.getLogger("mcpx_router.mcpx")


class _ServerSession:
    def __init__(self, owner: ParticipantServer, peer: str) -> None:
        self.owner = owner
        self.peer = peer
        self.in_send, self.in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](
            owner.topic.channel_buffer
        )
        self.out_send, self.out_recv = anyio.create_memory_object_stream[SessionMessage](0)
        self.answer_to: dict[IdKey, str] = {}
        self.sent: dict[IdKey, str] = {}
        self.scope = anyio.CancelScope()

    async def run(self) -> None:
        owner = self.owner
        try:
            with self.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._pump)
                    async with self.in_recv, self.out_send:
                        await owner.lowlevel.run(
                            self.in_recv,
                            self.out_send,
                            owner.init_options,
                            raise_exceptions=owner.raise_exceptions,
                        )
        except Exception:
            logger.exception("the MCP server session for %r failed", self.peer)
        finally:
            self.in_send.close()
            for env_id in self.sent.values():
                owner.topic._routes.forget_response(env_id)
            owner._session_ended(self)

    def deliver(self, payload: dict[str, Any], envelope: Envelope) -> None:
        is_request = classify(payload) == "request"
        try:
            message = to_session_message(payload)
        except ValidationError:
            logger.warning("dropping an invalid MCP message from %r", self.peer)
            if is_request:
                self.reply(envelope, error_response(payload["id"], INVALID_REQUEST, "invalid request"))
            return
        key = id_key(payload.get("id"))
        if is_request and key is not None:
            self.answer_to[key] = envelope.id
        try:
            self.in_send.send_nowait(message)
        except anyio.WouldBlock:
            logger.warning("the server session for %r is saturated; rejecting a message", self.peer)
            if is_request:
                self.answer_to.pop(key, None)  # type: ignore[arg-type]
                self.reply(envelope, error_response(payload["id"], INTERNAL_ERROR, "server busy"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server session has ended: nobody is left to read it

    def on_response(self, payload: dict[str, Any], envelope: Envelope) -> None:
        key = id_key(payload.get("id"))
        if key is not None:
            self.sent.pop(key, None)
        self.deliver(payload, envelope)

    def reply(self, request: Envelope, payload: dict[str, Any]) -> None:
        topic = self.owner.topic
        topic._send_nowait(topic.envelope("mcp", payload, to=(self.peer,), correlation_id=request.id))

    def close(self, grace: float) -> None:
        self.in_send.close()
        self.scope.deadline = min(self.scope.deadline, anyio.current_time() + grace)

    async def _pump(self) -> None:
        topic, peer = self.owner.topic, self.peer
        async with self.out_recv:
            async for item in self.out_recv:
                payload = to_payload(item.message)
                kind = classify(payload)
                correlation_id: str | None = None
                if kind == "response":
                    key = id_key(payload.get("id"))
                    correlation_id = self.answer_to.pop(key, None) if key is not None else None
                    if correlation_id is None:
                        logger.warning("dropping a response to %r for an unknown request", peer)
                        continue
                elif kind == "notification":
                    meta = item.metadata
                    if isinstance(meta, ServerMessageMetadata) and meta.related_request_id is not None:
                        related = id_key(meta.related_request_id)
                        correlation_id = self.answer_to.get(related) if related is not None else None
                _, exc = await send_tracked(
                    topic, peer, payload, kind, correlation_id, self.sent, self.on_response
                )
                if exc is not None:
                    logger.debug("could not answer %r: %s", peer, exc)


class ParticipantServer:
    """The running participant side returned by `serve_participant`."""

    def __init__(
        self,
        topic: TopicClient,
        lowlevel: Server[Any],
        tg: anyio.abc.TaskGroup,
        *,
        raise_exceptions: bool,
        max_sessions: int,
        shutdown_grace: float,
    ) -> None:
        self.topic = topic
        self.lowlevel = lowlevel
        self.init_options: InitializationOptions = lowlevel.create_initialization_options()
        self.raise_exceptions = raise_exceptions
        self.max_sessions = max_sessions
        self.shutdown_grace = shutdown_grace
        self._tg = tg
        self._sessions: dict[str, _ServerSession] = {}

    @property
    def sessions(self) -> frozenset[str]:
        """Participants that currently have a session with our server."""
        return frozenset(self._sessions)

    # InboundHandler

    def on_request(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        session = self._sessions.get(peer)
        if session is not None and payload["method"] == "initialize":
            self._end(peer, "new initialize")
            session = None
        if session is None:
            if len(self._sessions) >= self.max_sessions:
                reply = error_response(payload["id"], INTERNAL_ERROR, "too many sessions")
                reply_env = self.topic.envelope("mcp", reply, to=(peer,), correlation_id=envelope.id)
                self.topic._send_nowait(reply_env)
                return
            session = self._sessions[peer] = _ServerSession(self, peer)
            self._tg.start_soon(session.run, name=f"mcpx-session-{peer}")
        session.deliver(payload, envelope)

    def on_notification(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        session = self._sessions.get(peer)
        if session is not None:
            session.deliver(payload, envelope)

    def on_peer_gone(self, peer: str) -> None:
        self._end(peer, "participant gone")

    def on_connection_lost(self) -> None:
        for peer in list(self._sessions):
            self._end(peer, "connection lost")

    def _end(self, peer: str, reason: str) -> None:
        session = self._sessions.pop(peer, None)
        if session is not None:
            logger.info("ending the server session for %r: %s", peer, reason)
            session.close(self.shutdown_grace)

    def _session_ended(self, session: _ServerSession) -> None:
        if self._sessions.get(session.peer) is session:
            del self._sessions[session.peer]


@asynccontextmanager
async def serve_participant(
    topic: TopicClient,
    server: Server[Any] | MCPServer,
    *,
    raise_exceptions: bool = False,
    max_sessions: int = 256,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[ParticipantServer]:
    """Answer MCP requests addressed to `topic.participant_id` with `server` until the block ends.

    Entered before the topic client connects, it is ready when the other participants see this
    one join (until it is entered, requests are answered "method not found").
    """
    lowlevel: Server[Any] = server._lowlevel_server if isinstance(server, MCPServer) else server
    async with anyio.create_task_group() as tg:
        handler = ParticipantServer(
            topic,
            lowlevel,
            tg,
            raise_exceptions=raise_exceptions,
            max_sessions=max_sessions,
            shutdown_grace=shutdown_grace,
        )
        topic._routes.set_handler(handler)
        try:
            yield handler
        finally:
            topic._routes.set_handler(None)
            handler.on_connection_lost()
            tg.cancel_scope.deadline = anyio.current_time() + shutdown_grace
