"""Opening one session to a peer, whatever the spec, and noticing when its transport ends.

A stdio server that writes something other than JSON-RPC on its stdout before its first
JSON-RPC message, the answer to the handshake (a banner, a log line, partial JSON, bytes that
are not UTF-8), fails to join at once, with the start of what it wrote; waiting would only run
out the connect timeout, as the `mcp` SDK drops the line and goes on waiting for the answer to
`initialize`. After that answer such a line is tolerated: a chatty server keeps working, the
line is counted in the peer's `Strays` (logged once per kind, as a warning), and an answer that
was mangled is answered at once for the request it names (`_answers.Exchange`). Stdio servers
are run by the Router's own transport (`_stdio.py`), which hands the SDK's session what it reads;
what an HTTP or SSE peer sends is checked by the same `Exchange` between the SDK's transport and
its session (`wire/_checked.py`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio
import httpx2
import mcp
from mcp.client import Transport
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from .._errors import PeerUnavailableError
from .._session import ToolSession
from ._callbacks import PeerCallbacks, client_options
from ._link import note_posted, note_refused, note_written
from ._specs import HttpPeer, InProcessPeer, Mode, ParticipantPeer, PeerSpec, SessionPeer, SsePeer, StdioPeer
from .auth._auth_errors import authorization_failure
from .wire._answers import Exchange, Strays
from .wire._checked import checked, read_body, read_events
from .wire._stdio import stdio_transport

__all__ = ["open_session"]

logger = logging.getLogger("mcpx_router.peers")


@asynccontextmanager
async def open_session(
    spec: PeerSpec,
    *,
    peer: str,
    message_handler: MessageHandlerFnT,
    closed: anyio.Event,
    callbacks: PeerCallbacks | None = None,
    strays: Strays | None = None,
) -> AsyncIterator[ToolSession]:
    """Connect to `spec` and complete the handshake; yield the session, close it on exit.

    `closed` is set as soon as the transport's stream of messages from the peer ends (a stdio
    server exited, a stream broke), even when no request is waiting for an answer. Stdio, HTTP,
    SSE and topic transports report each message they take to `note_written`.
    A `SessionPeer`'s session is yielded as it is and left open; the others are given `callbacks`.
    A stdio server's lines that answer nothing are counted in `strays` (the peer's, kept across
    its reconnections).

    Raises:
        PeerUnavailableError: A stdio server wrote something that is not JSON-RPC before its
            answer to the handshake.
    """
    if isinstance(spec, SessionPeer):
        yield spec.session
        return
    target: Any
    handshake = _Handshake()
    if isinstance(spec, InProcessPeer):
        target = spec.server
    elif isinstance(spec, StdioPeer):
        params = mcp.StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) if spec.env is not None else None,
            cwd=os.fspath(spec.cwd) if spec.cwd is not None else None,
        )
        exchange = Exchange(peer, strays if strays is not None else Strays(peer))
        target = _watched(stdio_transport(params, exchange), closed, handshake)
    elif isinstance(spec, ParticipantPeer):
        # The topic client closes the session's stream when the participant leaves or rejoins,
        # or when the topic connection is lost.
        target = _watched(spec.topic.participant_transport(spec.participant), closed)
    else:
        # Streamable HTTP: a call counts as sent once its POST starts, not when the transport
        # takes it (the SDK posts in the caller's context); SSE counts what its transport takes.
        sse = isinstance(spec, SsePeer)
        exchange = Exchange(peer, strays if strays is not None else Strays(peer), "over HTTP")
        seen = _NotingTransport(spec.url, posts=not sse, exchange=exchange)
        web = _sse_transport(spec, seen) if isinstance(spec, SsePeer) else _http_transport(spec, seen)
        target = _watched(checked(web, exchange), closed, noted=sse)
        url, auth = spec.url, spec.auth
        handshake.explain = lambda exc: authorization_failure(peer, url, auth, exc, seen.last_refusal())
    options = client_options(callbacks)
    async with _handshaken(target, spec.mode, handshake, peer, message_handler, options) as client:
        yield client


class _Handshake:
    """Whether the server answered the handshake, and what it wrote instead of JSON-RPC before."""

    def __init__(self) -> None:
        self.done = False
        self.fault: Exception | None = None
        self.explain: Callable[[Exception], PeerUnavailableError | None] = lambda exc: None
        """The error to raise instead when the handshake failed for a known reason (authorization)."""


@asynccontextmanager
async def _handshaken(
    target: Any,
    mode: Mode,
    handshake: _Handshake,
    peer: str,
    message_handler: MessageHandlerFnT,
    options: dict[str, Any],
) -> AsyncIterator[mcp.Client]:
    async with AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(
                mcp.Client(target, mode=mode, message_handler=message_handler, **options)
            )
        except Exception as exc:
            explained = handshake.explain(exc)
            if explained is not None:
                raise explained from exc
            reason = _fault_reason(handshake.fault)
            if reason is None:
                raise
            hint = "; an MCP server must write only JSON-RPC messages on stdout (its logs belong on stderr)"
            raise PeerUnavailableError(f"peer {peer!r}: {reason}{hint}", peer=peer) from exc
        yield client


def _fault_reason(fault: Exception | None) -> str | None:
    """Say what the server wrote instead of JSON-RPC, if that is why the handshake failed."""
    if fault is None:
        return None
    return f"the server wrote something that is not JSON-RPC on stdout: {_excerpt(fault)}"


_EXCERPT = 40
"""Characters of a stray line shown in the error."""


def _excerpt(fault: Exception) -> str:
    """The start of the line the `mcp` SDK could not parse, from its validation error."""
    errors_of = getattr(fault, "errors", None)
    inputs: list[Any] = []
    if callable(errors_of):
        try:
            inputs = [error.get("input") for error in errors_of()]
        except Exception:  # not pydantic's: fall back to its message
            inputs = []
    texts = [value if isinstance(value, str) else _dumps(value) for value in inputs]
    if not texts:
        return str(fault).strip().splitlines()[0] if str(fault).strip() else type(fault).__name__
    text = max(texts, key=len)
    if not text.strip():
        return "an empty line" if not text else f"a blank line {text!r}"
    return repr(text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…")


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@asynccontextmanager
async def _http_transport(spec: HttpPeer, seen: _NotingTransport) -> AsyncIterator[Any]:
    headers = dict(spec.headers) if spec.headers else None
    # The SDK's own client, with a transport around its own that says when a server was not
    # reached (httpx2 takes no transport through the SDK's factory).
    async with create_mcp_http_client(headers=headers, auth=spec.auth) as http:
        http._transport = seen.around(http._transport)
        async with streamable_http_client(spec.url, http_client=http) as streams:
            yield streams


def _sse_transport(spec: SsePeer, seen: _NotingTransport) -> AbstractAsyncContextManager[Any]:
    headers = dict(spec.headers) if spec.headers else None

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The SDK's own client, its transport wrapped as for streamable HTTP."""
        http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        http._transport = seen.around(http._transport)
        return http

    return sse_client(spec.url, headers=headers, auth=spec.auth, httpx_client_factory=client)


class _NotingTransport(httpx2.AsyncBaseTransport):
    """A transport reporting a request that could not connect to `note_refused`; it keeps the
    last refusal of authorization (401, 403) its peer's endpoint answered, for the join error,
    and has the endpoint's JSON answers read by `read_body` (with the peer's `Exchange`)."""

    def __init__(self, url: str, *, posts: bool = False, exchange: Exchange | None = None) -> None:
        self._url = httpx2.URL(url).copy_with(query=None)
        self._posts = posts
        self._exchange = exchange
        self._inner: httpx2.AsyncBaseTransport | None = None
        self._refusal: httpx2.Response | None = None

    def around(self, inner: httpx2.AsyncBaseTransport) -> Self:
        """Wrap the client's own transport; return self to put in its place."""
        self._inner = inner
        return self

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert self._inner is not None, "around() gives the transport its inner one first"
        if self._posts and request.method == "POST":
            if isinstance(self._inner, httpx2.AsyncHTTPTransport):
                # Sent once its first byte may leave: a POST cut short while it was still
                # connecting (its session closed under it) sent nothing.
                request.extensions = {**request.extensions, "trace": _noting(request.extensions.get("trace"))}
            else:
                note_posted()
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.ConnectError:
            note_refused()  # no byte of the request left this process
            raise
        if request.url.copy_with(query=None) == self._url:
            self._refusal = response if response.status_code in (401, 403) else None
            kind = response.headers.get("content-type", "")
            if self._exchange is not None and response.status_code == 200:
                if request.method == "POST" and kind.startswith("application/json"):
                    return await read_body(request, response, self._exchange)
                if kind.startswith("text/event-stream"):
                    return read_events(request, response, self._exchange)
        return response

    def last_refusal(self) -> httpx2.Response | None:
        """The endpoint's last answer if it refused authorization (401, 403), else None."""
        return self._refusal

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


def _noting(inner: Callable[[str, dict[str, Any]], Awaitable[None]] | None) -> Callable[..., Awaitable[None]]:
    """An httpcore `trace` callback that calls `note_posted` as the request's headers start to go."""

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(".send_request_headers.started"):
            note_posted()
        if inner is not None:
            await inner(event, info)

    return trace


def _watched(
    transport: AbstractAsyncContextManager[Any],
    closed: anyio.Event,
    handshake: _Handshake | None = None,
    *,
    noted: bool = True,
) -> Transport:
    """`transport` with `closed` set when the peer's side ends; with `noted`, each message it
    takes reported to `note_written`."""

    @asynccontextmanager
    async def watch() -> AsyncIterator[Any]:
        async with transport as (read, write):
            written = _NotedWriteStream(write, closed) if noted else write
            yield _WatchedReadStream(read, closed, handshake), written

    return watch()


class _Wrapped:
    """A stream that forwards to `_inner`, closing it with itself."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _NotedWriteStream(_Wrapped):
    """A transport's write stream that reports each message it took (see `note_written`), and sets
    `closed` when the transport can take none because it has ended."""

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

    async def send(self, item: SessionMessage) -> None:
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._closed.set()  # the transport has ended: known before the request fails
            raise
        note_written(item)


class _WatchedReadStream(_Wrapped):
    """A transport's read stream that sets `closed` when the peer's side of it ends.

    With a `handshake`, an unparsable line before the first JSON-RPC message ends the stream
    (so that the waiting `initialize` fails at once) and is kept in `handshake.fault`.
    """

    def __init__(self, inner: Any, closed: anyio.Event, handshake: _Handshake | None = None) -> None:
        self._inner = inner
        self._closed = closed
        self._handshake = handshake

    @property
    def last_context(self) -> Any:
        # The dispatcher runs each message in the sender's context when the stream offers one.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._closed.set()
            raise
        if self._handshake is not None:
            if not isinstance(item, Exception):
                self._handshake.done = True  # it speaks JSON-RPC: its answer to the handshake
            elif not self._handshake.done:
                self._handshake.fault = item
                self._closed.set()
                raise anyio.EndOfStream
            else:
                logger.debug("ignoring a line that is not JSON-RPC from a stdio server: %s", _excerpt(item))
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
