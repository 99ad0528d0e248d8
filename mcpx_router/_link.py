"""PeerLink: the session the adapter holds for a Router peer, forwarding to whichever connection is live."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp
import mcp_types as mt
from mcp.shared.dispatcher import ProgressFnT

from ._errors import PeerUnavailableError
from ._session import ToolSession

__all__ = ["Connection", "PeerLink", "looks_like_connection_failure"]

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

    def lose(self, error: BaseException | None) -> None:
        if not self.closed.is_set():
            self.error = error
            self.closed.set()


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


class PeerLink:
    """Stands for a peer's session in the adapter across reconnects.

    Calls go to the live connection; a call that fails because the connection went away is
    reported as PeerUnavailableError, and the failure makes the Router check the connection.
    Like `mcp.Client`, it bounds a call by `read_timeout_seconds`, whatever the session, and
    raises `MCPError(REQUEST_TIMEOUT)` when the time is up.
    """

    def __init__(self, peer: str, on_lost: Callable[[Connection], object] | None = None) -> None:
        self.peer = peer
        self._on_lost = on_lost
        self.state: State = "connecting"
        self.current = Connection()

    def begin(self) -> Connection:
        """Start a new connection attempt; requests fail fast until it is attached."""
        self.current = Connection()
        self.state = "connecting"
        return self.current

    def attach(self, session: ToolSession) -> None:
        self.current.session = session
        self.state = "connected"

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
        session = self._session(connection, f"cannot run {name!r}")
        try:
            if isinstance(session, mcp.Client | mcp.ClientSession):
                return await session.call_tool(name, arguments, read_timeout_seconds, progress_callback)
            return await _bounded_call(session, name, arguments, read_timeout_seconds, progress_callback)
        except Exception as exc:
            if not looks_like_connection_failure(exc):
                raise
            connection.suspect.set()
            if connection.closed.is_set() and self._on_lost is not None:
                self._on_lost(connection)  # before the answer goes back: the tools are withdrawn
            if self.state == "left":
                raise PeerUnavailableError(
                    f"peer {self.peer!r} left while the call ran; it may or may not have taken effect",
                    peer=self.peer,
                ) from exc
            # Unconfirmed, it may be the peer's own error that borrows the "connection closed" code.
            what = "was lost" if connection.closed.is_set() else "failed"
            raise PeerUnavailableError(
                f"the connection to peer {self.peer!r} {what} ({exc}); the call may or may not have "
                "taken effect",
                peer=self.peer,
            ) from exc

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

    def _session(self, connection: Connection, what: str) -> ToolSession:
        session = connection.session
        if session is not None and not connection.closed.is_set():
            return session
        if self.state == "left":
            raise PeerUnavailableError(f"peer {self.peer!r} has left; {what}", peer=self.peer)
        raise PeerUnavailableError(
            f"peer {self.peer!r} is not connected (its connection was lost and is being restored); {what}",
            peer=self.peer,
        )


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


def _takes_progress(session: Any) -> bool:
    try:
        parameters = inspect.signature(session.call_tool).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "progress_callback" or p.kind is p.VAR_KEYWORD for p in parameters)
