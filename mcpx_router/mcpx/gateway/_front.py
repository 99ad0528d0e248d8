"""The gateway's front door: one TCP listener serving WebSocket upgrades itself and HTTP via ASGI.

Every connection's request head is read first. `GET <ws_path>` upgrades go to wsproto and
become a `WebSocketPeer` (frames encoded once, written in batches: see `_wspeer.py`), handed to
`on_websocket`; every other request is served by the ASGI app over h11, one request at a time,
keep-alive. Sockets are non-blocking and waited on with anyio, so it runs on asyncio and trio.
The server pings every WebSocket every keepalive interval (`_PING_SLICE` at a time) and drops one
it has heard nothing from (not even a pong) for the interval and the timeout.

Admission is paced so that a storm of connections (a restart: thousands of clients reconnecting
at once) does not hold the event loop: one pass of the loop accepts at most `_ACCEPT_BURST`
connections, and at most `_ADMITTING` WebSockets are between their complete request head and
their first read (the handshake, and the owner's admission: a welcome that can carry the whole
roster) at a time, the others waiting their turn in order. Each admission runs to its end in one
pass, so a pass does at most `_ADMITTING` of them, and the frames of the participants already
in (a call, its answer) are read and handed on between passes instead of after the whole storm.
A client that is slow to send its head holds no turn.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote

import anyio
import anyio.abc
import h11
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, Request
from wsproto.utilities import RemoteProtocolError

from .._keepalive import Keepalive
from ._wspeer import CLOSE_GRACE, Flusher, WebSocketPeer

__all__ = ["WebSocketHandler", "serve_front"]

logger = logging.getLogger("mcpx_router.mcpx.gateway")

WebSocketHandler = Callable[[WebSocketPeer, str, list[tuple[bytes, bytes]]], Awaitable[None]]
"""Serves one accepted WebSocket: the peer, the request target (path and query), its headers."""

_READ_CHUNK = 65536
_MAX_HEAD = 64 * 1024
_HEAD_TIMEOUT = 30.0
"""Seconds a new connection has to send its request head (and an idle keep-alive one its next)."""
_ACCEPT_BURST = 64
"""Connections accepted in one pass of the event loop; the rest wait in the listen backlog."""
_ADMITTING = 16
"""WebSockets admitted at a time (handshake to first read); the others wait their turn, in order."""
_PING_SLICE = 256
"""Peers pinged at once; the next ones up to 50 ms later (all of them within half an interval)."""


async def _recv(sock: socket.socket) -> bytes:
    """What the socket has (b"" at its end or on an error), waiting for it."""
    while True:
        await anyio.wait_readable(sock)
        try:
            return sock.recv(_READ_CHUNK)
        except BlockingIOError:
            continue
        except OSError:
            return b""


async def _sendall(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            sent = sock.send(view)
        except BlockingIOError:
            sent = 0
        view = view[sent:]
        if view:
            await anyio.wait_writable(sock)


async def _read_head(sock: socket.socket) -> bytes | None:
    """The bytes up to the end of the first request head (and any after it); None if none came."""
    data = b""
    with anyio.move_on_after(_HEAD_TIMEOUT):
        while b"\r\n\r\n" not in data and len(data) <= _MAX_HEAD:
            chunk = await _recv(sock)
            if not chunk:
                return None
            data += chunk
        return data
    return None


def _is_upgrade(head: bytes, ws_path: str) -> bool:
    """Whether the head asks for a WebSocket at `ws_path` (wsproto checks the rest of it); other
    requests, a plain `GET` of the path included, go to the ASGI app."""
    lines = head.partition(b"\r\n\r\n")[0].split(b"\r\n")
    method, _, rest = lines[0].partition(b" ")
    if method != b"GET" or rest.partition(b" ")[0].partition(b"?")[0] != ws_path.encode():
        return False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"upgrade" and value.strip().lower() == b"websocket":
            return True
    return False


class _Front:
    def __init__(
        self,
        app: Any,
        on_websocket: WebSocketHandler,
        *,
        ws_path: str,
        send_queue: int,
        max_message_bytes: int,
        keepalive: Keepalive | None,
    ) -> None:
        self.app = app
        self.on_websocket = on_websocket
        self.ws_path = ws_path
        self.send_queue = send_queue
        self.max_message_bytes = max_message_bytes
        self.keepalive = keepalive
        self.flusher = Flusher()
        self.peers: set[WebSocketPeer] = set()
        self.no_peers = anyio.Event()
        self.admitting = anyio.Semaphore(_ADMITTING)

    async def accept(self, listener: socket.socket, tg: anyio.abc.TaskGroup) -> None:
        while True:
            await anyio.wait_readable(listener)
            for _ in range(_ACCEPT_BURST):  # then a pass of the loop for what the others have to do
                try:
                    sock, _ = listener.accept()
                except BlockingIOError:
                    break
                except OSError as exc:  # out of file descriptors, most likely: let some close
                    logger.warning("cannot accept a connection: %s", exc)
                    await anyio.sleep(0.1)
                    break
                sock.setblocking(False)
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                tg.start_soon(self.connection, sock)

    async def ping(self, keepalive: Keepalive) -> None:
        """Every interval, ping every peer (or drop it, silent too long): `_PING_SLICE` at a time,
        a moment apart, so that the pongs of ten thousand do not all come back in one pass."""
        interval = keepalive.interval
        patience = interval + keepalive.timeout
        due = anyio.current_time() + interval
        while True:
            await anyio.sleep(max(0.0, due - anyio.current_time()))
            due = max(due + interval, anyio.current_time())  # each peer pinged an interval apart
            peers = list(self.peers)
            pause = min(0.05, interval / 2 / max(1, len(peers) // _PING_SLICE))
            for start in range(0, len(peers), _PING_SLICE):
                if start:
                    await anyio.sleep(pause)
                now = anyio.current_time()
                for peer in peers[start : start + _PING_SLICE]:
                    if now - peer.last_heard > patience:
                        logger.info("dropping a WebSocket silent for %.0f s (pings unanswered)", patience)
                        peer.abort()
                    else:
                        peer.ping()

    async def connection(self, sock: socket.socket) -> None:
        try:
            head = await _read_head(sock)
            if head is None:
                return
            if _is_upgrade(head, self.ws_path):
                await self.websocket(sock, head)
            else:
                await _serve_http(sock, head, self.app, self.max_message_bytes)
        except OSError:
            pass  # the client went away
        except Exception:  # one connection's failure is logged, and ends only that connection
            logger.exception("a connection failed")
        finally:
            sock.close()

    async def websocket(self, sock: socket.socket, head: bytes) -> None:
        await self.admitting.acquire()
        holding = True

        def admitted() -> None:
            nonlocal holding
            if holding:
                holding = False
                self.admitting.release()

        try:
            await self._upgrade(sock, head, admitted)
        finally:
            admitted()

    async def _upgrade(self, sock: socket.socket, head: bytes, admitted: Callable[[], None]) -> None:
        """The handshake, then the owner's: `admitted` when the peer starts reading."""
        ws = WSConnection(ConnectionType.SERVER)
        try:
            ws.receive_data(head)
            request = next(iter(ws.events()), None)
        except RemoteProtocolError as exc:
            hint = exc.event_hint or RejectConnection(status_code=400)
            await _sendall(sock, ws.send(hint))
            return
        if not isinstance(request, Request):
            await _sendall(sock, ws.send(RejectConnection(status_code=400)))
            return
        await _sendall(sock, ws.send(AcceptConnection()))
        peer = WebSocketPeer(
            sock,
            ws,
            self.flusher,
            limit=self.send_queue,
            max_message=self.max_message_bytes,
            on_reading=admitted,
        )
        self.peers.add(peer)
        try:
            await self.on_websocket(peer, request.target, list(request.extra_headers))
        finally:
            self.peers.discard(peer)
            if not self.peers:
                self.no_peers.set()


@asynccontextmanager
async def serve_front(
    listener: socket.socket,
    app: Any,
    on_websocket: WebSocketHandler,
    *,
    ws_path: str,
    send_queue: int,
    max_message_bytes: int,
    keepalive: Keepalive | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> AsyncIterator[None]:
    """Serve `listener` until the block ends; then `on_shutdown` (which should close every
    WebSocket), a grace period for the WebSockets to close, and every connection dropped."""
    front = _Front(
        app,
        on_websocket,
        ws_path=ws_path,
        send_queue=send_queue,
        max_message_bytes=max_message_bytes,
        keepalive=keepalive,
    )
    async with anyio.create_task_group() as tg:
        accepting = anyio.CancelScope()

        async def accept() -> None:
            with accepting:
                await front.accept(listener, tg)

        tg.start_soon(accept)
        tg.start_soon(front.flusher.run)
        if keepalive is not None:
            tg.start_soon(front.ping, keepalive)
        try:
            yield
        finally:
            accepting.cancel()
            if on_shutdown is not None:
                on_shutdown()
            with anyio.CancelScope(shield=True), anyio.move_on_after(2 * CLOSE_GRACE + 1):
                if front.peers:
                    front.no_peers = anyio.Event()
                    await front.no_peers.wait()
            tg.cancel_scope.cancel()


# -- HTTP: h11 in, ASGI out ---------------------------------------------------------------------


async def _next_event(conn: h11.Connection, sock: socket.socket) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        with anyio.move_on_after(_HEAD_TIMEOUT):
            data = await _recv(sock)
            conn.receive_data(data)
            continue
        return h11.ConnectionClosed()


async def _serve_http(sock: socket.socket, head: bytes, app: Any, max_body: int) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
    conn.receive_data(head)
    try:
        while True:
            event = await _next_event(conn, sock)
            if not isinstance(event, h11.Request):
                return
            body = b""
            while not isinstance(part := await _next_event(conn, sock), h11.EndOfMessage):
                if not isinstance(part, h11.Data):
                    return
                body += part.data
                if len(body) > max_body:
                    await _respond(
                        conn,
                        sock,
                        "POST",
                        413,
                        _plain(b"request body too large"),
                        [b"request body too large"],
                    )
                    return
            method = event.method.decode("ascii")
            status, headers, chunks = await _call(app, _scope(event, sock), body)
            await _respond(conn, sock, method, status, headers, chunks)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
    except h11.RemoteProtocolError as exc:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            error = str(exc).encode()
            await _respond(conn, sock, "GET", exc.error_status_hint, _plain(error), [error])


def _plain(text: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]


def _scope(event: h11.Request, sock: socket.socket) -> dict[str, Any]:
    raw_path, _, query = event.target.partition(b"?")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": event.http_version.decode("ascii"),
        "method": event.method.decode("ascii"),
        "scheme": "http",
        "path": unquote(raw_path.decode("ascii", "replace")),
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": list(event.headers),
        "client": sock.getpeername()[:2] if sock.family != socket.AF_UNIX else None,
        "server": sock.getsockname()[:2] if sock.family != socket.AF_UNIX else None,
        "state": {},
    }


async def _call(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], list[bytes]]:
    """Run the ASGI app on one request; its status, headers and body."""
    received = False
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))

    try:
        await app(scope, receive, send)
    except Exception:
        logger.exception("the ASGI app failed on %s %s", scope["method"], scope["path"])
        if not start:
            return 500, [(b"content-length", b"0")], []
    return int(start.get("status", 500)), list(start.get("headers", [])), chunks


async def _respond(
    conn: h11.Connection,
    sock: socket.socket,
    method: str,
    status: int,
    headers: list[Any],
    chunks: list[bytes],
) -> None:
    try:
        data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
        if method != "HEAD" and status not in (204, 304):
            data += b"".join(conn.send(h11.Data(data=c)) or b"" for c in chunks if c)
        data += conn.send(h11.EndOfMessage()) or b""
    except h11.LocalProtocolError as exc:
        logger.warning("cannot send an HTTP response: %s", exc)
        return
    await _sendall(sock, data)
