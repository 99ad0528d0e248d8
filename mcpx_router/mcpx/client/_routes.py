"""Routing of inbound `mcp` envelopes to the local MCP sessions of one topic client.

Responses go to whoever sent the matching request, checked against the sender, the correlation id
and the JSON-RPC id (same JSON type); requests addressed to us go to the inbound handler
(`serve_participant` or the bridge) or, for the few client-side methods, to the session with
their sender; notifications go to the sessions with their sender. Everything else is dropped
and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .._envelope import Envelope, Kind
from .._rpc import CONNECTION_CLOSED, METHOD_NOT_FOUND, NOT_DELIVERED, classify, error_response, same_id

logger = logging.getLogger("mcpx_router.mcpx")

CLIENT_BOUND_REQUESTS: Final = frozenset({"sampling/createMessage", "roots/list", "elicitation/create"})
SERVER_BOUND_NOTIFICATIONS: Final = frozenset(
    {"notifications/initialized", "notifications/roots/list_changed", "notifications/cancelled"}
)

ResponseSink = Callable[[dict[str, Any], Envelope], None]


class InboundHandler(Protocol):
    """What `serve_participant` and the bridge implement to answer requests addressed to us."""

    def on_request(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None: ...
    def on_notification(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None: ...
    def on_peer_gone(self, peer: str) -> None: ...
    def on_connection_lost(self) -> None: ...


class PeerChannel(Protocol):
    """One client-side MCP session with a peer (see `_channel.ParticipantTransport`)."""

    def deliver(self, payload: dict[str, Any], envelope: Envelope) -> None: ...
    def close_inbound(self, reason: str) -> None: ...


class Sender(Protocol):
    """The part of the topic client the routes need."""

    topic: str
    participant_id: str

    def envelope(
        self, kind: Kind, payload: Any, *, to: tuple[str, ...] = (), correlation_id: str | None = None
    ) -> Envelope: ...
    def _send_nowait(self, envelope: Envelope) -> bool: ...


@dataclass(slots=True)
class _Pending:
    peer: str
    request_id: int | str
    sink: ResponseSink


class Routes:
    def __init__(self, owner: Sender) -> None:
        self._owner = owner
        self._channels: dict[str, list[PeerChannel]] = {}
        self._pending: dict[str, _Pending] = {}
        self.handler: InboundHandler | None = None

    # -- registration -------------------------------------------------------------------------

    def set_handler(self, handler: InboundHandler | None) -> None:
        if handler is not None and self.handler is not None:
            raise RuntimeError("this topic client already serves MCP requests")
        self.handler = handler

    def add_channel(self, peer: str, channel: PeerChannel) -> None:
        self._channels.setdefault(peer, []).append(channel)

    def remove_channel(self, peer: str, channel: PeerChannel) -> None:
        channels = self._channels.get(peer, [])
        if channel in channels:
            channels.remove(channel)
        if not channels:
            self._channels.pop(peer, None)

    def expect_response(self, envelope_id: str, peer: str, request_id: int | str, sink: ResponseSink) -> None:
        """Accept one response to our request envelope `envelope_id` from `peer` only."""
        self._pending[envelope_id] = _Pending(peer, request_id, sink)

    def forget_response(self, envelope_id: str) -> None:
        self._pending.pop(envelope_id, None)

    # -- inbound ------------------------------------------------------------------------------

    def on_mcp(self, env: Envelope) -> None:
        me, peer = self._owner.participant_id, env.sender
        if peer == me:
            logger.debug("topic %r: dropping the echo of our own envelope %s", self._owner.topic, env.id)
            return
        if not env.addressed_to(me):
            logger.debug(
                "topic %r: ignoring envelope %s from %r to %s", self._owner.topic, env.id, peer, env.to
            )
            return
        payload: dict[str, Any] = env.payload
        kind = classify(payload)
        if kind == "response":
            self._on_response(peer, payload, env)
        elif kind == "request":
            self._on_request(peer, payload, env)
        elif kind == "notification":
            self._on_notification(peer, payload, env)
        else:
            logger.warning("topic %r: dropping a non-JSON-RPC mcp payload from %r", self._owner.topic, peer)

    def fail_request(
        self, correlation_id: str | None, message: str, env: Envelope, code: int = CONNECTION_CLOSED
    ) -> None:
        """The gateway could not deliver our request `correlation_id` (or we could not send it):
        answer it with an error now, its data saying that it was not delivered (`NOT_DELIVERED`)."""
        pending = self._pending.pop(correlation_id, None) if correlation_id else None
        if pending is not None:
            pending.sink(error_response(pending.request_id, code, message, NOT_DELIVERED), env)

    def _on_response(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        corr = env.correlation_id
        pending = self._pending.get(corr) if corr else None
        if pending is None or pending.peer != peer or not same_id(pending.request_id, payload.get("id")):
            logger.warning(
                "topic %r: dropping an unmatched response from %r (correlation_id=%r, id=%r)",
                self._owner.topic,
                peer,
                corr,
                payload.get("id"),
            )
            return
        self._pending.pop(corr)  # type: ignore[arg-type]
        pending.sink(payload, env)

    def _on_request(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        me = self._owner.participant_id
        if env.to != (me,):
            logger.warning(
                "topic %r: ignoring a request from %r not addressed to us alone", self._owner.topic, peer
            )
            return
        method = payload["method"]
        channels = self._channels.get(peer)
        if method in CLIENT_BOUND_REQUESTS and channels:
            channels[-1].deliver(payload, env)
        elif self.handler is not None:
            self.handler.on_request(peer, payload, env)
        elif method == "ping":
            self._reply(peer, env, {"jsonrpc": "2.0", "id": payload["id"], "result": {}})
        else:
            self._reply(
                peer, env, error_response(payload["id"], METHOD_NOT_FOUND, f"{me} serves no {method}")
            )

    def _on_notification(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        method = payload["method"]
        if method in SERVER_BOUND_NOTIFICATIONS and self.handler is not None:
            self.handler.on_notification(peer, payload, env)
            if method != "notifications/cancelled":
                return
        for channel in self._channels.get(peer, ()):
            channel.deliver(payload, env)

    def _reply(self, peer: str, request: Envelope, payload: dict[str, Any]) -> None:
        owner = self._owner
        owner._send_nowait(owner.envelope("mcp", payload, to=(peer,), correlation_id=request.id))

    # -- endings ------------------------------------------------------------------------------

    def peer_gone(self, peer: str, reason: str) -> None:
        """`peer` left or reconnected: its sessions with us and ours with it are over."""
        for channel in list(self._channels.pop(peer, ())):
            channel.close_inbound(reason)
        for env_id in [k for k, p in self._pending.items() if p.peer == peer]:
            del self._pending[env_id]
        if self.handler is not None:
            self.handler.on_peer_gone(peer)

    def end_all(self, reason: str) -> None:
        """The connection is gone: end every session."""
        for channels in list(self._channels.values()):
            for channel in list(channels):
                channel.close_inbound(reason)
        self._channels.clear()
        self._pending.clear()
        if self.handler is not None:
            self.handler.on_connection_lost()
