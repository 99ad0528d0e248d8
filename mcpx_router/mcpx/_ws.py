"""A small WebSocket client: wsproto (the sans-I/O protocol engine) over anyio streams.

It works unchanged on asyncio and trio, speaks ws:// and wss://, and needs no HTTP client
stack. One task receives (`receive_text`); any task may send (sends are serialised).
"""

from __future__ import annotations

import contextlib
import ssl
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import anyio.abc
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ._errors import MCPxAuthError, MCPxConnectionError, WebSocketClosed

DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024
_READ_CHUNK = 65536
# Writing a control frame to a peer that is already gone: there is nobody left to tell.
_GONE = (LocalProtocolError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


class WebSocket:
    def __init__(self, stream: anyio.abc.ByteStream, conn: WSConnection, max_message: int) -> None:
        self._stream = stream
        self._conn = conn
        self._max_message = max_message
        self._events: deque[Event] = deque()
        self._send_lock = anyio.Lock()
        self._parts: list[str] = []
        self._size = 0
        self._heard = anyio.Event()
        self.closed: WebSocketClosed | None = None

    async def _write(self, data: bytes) -> None:
        if data:
            async with self._send_lock:
                await self._stream.send(data)

    async def send_text(self, text: str) -> None:
        if self.closed is not None:
            raise self.closed
        try:
            await self._write(self._conn.send(TextMessage(data=text)))
        except (LocalProtocolError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise WebSocketClosed(1006, f"send failed: {exc}") from None

    async def receive_text(self) -> str:
        """The next text message. Binary messages are decoded as UTF-8. Raises `WebSocketClosed`."""
        while True:
            while self._events:
                event = self._events.popleft()
                text = await self._handle(event)
                if text is not None:
                    return text
            if self.closed is not None:
                raise self.closed
            try:
                data: bytes | None = await self._stream.receive(_READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                data = None
            if data:
                self._heard.set()
            try:
                self._conn.receive_data(data)
                self._events.extend(self._conn.events())
            except (RemoteProtocolError, LocalProtocolError) as exc:
                await self._fail(1002, f"protocol error: {exc}")

    async def keepalive(self, interval: float, patience: float) -> WebSocketClosed:
        """Ping every `interval` seconds; return once the peer has sent nothing at all (no pong,
        no frame) within `patience` seconds of a ping, with `closed` set to say so.

        A connection whose peer vanished without closing (a dead host, a half-open TCP link)
        otherwise looks alive for ever. Runs alongside `receive_text`, which hears the pongs.
        """
        while self.closed is None:
            await anyio.sleep(interval)
            self._heard = anyio.Event()
            with anyio.move_on_after(patience):
                with contextlib.suppress(*_GONE):
                    await self._write(self._conn.send(Ping(payload=b"mcpx")))
                await self._heard.wait()
            if not self._heard.is_set() and self.closed is None:
                self.closed = WebSocketClosed(1006, f"no answer to a ping within {patience:g} s")
        return self.closed

    async def _handle(self, event: Event) -> str | None:
        if isinstance(event, TextMessage | BytesMessage):
            chunk = (
                event.data if isinstance(event, TextMessage) else bytes(event.data).decode("utf-8", "replace")
            )
            self._size += len(chunk)
            if self._size > self._max_message:
                await self._fail(1009, "message too big")
            self._parts.append(chunk)
            if not event.message_finished:
                return None
            text = "".join(self._parts)
            self._parts.clear()
            self._size = 0
            return text
        if isinstance(event, Ping):
            with contextlib.suppress(*_GONE):
                await self._write(self._conn.send(event.response()))
            return None
        if isinstance(event, CloseConnection):
            if self._conn.state is ConnectionState.REMOTE_CLOSING:
                with contextlib.suppress(*_GONE):
                    await self._write(self._conn.send(event.response()))
            self.closed = WebSocketClosed(event.code, event.reason or "")
            await self._stream.aclose()
            raise self.closed
        return None

    async def _fail(self, code: int, reason: str) -> None:
        self.closed = WebSocketClosed(code, reason)
        await self.aclose(code, reason)
        raise self.closed

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (if still possible) and close the TCP stream. Never raises."""
        with anyio.CancelScope(shield=True):
            if self._conn.state is ConnectionState.OPEN:
                with anyio.move_on_after(2), contextlib.suppress(*_GONE):
                    await self._write(self._conn.send(CloseConnection(code=code, reason=reason)))
            if self.closed is None:
                self.closed = WebSocketClosed(code, reason or "closed locally")
            await self._stream.aclose()


def _target(url: str) -> tuple[str, str, int, bool]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss", "http", "https"):
        raise MCPxConnectionError(f"not a WebSocket URL: {url!r}")
    secure = scheme in ("wss", "https")
    if not parts.hostname:
        raise MCPxConnectionError(f"URL has no host: {url!r}")
    port = parts.port or (443 if secure else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, path, port, secure


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    ssl_context: ssl.SSLContext | None = None,
    connect_timeout: float = 10.0,
    max_message: int = DEFAULT_MAX_MESSAGE,
) -> AsyncIterator[WebSocket]:
    """Open a WebSocket; closes it (close frame, then TCP) when the block ends.

    A refused upgrade raises `MCPxAuthError` for HTTP 401/403 and `MCPxConnectionError` otherwise.
    """
    host, path, port, secure = _target(url)
    try:
        with anyio.fail_after(connect_timeout):
            stream: anyio.abc.ByteStream
            if secure:
                stream = await anyio.connect_tcp(
                    host, port, tls=True, ssl_context=ssl_context, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(host, port)
    except TimeoutError:
        raise MCPxConnectionError(f"connecting to {host}:{port} timed out") from None
    except OSError as exc:
        raise MCPxConnectionError(f"cannot connect to {host}:{port}: {exc}") from None
    try:
        with anyio.fail_after(connect_timeout):
            authority = host if port == (443 if secure else 80) else f"{host}:{port}"
            ws = await _handshake(stream, authority, path, headers, max_message)
    except TimeoutError:
        await stream.aclose()
        raise MCPxConnectionError(f"WebSocket handshake with {url} timed out") from None
    except BaseException:
        await stream.aclose()
        raise
    try:
        yield ws
    finally:
        await ws.aclose()


async def _handshake(
    stream: anyio.abc.ByteStream, host: str, path: str, headers: Sequence[tuple[str, str]], max_message: int
) -> WebSocket:
    conn = WSConnection(ConnectionType.CLIENT)
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    try:
        await stream.send(conn.send(Request(host=host, target=path, extra_headers=extra)))
    except (OSError, anyio.BrokenResourceError) as exc:
        raise MCPxConnectionError(f"sending the upgrade request failed: {exc}") from None
    status: int | None = None
    body = b""
    while True:
        try:
            data = await stream.receive(_READ_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            raise MCPxConnectionError("the server closed the connection during the handshake") from None
        try:
            conn.receive_data(data)
            events = list(conn.events())
        except (RemoteProtocolError, LocalProtocolError) as exc:
            raise MCPxConnectionError(f"bad handshake response: {exc}") from None
        for index, event in enumerate(events):
            if isinstance(event, AcceptConnection):
                ws = WebSocket(stream, conn, max_message)
                ws._events.extend(events[index + 1 :])  # frames that came with the 101 response
                return ws
            if isinstance(event, RejectConnection):
                status = event.status_code
                if not event.has_body:
                    _refused(status, body)
            elif isinstance(event, RejectData):
                body += bytes(event.data)[:4096]
                if event.body_finished:
                    _refused(status or 0, body)


def _refused(status: int, body: bytes) -> None:
    text = body.decode("utf-8", "replace").strip()
    message = f"WebSocket upgrade refused with HTTP {status}{': ' + text if text else ''}"
    if status in (401, 403):
        raise MCPxAuthError(message)
    raise MCPxConnectionError(message)
