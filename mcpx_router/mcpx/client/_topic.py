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

import logging
import ssl
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from ..._backoff import Reconnect
from .._envelope import (
    Envelope,
    ErrorFrame,
    Kind,
    ParticipantInfo,
    new_envelope,
    parse_frame,
    parse_system_error,
    parse_welcome,
)
from .._errors import EnvelopeError, MCPxConnectionError, WebSocketClosed
from .._keepalive import DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, keepalive_settings, watch
from .._rpc import INTERNAL_ERROR
from ._auth import TokenHolder, TokenProvider, websocket_url
from ._channel import ParticipantTransport
from ._gateways import GatewayList
from ._pace import DEFAULT_SEND_RATE
from ._ratelimit import rate_limit_error
from ._roster import Roster
from ._routes import PeerChannel, Routes
from ._sendq import SendBudget
from ._topic_events import ConnectionEvent, ConnectionState, GatewayErrorEvent, PresenceEvent, TopicEvent

if TYPE_CHECKING:
    from .._ws import WebSocket

__all__ = [
    "ConnectionEvent",
    "ConnectionState",
    "GatewayErrorEvent",
    "PresenceEvent",
    "TopicClient",
    "TopicEvent",
]

logger = logging.getLogger("mcpx_router.mcpx")

_OUTBOX_SIZE: Final = 1024
DEFAULT_SEND_TIMEOUT: Final = 60.0
"""As long as a Router's calls may take by default."""
_CLOSE_GOING_AWAY: Final = 1001
_CLOSE_REPLACED: Final = 4000
"""The gateway's close code for a connection replaced by a newer one under the same id."""


class TopicClient:
    """One participant's connection to a topic (see the module docstring for an example).

    Args:
        gateway_url: The gateway's base URL (http(s):// or ws(s)://), or a list of gateways
            serving the same topics (NATS mode): the first that answers is used, and a lost
            connection moves to the next.
        topic: The topic to join.
        participant_id: The id to join as (the gateway may assign another; see `participant_id`).
        token_provider: `async () -> str`, called to connect and again whenever the gateway
            refuses the token we hold (HTTP 401/403 or close code 1008: expired, or forgotten by
            a restarted gateway); by default a development token is asked of the gateway.
        reconnect: When the connection is lost, connect again after these delays (the welcome
            then reconciles the roster: `leave` for those gone, `join` for newcomers). None: a
            lost connection stays lost. Entering the client still fails if the first attempt does.
        send_rate: At most this many frames a second go out (None: no limit); frames wait in
            turn rather than be dropped by the gateway's per-participant rate limit.
        send_timeout: Seconds a request may wait for its turn (None: any); one that cannot go
            out in time is answered at once with an error that says so.
        ping_interval, ping_timeout: A ping every `ping_interval` s (None: none); nothing heard
            within `ping_timeout` s of one and the connection is lost (see `reconnect`).
        presence: How presence should come: `batched` (a frame naming many joins and leaves,
            from gateways that offer it; others send a frame each, read as well), `each` (one
            frame per join and leave, as the draft says) or `none` (no presence at all; our
            gateway's welcome then lists no one, so `participants` stays empty: for a participant
            that only answers, joining a topic of any size costs O(1) bytes).
    """

    def __init__(
        self,
        gateway_url: str | Sequence[str],
        topic: str,
        participant_id: str,
        *,
        token_provider: TokenProvider | None = None,
        welcome_timeout: float = 10.0,
        connect_timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        channel_buffer: int = 256,
        reconnect: Reconnect | None = None,
        send_rate: float | None = DEFAULT_SEND_RATE,
        send_timeout: float | None = DEFAULT_SEND_TIMEOUT,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
        presence: Literal["batched", "each", "none"] = "batched",
    ) -> None:
        if not topic or not participant_id:
            raise ValueError("topic and participant_id must be non-empty")
        if presence not in ("batched", "each", "none"):
            raise ValueError(f"presence must be 'batched', 'each' or 'none', not {presence!r}")
        self._presence = None if presence == "each" else presence
        self._gateways = GatewayList(gateway_url)
        self.topic = topic
        self.requested_id = participant_id
        self.participant_id = participant_id
        self.channel_buffer = channel_buffer
        self._tokens = TokenHolder(token_provider or self._gateways.dev_tokens(participant_id, topic))
        self._welcome_timeout = welcome_timeout
        self._connect_timeout = connect_timeout
        self._ssl_context = ssl_context
        self._reconnect = reconnect
        self._budget = SendBudget(send_rate, send_timeout, self._fail_unsent)
        self._keepalive = keepalive_settings(ping_interval, ping_timeout)
        self._close_code: int | None = None
        self._state = ConnectionState.CLOSED
        self._routes = Routes(self)
        self._roster = Roster(
            topic, self._routes, lambda pid: pid in (self.participant_id, self.requested_id)
        )
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
            self._roster.close()

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self._connect_and_serve(task_status)  # the first attempt's failure is the caller's
        if self._reconnect is None:
            return
        delays = self._reconnect.delays()
        failures = 0
        while not self._closing:
            if self._close_code == _CLOSE_REPLACED:
                # Someone else connected under our id; coming back would push them out in turn.
                self._set_state(ConnectionState.CLOSED, "replaced by another connection under our id")
                return
            delay = next(delays, None)
            if delay is None:
                reason = f"gave up reconnecting to topic {self.topic!r} after {failures} failed attempt(s)"
                self._set_state(ConnectionState.CLOSED, reason)
                return
            await anyio.sleep(delay)
            try:
                await self._connect_and_serve(anyio.TASK_STATUS_IGNORED)
            except Exception as exc:
                failures += 1
                logger.info("topic %r: reconnecting failed (attempt %d): %s", self.topic, failures, exc)
                continue
            delays, failures = self._reconnect.delays(), 0  # it was connected: start the delays over

    async def _connect_and_serve(self, task_status: TaskStatus[None]) -> None:
        """Connect to a gateway with the token we hold, or a fresh one when it is refused."""
        self._set_state(ConnectionState.CONNECTING)
        self._close_code = None

        async def attempt(gateway: str) -> None:
            await self._tokens.connect(lambda token: self._serve_with(gateway, token, task_status))

        await self._gateways.connect(attempt)

    async def _serve_with(self, gateway: str, token: str, task_status: TaskStatus[None]) -> None:
        from .._ws import connect_websocket  # wsproto loads with the first connection, not on import

        url = websocket_url(gateway, self.topic, presence=self._presence)
        reason = "connection closed"
        async with connect_websocket(
            url,
            headers=[("Authorization", f"Bearer {token}")],
            ssl_context=self._ssl_context,
            connect_timeout=self._connect_timeout,
        ) as ws:
            early = await self._await_welcome(ws)
            self._tokens.accepted(token)  # kept for reconnecting
            outbox_recv = self._budget.open(_OUTBOX_SIZE)
            self._set_state(ConnectionState.CONNECTED)
            task_status.started()
            try:
                for text in early:
                    self._on_text(text)
                async with anyio.create_task_group() as conn_tg:
                    conn_tg.start_soon(self._budget.run, ws, outbox_recv, conn_tg.cancel_scope)
                    if self._keepalive is not None:
                        conn_tg.start_soon(watch, ws, self._keepalive, conn_tg.cancel_scope)
                    try:
                        while True:
                            self._on_text(await ws.receive_text())
                    except WebSocketClosed as exc:
                        reason = str(exc)
                    conn_tg.cancel_scope.cancel()
            finally:
                self._budget.close()
                if self._closing:
                    self._routes.end_all("topic client closed")
                else:
                    if ws.closed is not None:
                        reason, self._close_code = str(ws.closed), ws.closed.code
                    if self._close_code == _CLOSE_GOING_AWAY:  # a restarted gateway may not know our token
                        self._tokens.token = None
                    self._gateways.lost()  # the next attempt starts with the next gateway
                    self._set_state(ConnectionState.LOST, reason)
                    self._routes.end_all(f"connection lost: {reason}")

    async def _await_welcome(self, ws: WebSocket) -> list[str]:
        """Read until the welcome and take it; return the frames that came before it."""
        welcome, early = await self._roster.await_welcome(ws, self._welcome_timeout, self._on_error_frame)
        self.participant_id = welcome.participant_id or self.requested_id
        self._roster.welcome(welcome)
        return early

    # -- public API ---------------------------------------------------------------------------

    @property
    def gateway_url(self) -> str:
        """The gateway we are connected (or connecting) to."""
        return self._gateways.current

    @property
    def gateway_urls(self) -> tuple[str, ...]:
        """Every gateway we may use."""
        return self._gateways.urls

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def participants(self) -> Mapping[str, ParticipantInfo]:
        """The other participants currently present (never ourselves)."""
        return self._roster.present

    @property
    def history(self) -> tuple[Envelope, ...]:
        """The recent broadcast history the gateway sent with its welcome."""
        return self._roster.history

    def subscribe(
        self, *, buffer: int = 1000
    ) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[TopicEvent]]:
        """A stream of topic events: first the current state and a `join` per present participant,
        then live presence, connection-state changes and gateway errors. Ends when the client closes."""
        closed = self._state is ConnectionState.CLOSED and self._closing
        return self._roster.subscribe(self._state, closed=closed, buffer=buffer)

    def participant_transport(self, participant_id: str) -> ParticipantTransport:
        """An MCP `Transport` to one participant; use it with `mcp.Client`."""
        return ParticipantTransport(self, participant_id)

    async def send(self, envelope: Envelope) -> None:
        """Send an envelope (built with `new_envelope`). Raises `MCPxConnectionError` when not connected."""
        if self._state is not ConnectionState.CONNECTED:
            raise MCPxConnectionError(f"topic {self.topic!r} is not connected ({self._state.value})")
        await self._budget.put(envelope, self.topic)

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
        if not self._budget.put_nowait(envelope):
            logger.warning(
                "topic %r: outbox full or closed, dropped an envelope to %s", self.topic, envelope.to
            )
            return False
        return True

    def _fail_unsent(self, env_id: str, message: str) -> None:
        env = self.envelope("system", {"event": "error"}, correlation_id=env_id)
        self._routes.fail_request(env_id, message, env, INTERNAL_ERROR)

    def _add_channel(self, peer: str, channel: PeerChannel) -> None:
        if self._state is not ConnectionState.CONNECTED:
            raise MCPxConnectionError(f"topic {self.topic!r} is not connected ({self._state.value})")
        self._routes.add_channel(peer, channel)

    # -- inbound ------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        try:
            frame = parse_frame(text)
        except EnvelopeError as exc:
            logger.warning("topic %r: dropping malformed frame: %s", self.topic, exc)
            return
        if isinstance(frame, ErrorFrame):
            self._on_error_frame(frame)
        elif frame.kind != "mcp" and not self._roster.admit(frame):
            return  # a participant claiming to speak for the topic
        elif frame.kind == "presence":
            self._roster.on_presence(frame)
        elif frame.kind == "system":
            self._on_system(frame)
        else:
            self._routes.on_mcp(frame)

    def _on_error_frame(self, frame: ErrorFrame) -> None:
        info = rate_limit_error(frame.raw)
        if info is not None:
            self._budget.rate_limited(info)
        else:
            logger.warning("topic %r: gateway error %s: %s", self.topic, frame.error, frame.details)
        self._roster.publish(GatewayErrorEvent(frame.error, None, frame.details))

    def _on_system(self, env: Envelope) -> None:
        welcome = parse_welcome(env)
        if welcome is not None:
            self._roster.welcome(welcome)
            return
        error = parse_system_error(env)
        if error is None:
            logger.debug("topic %r: ignoring system frame %r", self.topic, env.payload)
            return
        self._roster.publish(GatewayErrorEvent(error.error, error.message, error.details, env.correlation_id))
        info = rate_limit_error(env.payload, env.correlation_id)
        if info is not None and self._budget.rate_limited(info):
            return  # it goes out again
        if info is None:
            logger.warning("topic %r: gateway error %s: %s", self.topic, error.error, error.message)
        text = f"gateway refused the request: {error.message or error.error}"
        self._routes.fail_request(env.correlation_id, text, env)

    def _set_state(self, state: ConnectionState, reason: str | None = None) -> None:
        if state is self._state:
            return
        self._state = state
        if state is not ConnectionState.CONNECTING:
            self._roster.publish(ConnectionEvent(state, reason))
