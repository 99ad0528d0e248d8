"""Opening one session to a peer, whatever the spec, and noticing when its transport ends."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio
import httpx2
import mcp
from mcp.client import Transport
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from .._link import note_refused, note_written
from .._session import ToolSession
from ._specs import HttpPeer, InProcessPeer, ParticipantPeer, PeerSpec, SessionPeer, StdioPeer

__all__ = ["open_session"]

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The `mcp` SDK's own defaults: a response stream may stay quiet for minutes."""


@asynccontextmanager
async def open_session(
    spec: PeerSpec, *, message_handler: MessageHandlerFnT, closed: anyio.Event
) -> AsyncIterator[ToolSession]:
    """Connect to `spec` and complete the handshake; yield the session, close it on exit.

    `closed` is set as soon as the transport's stream of messages from the peer ends (a stdio
    server exited, a stream broke), even when no request is waiting for an answer. Stdio, HTTP
    and topic transports report each message they take to `note_written`.
    A `SessionPeer`'s session is yielded as it is and left open.
    """
    if isinstance(spec, SessionPeer):
        yield spec.session
        return
    target: Any
    if isinstance(spec, InProcessPeer):
        target = spec.server
    elif isinstance(spec, StdioPeer):
        params = mcp.StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) if spec.env is not None else None,
            cwd=os.fspath(spec.cwd) if spec.cwd is not None else None,
        )
        target = _watched(mcp.stdio_client(params), closed)
    elif isinstance(spec, ParticipantPeer):
        # The topic client closes the session's stream when the participant leaves or rejoins,
        # or when the topic connection is lost.
        target = _watched(spec.topic.participant_transport(spec.participant), closed)
    else:
        target = _watched(_http_transport(spec), closed)
    async with mcp.Client(target, mode=spec.mode, message_handler=message_handler) as client:
        yield client


@asynccontextmanager
async def _http_transport(spec: HttpPeer) -> AsyncIterator[Any]:
    headers = dict(spec.headers) if spec.headers else None
    # The SDK's own client settings, with a transport that says when a server was not reached.
    async with (
        httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT, transport=_NotingTransport()) as http,
        streamable_http_client(spec.url, http_client=http) as streams,
    ):
        yield streams


class _NotingTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport, reporting a request that could not connect to `note_refused`."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.ConnectError:
            note_refused()  # no byte of the request left this process
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def _watched(transport: AbstractAsyncContextManager[Any], closed: anyio.Event) -> Transport:
    @asynccontextmanager
    async def watch() -> AsyncIterator[Any]:
        async with transport as (read, write):
            yield _WatchedReadStream(read, closed), _NotedWriteStream(write)

    return watch()


class _NotedWriteStream:
    """A transport's write stream that reports each message it took (see `note_written`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(item)
        note_written(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _WatchedReadStream:
    """A transport's read stream that sets `closed` when the peer's side of it ends."""

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

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
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
