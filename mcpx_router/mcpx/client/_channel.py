"""`ParticipantTransport`: an MCP client transport to one participant of a topic.

Outgoing JSON-RPC messages are wrapped in envelopes addressed to the participant. A response is
handed to the session only if the topic client matched it to our request envelope (sender,
correlation id and JSON-RPC id, same JSON type). Requests the participant sends us in this
session (roots, sampling, elicitation) are answered with `correlation_id` set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from .._envelope import Envelope
from .._errors import MCPxConnectionError
from .._rpc import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    IdKey,
    classify,
    error_response,
    id_key,
    to_payload,
    to_session_message,
)
from ._routes import PeerChannel, Routes, Sender

logger = logging.getLogger("mcpx_router.mcpx")


class TopicLink(Sender, Protocol):
    """The part of the topic client (`TopicClient`) a participant transport needs.

    Declared here so that this module need not import the topic client, which imports it.
    """

    channel_buffer: int
    _routes: Routes

    async def send(self, envelope: Envelope) -> None: ...
    def _add_channel(self, peer: str, channel: PeerChannel) -> None: ...


class _ClientChannel:
    def __init__(
        self, topic: TopicLink, peer: str, inbound: MemoryObjectSendStream[SessionMessage | Exception]
    ):
        self.topic = topic
        self.peer = peer
        self._inbound = inbound
        self._answer_to: dict[IdKey, str] = {}  # peer's request id -> its envelope id
        self._sent: dict[IdKey, str] = {}  # our request id -> our envelope id

    # called by the topic client's reader (synchronous, never blocks)

    def deliver(self, payload: dict[str, Any], envelope: Envelope) -> None:
        is_request = classify(payload) == "request"
        try:
            message = to_session_message(payload)
        except ValidationError as exc:
            logger.warning("dropping an invalid MCP message from %r: %s", self.peer, exc.errors()[:1])
            if is_request:
                reply = error_response(payload["id"], INVALID_REQUEST, "invalid request")
                self.topic._send_nowait(
                    self.topic.envelope("mcp", reply, to=(self.peer,), correlation_id=envelope.id)
                )
            return
        if is_request:
            key = id_key(payload["id"])
            assert key is not None
            self._answer_to[key] = envelope.id
        try:
            self._inbound.send_nowait(message)
        except anyio.WouldBlock:
            logger.warning("session with %r is not reading; dropped a message", self.peer)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session has ended: nobody is left to read it

    def on_response(self, payload: dict[str, Any], envelope: Envelope) -> None:
        key = id_key(payload.get("id"))
        if key is not None:
            self._sent.pop(key, None)
        self.deliver(payload, envelope)

    def close_inbound(self, reason: str) -> None:
        logger.info("session with %r ends: %s", self.peer, reason)
        self._inbound.close()

    def forget_all(self) -> None:
        for env_id in self._sent.values():
            self.topic._routes.forget_response(env_id)
        self._sent.clear()

    # the outbound pump

    async def pump(self, outbound: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with outbound:
            async for item in outbound:
                await self._send(to_payload(item.message))

    async def _send(self, payload: dict[str, Any]) -> None:
        topic, peer = self.topic, self.peer
        kind = classify(payload)
        correlation_id: str | None = None
        if kind == "response":
            key = id_key(payload.get("id"))
            correlation_id = self._answer_to.pop(key, None) if key is not None else None
            if correlation_id is None:
                logger.warning("dropping a response to %r for an unknown request %r", peer, payload.get("id"))
                return
        elif kind == "notification" and payload.get("method") == "notifications/cancelled":
            params = payload.get("params")
            key = id_key(params.get("requestId")) if isinstance(params, dict) else None
            env_id = self._sent.pop(key, None) if key is not None else None
            if env_id is not None:
                topic._routes.forget_response(env_id)
        env, exc = await send_tracked(
            topic, peer, payload, kind, correlation_id, self._sent, self.on_response
        )
        if exc is None:
            return
        if kind == "request":
            self.on_response(error_response(payload["id"], CONNECTION_CLOSED, str(exc)), env)
        else:
            logger.debug("could not send to %r: %s", peer, exc)


async def send_tracked(
    topic: TopicLink,
    peer: str,
    payload: dict[str, Any],
    kind: str | None,
    correlation_id: str | None,
    sent: dict[IdKey, str],
    on_response: Callable[[dict[str, Any], Envelope], None],
) -> tuple[Envelope, MCPxConnectionError | None]:
    """Send one MCP message to `peer`, addressed; a request is remembered (in `sent` and the topic's
    routes) so that only `peer`'s reply with the same JSON-RPC id and correlation id reaches
    `on_response`. Returns the envelope, and the error if the topic connection was down (the
    request is then forgotten again)."""
    env = topic.envelope("mcp", payload, to=(peer,), correlation_id=correlation_id)
    key = id_key(payload["id"]) if kind == "request" else None
    if key is not None:
        sent[key] = env.id
        topic._routes.expect_response(env.id, peer, payload["id"], on_response)
    try:
        await topic.send(env)
    except MCPxConnectionError as exc:
        if key is not None:
            topic._routes.forget_response(env.id)
            sent.pop(key, None)
        return env, exc
    return env, None


class ParticipantTransport:
    """`async with` yields the (read, write) streams `mcp.Client` expects; see `TopicClient`."""

    def __init__(self, topic: TopicLink, peer: str) -> None:
        if not peer:
            raise ValueError("participant id must be non-empty")
        self.topic = topic
        self.peer = peer
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> TransportStreams:
        if self._stack is not None:
            raise RuntimeError("a ParticipantTransport can be entered only once at a time")
        if self.peer == self.topic.participant_id:
            raise ValueError("a participant cannot open an MCP session with itself")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](
                self.topic.channel_buffer
            )
            out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](0)
            for stream in (in_send, in_recv, out_send, out_recv):
                stack.push_async_callback(stream.aclose)
            channel = _ClientChannel(self.topic, self.peer, in_send)
            self.topic._add_channel(self.peer, channel)
            stack.callback(channel.forget_all)
            stack.callback(self.topic._routes.remove_channel, self.peer, channel)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            tg.start_soon(channel.pump, out_recv)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return in_recv, out_send

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)
