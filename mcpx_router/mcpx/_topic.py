"""The topic client: one WebSocket to a gateway, shared by every MCP session we run over it.

    async with TopicClient("http://127.0.0.1:8080", "room", "agent-a") as topic:
        async with topic.subscribe() as events:          # presence + connection state
            ...
        async with mcp.Client(topic.participant_transport("agent-b"), mode="legacy") as client:
            await client.list_tools()

Inbound MCP traffic is routed here: responses go to whoever sent the matching request (checked
against sender, correlation id and JSON-RPC id), requests addressed to us go to the registered
inbound handler (`serve_participant` or the bridge), notifications go to the sessions with
their sender. Everything else is dropped and logged.
"""

from __future__ import annotations

import enum
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._auth import TokenProvider, dev_token_provider, websocket_url
from ._channel import ParticipantTransport
from ._envelope import (
    Envelope,
    ErrorFrame,
    Kind,
    ParticipantInfo,
    encode_envelope,
    new_envelope,
    parse_frame,
    parse_presence,
    parse_system_error,
    parse_welcome,
)
from ._errors import EnvelopeError, MCPxAuthError, MCPxConnectionError
from ._rpc import CONNECTION_CLOSED, METHOD_NOT_FOUND, classify, error_response, same_id
from ._ws import WebSocket, WebSocketClosed, connect_websocket

logger = logging.getLogger("mcpx_router.mcpx")

CLIENT_BOUND_REQUESTS: Final = frozenset({"sampling/createMessage", "roots/list", "elicitation/create"})
SERVER_BOUND_NOTIFICATIONS: Final = frozenset(
    {"notifications/initialized", "notifications/roots/list_changed", "notifications/cancelled"}
)
_OUTBOX_SIZE: Final = 1024


class ConnectionState(enum.Enum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    LOST = "lost"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class PresenceEvent:
    """`join` (with `rejoined=True` when a known id connected again) or `leave`."""

    event: str
    participant: ParticipantInfo
    rejoined: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionEvent:
    state: ConnectionState
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class GatewayErrorEvent:
    error: str
    message: str | None = None
    details: Any = None
    correlation_id: str | None = None


TopicEvent = PresenceEvent | ConnectionEvent | GatewayErrorEvent
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


@dataclass(slots=True)
class _Pending:
    peer: str
    request_id: int | str
    sink: ResponseSink


class TopicClient:
    def __init__(
        self,
        gateway_url: str,
        topic: str,
        participant_id: str,
        *,
        token_provider: TokenProvider | None = None,
        welcome_timeout: float = 10.0,
        connect_timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        channel_buffer: int = 256,
    ) -> None:
        if not topic or not participant_id:
            raise ValueError("topic and participant_id must be non-empty")
        self.gateway_url = gateway_url
        self.topic = topic
        self.requested_id = participant_id
        self.participant_id = participant_id
        self.channel_buffer = channel_buffer
        self._token_provider = token_provider or dev_token_provider(gateway_url, participant_id, topic)
        self._welcome_timeout = welcome_timeout
        self._connect_timeout = connect_timeout
        self._ssl_context = ssl_context
        self._state = ConnectionState.CLOSED
        self._roster: dict[str, ParticipantInfo] = {}
        self._history: tuple[Envelope, ...] = ()
        self._subscribers: set[MemoryObjectSendStream[TopicEvent]] = set()
        self._channels: dict[str, list[PeerChannel]] = {}
        self._pending: dict[str, _Pending] = {}
        self._handler: InboundHandler | None = None
        self._outbox: MemoryObjectSendStream[str] | None = None
        self._stack: AsyncExitStack | None = None
        self._closing = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("a TopicClient can be entered only once")
        self._closing = False
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        try:
            tg = await self._stack.enter_async_context(anyio.create_task_group())
            self._stack.callback(tg.cancel_scope.cancel)  # runs first on exit: stop the connection task
            await tg.start(self._run)
        except BaseException:
            # Unwind without handing the error to the task group: it would come out wrapped in an
            # exception group, and the caller should see e.g. MCPxAuthError itself.
            stack, self._stack = self._stack, None
            self._closing = True
            await stack.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing = True
        if self._stack is None:
            return
        try:
            await self._stack.__aexit__(exc_type, exc, tb)
        finally:
            self._set_state(ConnectionState.CLOSED, "closed")
            for send in list(self._subscribers):
                send.close()
            self._subscribers.clear()

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # One connection for now; a reconnect loop with backoff goes around this call.
        await self._connect_and_serve(task_status)

    async def _connect_and_serve(self, task_status: TaskStatus[None]) -> None:
        self._set_state(ConnectionState.CONNECTING)
        token = await self._token_provider()
        url = websocket_url(self.gateway_url, self.topic)
        reason = "connection closed"
        async with connect_websocket(
            url,
            headers=[("Authorization", f"Bearer {token}")],
            ssl_context=self._ssl_context,
            connect_timeout=self._connect_timeout,
        ) as ws:
            early = await self._await_welcome(ws)
            outbox_send, outbox_recv = anyio.create_memory_object_stream[str](_OUTBOX_SIZE)
            self._outbox = outbox_send
            self._set_state(ConnectionState.CONNECTED)
            task_status.started()
            try:
                for text in early:
                    self._on_text(text)
                async with anyio.create_task_group() as conn_tg:
                    conn_tg.start_soon(self._write_loop, ws, outbox_recv, conn_tg.cancel_scope)
                    try:
                        while True:
                            self._on_text(await ws.receive_text())
                    except WebSocketClosed as exc:
                        reason = str(exc)
                    conn_tg.cancel_scope.cancel()
            finally:
                self._outbox = None
                outbox_send.close()
                if self._closing:
                    self._end_sessions("topic client closed")
                else:
                    reason = reason if ws.closed is None else str(ws.closed)
                    self._set_state(ConnectionState.LOST, reason)
                    self._end_sessions(f"connection lost: {reason}")

    async def _await_welcome(self, ws: WebSocket) -> list[str]:
        """Read until the welcome; return the frames that came before it (presence is applied)."""
        early: list[str] = []
        try:
            with anyio.fail_after(self._welcome_timeout):
                while True:
                    text = await ws.receive_text()
                    try:
                        frame = parse_frame(text)
                    except EnvelopeError:
                        logger.warning("dropping malformed frame before the welcome")
                        continue
                    if isinstance(frame, ErrorFrame):
                        self._on_error_frame(frame)
                        continue
                    welcome = parse_welcome(frame)
                    if welcome is not None:
                        self.participant_id = welcome.participant_id or self.requested_id
                        self._history = welcome.history
                        self._apply_roster(welcome.participants)
                        return early
                    if frame.kind == "presence":
                        self._on_presence(frame)
                    else:
                        early.append(text)
        except TimeoutError:
            raise MCPxConnectionError(
                f"no welcome from the gateway within {self._welcome_timeout} s"
            ) from None
        except WebSocketClosed as exc:
            if exc.code == 1008:
                raise MCPxAuthError(f"the gateway refused us: {exc.reason or 'policy violation'}") from None
            raise MCPxConnectionError(
                f"the gateway closed the connection before the welcome: {exc}"
            ) from None

    async def _write_loop(
        self, ws: WebSocket, outbox: MemoryObjectReceiveStream[str], scope: anyio.CancelScope
    ) -> None:
        try:
            async with outbox:
                async for text in outbox:
                    await ws.send_text(text)
        except WebSocketClosed:
            scope.cancel()

    # -- public API ---------------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def participants(self) -> Mapping[str, ParticipantInfo]:
        """The other participants currently present (never ourselves)."""
        return dict(self._roster)

    @property
    def history(self) -> tuple[Envelope, ...]:
        """The recent broadcast history the gateway sent with its welcome."""
        return self._history

    @asynccontextmanager
    async def subscribe(self, *, buffer: int = 1000) -> AsyncIterator[MemoryObjectReceiveStream[TopicEvent]]:
        """A stream of topic events: first the current state and a `join` per present participant,
        then live presence, connection-state changes and gateway errors. Ends when the client closes."""
        send, recv = anyio.create_memory_object_stream[TopicEvent](buffer)
        send.send_nowait(ConnectionEvent(self._state))
        for info in self._roster.values():
            send.send_nowait(PresenceEvent("join", info))
        if self._state is ConnectionState.CLOSED and self._closing:
            send.close()
        else:
            self._subscribers.add(send)
        try:
            with recv:
                yield recv
        finally:
            self._subscribers.discard(send)
            send.close()

    def participant_transport(self, participant_id: str) -> ParticipantTransport:
        """An MCP `Transport` to one participant; use it with `mcp.Client`."""
        return ParticipantTransport(self, participant_id)

    async def send(self, envelope: Envelope) -> None:
        """Send an envelope (built with `new_envelope`). Raises `MCPxConnectionError` when not connected."""
        text = encode_envelope(envelope)
        outbox = self._outbox
        if outbox is None or self._state is not ConnectionState.CONNECTED:
            raise MCPxConnectionError(f"topic {self.topic!r} is not connected ({self._state.value})")
        try:
            await outbox.send(text)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise MCPxConnectionError(f"topic {self.topic!r} lost its connection") from None

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, to: tuple[str, ...] = ()
    ) -> None:
        """Send an MCP notification, broadcast unless `to` names recipients."""
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            payload["params"] = params
        await self.send(self.envelope("mcp", payload, to=to))

    def envelope(
        self, kind: Kind, payload: Any, *, to: tuple[str, ...] = (), correlation_id: str | None = None
    ) -> Envelope:
        return new_envelope(
            sender=self.participant_id, kind=kind, payload=payload, to=to, correlation_id=correlation_id
        )

    # -- internal API used by channels, the participant side and the bridge ---------------------

    def _send_nowait(self, envelope: Envelope) -> bool:
        outbox = self._outbox
        if outbox is None:
            return False
        try:
            outbox.send_nowait(encode_envelope(envelope))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.warning(
                "topic %r: outbox full or closed, dropped an envelope to %s", self.topic, envelope.to
            )
            return False
        return True

    def _set_handler(self, handler: InboundHandler | None) -> None:
        if handler is not None and self._handler is not None:
            raise RuntimeError("this topic client already serves MCP requests")
        self._handler = handler

    def _add_channel(self, peer: str, channel: PeerChannel) -> None:
        if self._state is not ConnectionState.CONNECTED:
            raise MCPxConnectionError(f"topic {self.topic!r} is not connected ({self._state.value})")
        self._channels.setdefault(peer, []).append(channel)

    def _remove_channel(self, peer: str, channel: PeerChannel) -> None:
        channels = self._channels.get(peer, [])
        if channel in channels:
            channels.remove(channel)
        if not channels:
            self._channels.pop(peer, None)

    def _expect_response(
        self, envelope_id: str, peer: str, request_id: int | str, sink: ResponseSink
    ) -> None:
        self._pending[envelope_id] = _Pending(peer, request_id, sink)

    def _forget_response(self, envelope_id: str) -> None:
        self._pending.pop(envelope_id, None)

    # -- inbound ------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        try:
            frame = parse_frame(text)
        except EnvelopeError as exc:
            logger.warning("topic %r: dropping malformed frame: %s", self.topic, exc)
            return
        if isinstance(frame, ErrorFrame):
            self._on_error_frame(frame)
        elif frame.kind == "presence":
            self._on_presence(frame)
        elif frame.kind == "system":
            self._on_system(frame)
        else:
            self._on_mcp(frame)

    def _on_error_frame(self, frame: ErrorFrame) -> None:
        logger.warning("topic %r: gateway error %s: %s", self.topic, frame.error, frame.details)
        self._publish(GatewayErrorEvent(frame.error, None, frame.details))

    def _on_system(self, env: Envelope) -> None:
        if not env.sender.startswith("system"):
            logger.warning("topic %r: dropping a system frame from participant %r", self.topic, env.sender)
            return
        welcome = parse_welcome(env)
        if welcome is not None:
            self._history = welcome.history
            self._apply_roster(welcome.participants)
            return
        error = parse_system_error(env)
        if error is None:
            logger.debug("topic %r: ignoring system frame %r", self.topic, env.payload)
            return
        logger.warning("topic %r: gateway error %s: %s", self.topic, error.error, error.message)
        self._publish(GatewayErrorEvent(error.error, error.message, error.details, env.correlation_id))
        pending = self._pending.pop(env.correlation_id, None) if env.correlation_id else None
        if pending is not None:  # the gateway could not deliver our request: fail it now
            text = f"gateway refused the request: {error.message or error.error}"
            pending.sink(error_response(pending.request_id, CONNECTION_CLOSED, text), env)

    def _on_presence(self, env: Envelope) -> None:
        presence = parse_presence(env)
        if presence is None:
            logger.debug("topic %r: ignoring presence frame %r", self.topic, env.payload)
            return
        info = presence.participant
        if info.id in (self.participant_id, self.requested_id):
            return  # our own join (possibly before the welcome) or a stale leave
        if presence.event == "join":
            rejoined = info.id in self._roster
            self._roster[info.id] = info
            if rejoined:
                self._peer_gone(info.id, "participant reconnected")
            self._publish(PresenceEvent("join", info, rejoined=rejoined))
        elif presence.event == "leave":
            known = self._roster.pop(info.id, None)
            self._peer_gone(info.id, "participant left")
            self._publish(PresenceEvent("leave", known or info))
        elif info.id not in self._roster:  # a heartbeat from someone we missed
            self._roster[info.id] = info
            self._publish(PresenceEvent("join", info))

    def _apply_roster(self, participants: tuple[ParticipantInfo, ...]) -> None:
        new = {p.id: p for p in participants if p.id not in (self.participant_id, self.requested_id)}
        for pid in [pid for pid in self._roster if pid not in new]:
            info = self._roster.pop(pid)
            self._peer_gone(pid, "participant left")
            self._publish(PresenceEvent("leave", info))
        for pid, info in new.items():
            if pid not in self._roster:
                self._roster[pid] = info
                self._publish(PresenceEvent("join", info))

    def _on_mcp(self, env: Envelope) -> None:
        peer = env.sender
        if peer == self.participant_id:
            logger.debug("topic %r: dropping the echo of our own envelope %s", self.topic, env.id)
            return
        if not env.addressed_to(self.participant_id):
            return  # traffic between others
        payload: dict[str, Any] = env.payload
        kind = classify(payload)
        if kind == "response":
            self._on_response(peer, payload, env)
        elif kind == "request":
            self._on_request(peer, payload, env)
        elif kind == "notification":
            self._on_notification(peer, payload, env)
        else:
            logger.warning("topic %r: dropping a non-JSON-RPC mcp payload from %r", self.topic, peer)

    def _on_response(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        pending = self._pending.get(env.correlation_id) if env.correlation_id else None
        if pending is None or pending.peer != peer or not same_id(pending.request_id, payload.get("id")):
            logger.warning(
                "topic %r: dropping an unmatched response from %r (correlation_id=%r, id=%r)",
                self.topic,
                peer,
                env.correlation_id,
                payload.get("id"),
            )
            return
        del self._pending[env.correlation_id]  # type: ignore[arg-type]
        pending.sink(payload, env)

    def _on_request(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        if env.to != (self.participant_id,):
            logger.warning("topic %r: ignoring a request from %r not addressed to us alone", self.topic, peer)
            return
        method = payload["method"]
        channels = self._channels.get(peer)
        if method in CLIENT_BOUND_REQUESTS and channels:
            channels[-1].deliver(payload, env)
        elif self._handler is not None:
            self._handler.on_request(peer, payload, env)
        elif method == "ping":
            self._reply(peer, env, {"jsonrpc": "2.0", "id": payload["id"], "result": {}})
        else:
            reply = error_response(
                payload["id"], METHOD_NOT_FOUND, f"{self.participant_id} serves no {method}"
            )
            self._reply(peer, env, reply)

    def _on_notification(self, peer: str, payload: dict[str, Any], env: Envelope) -> None:
        method = payload["method"]
        if method in SERVER_BOUND_NOTIFICATIONS and self._handler is not None:
            self._handler.on_notification(peer, payload, env)
            if method != "notifications/cancelled":
                return
        for channel in self._channels.get(peer, ()):
            channel.deliver(payload, env)

    def _reply(self, peer: str, request: Envelope, payload: dict[str, Any]) -> None:
        self._send_nowait(self.envelope("mcp", payload, to=(peer,), correlation_id=request.id))

    # -- state --------------------------------------------------------------------------------

    def _peer_gone(self, peer: str, reason: str) -> None:
        for channel in list(self._channels.pop(peer, ())):
            channel.close_inbound(reason)
        for env_id in [k for k, p in self._pending.items() if p.peer == peer]:
            pending = self._pending.pop(env_id)
            logger.debug("topic %r: %s; dropped pending request %r", self.topic, reason, pending.request_id)
        if self._handler is not None:
            self._handler.on_peer_gone(peer)

    def _end_sessions(self, reason: str) -> None:
        for channels in list(self._channels.values()):
            for channel in list(channels):
                channel.close_inbound(reason)
        self._channels.clear()
        self._pending.clear()
        if self._handler is not None:
            self._handler.on_connection_lost()

    def _set_state(self, state: ConnectionState, reason: str | None = None) -> None:
        if state is self._state:
            return
        self._state = state
        if state is not ConnectionState.CONNECTING:
            self._publish(ConnectionEvent(state, reason))

    def _publish(self, event: TopicEvent) -> None:
        for send in list(self._subscribers):
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning("topic %r: a subscriber is not reading; dropped %r", self.topic, event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._subscribers.discard(send)
