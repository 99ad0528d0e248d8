"""PeerLink: the session the adapter holds for a Router peer, forwarding to whichever connection is live."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp
import mcp_types as mt
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._errors import PeerUnavailableError
from .._session import LostByTransport, NativeSession, ToolSession, call_tool, mark_peer_answer
from ..mcpx._rpc import not_delivered

__all__ = [
    "Connection",
    "PeerLink",
    "looks_like_connection_failure",
    "note_posted",
    "note_refused",
    "note_written",
]

State = Literal["connecting", "connected", "lost", "left"]

_SESSION_GONE = ("not found", "terminated", "expired", "unknown", "valid")


@dataclass(eq=False)
class Connection:
    """One connection attempt to a peer; a reconnect makes a new one."""

    closed: anyio.Event = field(default_factory=anyio.Event)
    """Set when the connection is known to be gone (transport ended, probe failed, ...)."""
    suspect: anyio.Event = field(default_factory=anyio.Event)
    """Set when a request failed in a way that may mean the connection is gone."""
    session: ToolSession | None = None
    error: BaseException | None = None
    """Why the connection was declared gone, when known."""
    watched: bool = False
    """Its transport reports the requests it takes (`note_written`): a failed call can say whether
    it was sent."""
    ends_known: bool = False
    """Its transport says when it ends (`closed` is set before any request learns of it): while
    `closed` is not set, a JSON-RPC error is the peer's answer, whatever its code."""
    losses_known: bool = False
    """Its transport says when it ends and marks the "connection closed" (-32000) errors it makes
    up itself (`LostByTransport`): while `closed` is not set, any other -32000 error is the
    peer's answer (its other codes are read as before: a "session not found" may mean a restart)."""

    def lose(self, error: BaseException | None) -> None:
        if not self.closed.is_set():
            self.error = error
            self.closed.set()


def _peers_own(connection: Connection, exc: mcp.MCPError) -> bool:
    """Whether `exc`, a JSON-RPC error over `connection` while it is open, is the peer's own answer."""
    if isinstance(exc.data, LostByTransport):
        return False
    if connection.ends_known:
        return True
    # "Connection closed" is the SDK session's own word for a transport that ended (or for a
    # request sent after it did), which may come before the transport's end is seen.
    return connection.losses_known and exc.code == mt.CONNECTION_CLOSED and exc.message != "Connection closed"


def looks_like_connection_failure(exc: BaseException) -> bool:
    """Whether a request error may mean the connection itself failed (to be confirmed by a probe).

    That is the SDK's "connection closed" code, or a server saying it no longer knows our
    session (a restarted HTTP server: "Session not found", "Session terminated", ...).
    """
    if isinstance(exc, mcp.MCPError):
        if exc.code == mt.CONNECTION_CLOSED:
            return True
        text = exc.message.lower()
        return "session" in text and any(word in text for word in _SESSION_GONE)
    return isinstance(
        exc, anyio.BrokenResourceError | anyio.ClosedResourceError | anyio.EndOfStream | ConnectionError
    )


@dataclass(slots=True)
class _Sending:
    """One call on its way: whether the transport took its `tools/call` request."""

    sent: bool = False
    refused: bool = False
    """The server could not be reached: what the transport took never left this process."""


_SENDING: ContextVar[_Sending | None] = ContextVar("mcpx_router_sending", default=None)


def note_written(message: SessionMessage) -> None:
    """Called by a watched transport with each message it took from the task that sends it.

    The `mcp` SDK writes a request in the caller's own task, so the context of a call made
    through `PeerLink.call_tool` sees that call's record and no other.
    """
    sending = _SENDING.get()
    if sending is not None and getattr(message.message, "method", None) == "tools/call":
        sending.sent = True


def note_posted() -> None:
    """Called by a streamable HTTP transport as it starts a POST, in the caller's context.

    Over HTTP a request the transport took leaves this process only with its POST: a call whose
    session closed before that (a broken listen stream) was not sent. Any POST made for a call
    counts, the call's own being the first.
    """
    sending = _SENDING.get()
    if sending is not None:
        sending.sent = True


def note_refused() -> None:
    """Called by an HTTP transport whose connection for a request could not be made.

    The SDK makes each request's POST in a task that runs in the caller's context.
    """
    sending = _SENDING.get()
    if sending is not None:
        sending.refused = True


class PeerLink(NativeSession):
    """Stands for a peer's session in the adapter across reconnects.

    Calls go to the live connection; a call that fails because the connection went away is
    reported as PeerUnavailableError, and the failure makes the Router check the connection.
    Like `mcp.Client`, it bounds a call by `read_timeout_seconds`, whatever the session, and
    raises `MCPError(REQUEST_TIMEOUT)` when the time is up.
    """

    def __init__(
        self,
        peer: str,
        on_lost: Callable[[Connection], object] | None = None,
        leaving: Callable[[], bool] = lambda: False,
    ) -> None:
        self.peer = peer
        self._on_lost = on_lost
        self._leaving = leaving
        self.state: State = "connecting"
        self.current = Connection()
        self._calls: set[anyio.CancelScope] = set()

    def begin(self) -> Connection:
        """Start a new connection attempt; requests fail fast until it is attached."""
        self.current = Connection()
        self.state = "connecting"
        return self.current

    def attach(
        self,
        session: ToolSession,
        *,
        watched: bool = False,
        ends_known: bool = False,
        losses_known: bool = False,
    ) -> None:
        self.current.session = session
        self.current.watched = watched
        self.current.ends_known = ends_known
        self.current.losses_known = losses_known
        self.state = "connected"

    def cut_calls(self) -> None:
        """End the calls still running on a session we do not watch (the peer is leaving).

        Each is answered that the peer left. Closing a watched transport ends its calls by
        itself; an in-process server runs a call in the caller's own task, where only
        cancelling it ends it (which also tells the server).
        """
        for scope in self._calls:
            scope.cancel()

    @property
    def left(self) -> bool:
        """The peer left or is leaving (its connection is being closed on purpose)."""
        return self.state == "left" or self._leaving()

    def detach(self, state: State) -> None:
        self.current.session = None
        self.state = state

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> mt.CallToolResult:
        connection = self.current
        session = self._session(connection, "the call was not sent")
        sending = _Sending()
        token = _SENDING.set(sending)
        try:
            if connection.watched:
                # Closing its transport (leaving) ends the calls running on it.
                return await _send(session, name, arguments, read_timeout_seconds, progress_callback)
            with anyio.CancelScope() as cut:
                self._calls.add(cut)
                try:
                    return await _send(session, name, arguments, read_timeout_seconds, progress_callback)
                finally:
                    self._calls.discard(cut)
        except Exception as exc:
            failure = self._failure(connection, sending, exc)
            if failure is exc:
                raise
            raise failure from exc
        finally:
            _SENDING.reset(token)
        raise PeerUnavailableError(_left(self.peer), peer=self.peer)  # cut short by `cut_calls`

    def _failure(self, connection: Connection, sending: _Sending, exc: Exception) -> Exception:
        """What a failed call tells its caller: the error itself, or what became of the call."""
        if self.left:
            # Whatever the error, it comes from the connection being closed under the call.
            return PeerUnavailableError(_left(self.peer), peer=self.peer)
        if isinstance(exc, mcp.MCPError) and exc.code == mt.REQUEST_TIMEOUT:
            connection.suspect.set()  # a peer that does not answer may be hung: probe it
            return exc
        if isinstance(exc, mcp.MCPError) and not connection.closed.is_set() and _peers_own(connection, exc):
            # The connection is open: this is the peer's own error, even with the code the SDK
            # uses for "connection closed" (-32000 opens JSON-RPC's range of server errors).
            return mark_peer_answer(exc)
        # An MCPx gateway that refused the call's frame (or an outbox that never sent it) says so.
        refused = not_delivered(exc)
        if not looks_like_connection_failure(exc):
            return _not_sent(self.peer, exc) if refused else exc
        connection.suspect.set()
        if connection.closed.is_set() and self._on_lost is not None:
            self._on_lost(connection)  # before the answer goes back: the tools are withdrawn
        if refused:
            return _not_sent(self.peer, exc)
        # The same words whether or not the loss is confirmed yet: that is a race, and a peer
        # may borrow the "connection closed" code for an error of its own.
        failed = f"the connection to peer {self.peer!r} failed ({_describe(exc)})"
        if not connection.watched:
            message = f"{failed} while the call ran; it may or may not have taken effect"
        elif sending.sent and not sending.refused:
            message = (
                f"the call was sent, but {failed} before it answered; it may or may not have taken effect"
            )
        else:
            message = f"the call was not sent: {failed}; it is safe to retry"
            return PeerUnavailableError(message, peer=self.peer, sent=False)
        return PeerUnavailableError(message, peer=self.peer)

    async def probe(self) -> None:
        """One round trip that proves the peer answers: `ping` where the protocol has it, else a listing."""
        connection = self.current
        session = self._session(connection, "cannot probe it")
        if isinstance(session, mcp.Client) and session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            try:
                await session.session.send_ping()
            except Exception as exc:
                if looks_like_connection_failure(exc):
                    connection.suspect.set()
                raise
        else:
            await self.list_tools()

    async def list_tools(self, *, cursor: str | None = None) -> mt.ListToolsResult:
        connection = self.current
        session = self._session(connection, "cannot list its tools")
        try:
            if isinstance(session, mcp.Client):
                return await session.list_tools(cursor=cursor, cache_mode="refresh")
            if isinstance(session, mcp.ClientSession):
                params = mt.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
                return await session.list_tools(params=params)
            generic: Any = session
            result: mt.ListToolsResult = await generic.list_tools(cursor=cursor)
            return result
        except Exception as exc:
            if looks_like_connection_failure(exc):
                connection.suspect.set()
            raise

    def live(self, what: str) -> ToolSession:
        """The live session; PeerUnavailableError says why there is none (and that it `what`)."""
        return self._session(self.current, what)

    def _session(self, connection: Connection, what: str) -> ToolSession:
        session = connection.session
        if session is not None and not connection.closed.is_set() and not self.left:
            return session
        if self.left:
            raise PeerUnavailableError(f"peer {self.peer!r} has left; {what}", peer=self.peer, sent=False)
        raise PeerUnavailableError(
            f"peer {self.peer!r} is not connected (its connection was lost and is being restored); {what}",
            peer=self.peer,
            sent=False,
        )


async def _send(
    session: ToolSession,
    name: str,
    arguments: dict[str, Any] | None,
    limit: float | None,
    progress_callback: ProgressFnT | None,
) -> mt.CallToolResult:
    if isinstance(session, mcp.Client | mcp.ClientSession):
        return await call_tool(session, name, arguments, limit, progress_callback)
    return await _bounded_call(session, name, arguments, limit, progress_callback)


async def _bounded_call(
    session: Any,
    name: str,
    arguments: dict[str, Any] | None,
    limit: float | None,
    progress_callback: ProgressFnT | None,
) -> mt.CallToolResult:
    """Call a session that is not an `mcp` one, bounded like `mcp.Client` bounds its requests."""
    with anyio.move_on_after(math.inf if limit is None else limit) as scope:
        if progress_callback is None or not _takes_progress(session):
            result: mt.CallToolResult = await session.call_tool(name, arguments)
        else:
            result = await session.call_tool(name, arguments, progress_callback=progress_callback)
        return result
    assert scope.cancelled_caught
    raise mcp.MCPError(mt.REQUEST_TIMEOUT, f"Request 'tools/call' ({name}) timed out")


def _left(peer: str) -> str:
    return f"peer {peer!r} left while the call ran; it may or may not have taken effect"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _takes_progress(session: Any) -> bool:
    try:
        parameters = inspect.signature(session.call_tool).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "progress_callback" or p.kind is p.VAR_KEYWORD for p in parameters)


def _not_sent(peer: str, exc: Exception) -> PeerUnavailableError:
    message = f"the call was not sent: {exc}; it is safe to retry"
    return PeerUnavailableError(message, peer=peer, sent=False)
