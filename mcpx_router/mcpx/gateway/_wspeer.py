"""The server end of one WebSocket, on a non-blocking socket: frames encoded once, written in batches.

wsproto does the handshake (in `_front.py`), parses what the peer sends, answers pings and
closes; outgoing text frames bypass it: a server's frame is a two-to-ten-byte header and the
UTF-8 payload (RFC 6455 §5.2, unmasked, no extension negotiated), so `text_frame` builds it once
and the same bytes go to every recipient of a broadcast.

A frame handed to a peer (`send_frame`) is only appended to its outbox and the peer marked in
the server's `Flusher`; the flusher wakes once for everything queued meanwhile, and writes each
marked peer's outbox with one `send` call, from its own task: no task of the peer's wakes for
it. A pass writes at most `_FLUSH_PASS` peers and lets the event loop run before the next ones,
so a presence batch for ten thousand does not hold the loop; a frame meant for one peer (a call,
its answer) does not wait for the flusher at all: it is written at once with what its peer has
queued before it. Only a peer whose socket is full (a slow reader) gets a task of its own, which
waits until the socket takes more and then writes all that has queued up in one call.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from collections.abc import Callable

import anyio
import anyio.abc
import anyio.lowlevel
from wsproto import WSConnection
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

__all__ = ["CLOSE_GRACE", "Flusher", "WebSocketPeer", "text_frame"]

logger = logging.getLogger("mcpx_router.mcpx.gateway")

CLOSE_GRACE = 2.0
"""Seconds a peer has, once our close frame is written, to answer it before the socket closes."""
CLOSE_PATIENCE = 10.0
"""Seconds a close frame may wait behind a full socket before the connection is dropped."""
_READ_CHUNK = 65536
_PING = b"mcpx"
_FLUSH_PASS = 512
"""Peers the flusher writes before it lets the event loop run (then it writes the next ones)."""


def text_frame(text: str) -> bytes:
    """One unfragmented, unmasked WebSocket text frame (what a server sends)."""
    payload = text.encode("utf-8")
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return struct.pack("!BBH", 0x81, 126, size) + payload
    return struct.pack("!BBQ", 0x81, 127, size) + payload


class Flusher:
    """Writes the outboxes of the peers that have frames waiting, one wake-up for all of them."""

    def __init__(self) -> None:
        self._marked: list[WebSocketPeer] = []
        self._wake = anyio.Event()

    def mark(self, peer: WebSocketPeer) -> None:
        if not self._marked:
            self._wake.set()
        self._marked.append(peer)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            marked, self._marked = self._marked, []
            for start in range(0, len(marked), _FLUSH_PASS):
                if start:
                    await anyio.lowlevel.checkpoint()  # what else is ready runs before the next ones
                for peer in marked[start : start + _FLUSH_PASS]:
                    peer.flush()


class WebSocketPeer:
    """One accepted WebSocket. `send_frame` queues encoded frames; `run` reads until it ends.

    `limit` bounds the frames queued and not yet handed to the socket: `send_frame` refuses
    more (the owner then closes the peer as too slow). `on_reading` is called once `run` starts
    (the front door's admission turn ends there)."""

    def __init__(
        self,
        sock: socket.socket,
        ws: WSConnection,
        flusher: Flusher,
        *,
        limit: int,
        max_message: int,
        on_reading: Callable[[], None] | None = None,
    ) -> None:
        self.sock = sock
        self._ws = ws
        self._flusher = flusher
        self._limit = limit
        self._max_message = max_message
        self._on_reading = on_reading
        self._out: list[bytes] = []
        self._stuck: bytes | memoryview = b""
        """What the socket did not take, written by `_drain` once it can: a view of what was
        sent, never copied as the socket takes it piece by piece (a welcome can be 500 KB)."""
        self._marked = False
        self._draining = False
        self._closing = False
        self._dead = False
        self._close_sent = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None
        self._read_scope = anyio.CancelScope()
        self.last_heard = anyio.current_time()

    @property
    def closing(self) -> bool:
        """Closed or closing: a frame handed to it now is dropped."""
        return self._closing or self._dead

    # -- writing ------------------------------------------------------------------------------

    def send_frame(self, frame: bytes, *, now: bool = False) -> bool:
        """Queue an encoded frame; False (and nothing queued) when `limit` frames are waiting.
        Frames after `close` are dropped.

        `now`: write it at once, after what waits before it in the outbox (unless the socket is
        full), rather than at the flusher's next pass: for a frame meant for this peer alone, a
        call or its answer, which should not wait behind the flusher's pass over every peer of a
        presence batch (a call crosses the gateway twice). Broadcasts wait for the flusher,
        which writes what a peer has queued with one `send`."""
        if self._closing or self._dead:
            return True
        if now and not self._out and not self._draining:
            self._write(frame)
            return True
        if len(self._out) >= self._limit:
            return False
        if now and not self._draining:
            self._out.append(frame)
            self.flush()  # the flusher finds nothing left when it comes to this peer
            return True
        self._push(frame)
        return True

    def ping(self) -> None:
        if not self._closing and not self._dead:
            self._push(self._ws.send(Ping(payload=_PING)))

    def close(self, code: int, reason: str) -> None:
        """Send a close frame after what is queued (1013, too slow: instead of it); the socket
        closes once the peer answers, or `CLOSE_GRACE` after the frame is written."""
        if self._closing or self._dead:
            return
        self._closing = True
        if code == 1013:
            self._out.clear()  # it cannot take them: the close frame goes next
        self._read_scope.deadline = anyio.current_time() + CLOSE_PATIENCE
        try:
            self._push(self._ws.send(CloseConnection(code=code, reason=reason)))
        except LocalProtocolError:  # the peer closed first and has had its answer
            self._sent_all()

    def abort(self) -> None:
        """Drop the connection now: nothing more is written, the socket closes."""
        self._gone()

    def _push(self, data: bytes) -> None:
        self._out.append(data)
        if not self._marked and not self._draining:
            self._marked = True
            self._flusher.mark(self)

    def flush(self) -> None:
        """Write the outbox with one `send` (the flusher calls it, and `send_frame` for a frame
        meant for this peer alone)."""
        self._marked = False
        if self._draining or self._dead or not self._out:
            return
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        self._write(data)

    def _write(self, data: bytes) -> None:
        """`send` what nothing waits before; what the socket does not take, `_drain` writes."""
        sent = self._send(data)
        if sent is None:
            return
        if sent < len(data):
            self._stuck = memoryview(data)[sent:]
            self._draining = True
            if self._tg is not None:
                self._tg.start_soon(self._drain)
        else:
            self._sent_all()

    def _send(self, data: bytes | memoryview) -> int | None:
        """Bytes the socket took of `data` now (0 when it is full); None when the peer is gone."""
        try:
            return self.sock.send(data)
        except BlockingIOError:
            return 0
        except OSError:
            self._gone()
            return None

    async def _drain(self) -> None:
        while self._stuck and not self._dead:
            await anyio.wait_writable(self.sock)
            if self._out:  # queued meanwhile: one buffer again
                self._stuck = b"".join([self._stuck, *self._out])
                self._out.clear()
            sent = self._send(self._stuck)
            if sent is None:
                return
            self._stuck = memoryview(self._stuck)[sent:]
        self._draining = False
        self._sent_all()

    def _sent_all(self) -> None:
        if self._closing and not self._out and not self._stuck and not self._close_sent.is_set():
            self._close_sent.set()
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)
            self._read_scope.deadline = min(self._read_scope.deadline, anyio.current_time() + CLOSE_GRACE)

    def _gone(self) -> None:
        self._dead = True
        self._out.clear()
        self._stuck = b""
        self._close_sent.set()
        self._read_scope.cancel()

    # -- reading ------------------------------------------------------------------------------

    async def run(self, on_text: Callable[[str], None], on_bad: Callable[[str, str], None]) -> None:
        """Read until the connection ends: `on_text` for each text message (binary ones decoded
        as UTF-8), `on_bad(error, message)` for one refused (too large, not UTF-8). Then close
        (code 1000 unless `close` was called) and wait for the close frame to go out."""
        if self._on_reading is not None:
            self._on_reading()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if self._draining:  # the socket filled before we ran
                    tg.start_soon(self._drain)
                with self._read_scope:
                    await self._read(on_text, on_bad)
                self.close(1000, "")
                with anyio.move_on_after(CLOSE_GRACE):
                    await self._close_sent.wait()
                tg.cancel_scope.cancel()
        finally:
            self._dead = True
            self._tg = None

    async def _read(self, on_text: Callable[[str], None], on_bad: Callable[[str, str], None]) -> None:
        texts: list[str] = []
        chunks: list[bytes] = []
        size = 0
        while True:
            await anyio.wait_readable(self.sock)
            try:
                data = self.sock.recv(_READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                return
            self.last_heard = anyio.current_time()
            try:
                self._ws.receive_data(data)
                events = list(self._ws.events())
            except RemoteProtocolError as exc:
                logger.info("closing a WebSocket after a protocol error: %s", exc)
                self.close(1002, "protocol error")
                return
            for event in events:
                if isinstance(event, TextMessage | BytesMessage):
                    size += len(event.data)
                    if size > self._max_message:  # refused when it ends; the rest is dropped
                        texts.clear()
                        chunks.clear()
                    elif isinstance(event, TextMessage):
                        texts.append(event.data)
                    else:
                        chunks.append(bytes(event.data))
                    if event.message_finished:
                        _deliver(size > self._max_message, texts, chunks, on_text, on_bad)
                        texts, chunks, size = [], [], 0
                elif isinstance(event, Ping):
                    if not self._closing:
                        self._push(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    if not self._closing and not self._dead:
                        self._closing = True
                        with contextlib.suppress(LocalProtocolError):
                            self._push(self._ws.send(event.response()))
                        self._sent_all()
                    return


def _deliver(
    too_large: bool,
    texts: list[str],
    chunks: list[bytes],
    on_text: Callable[[str], None],
    on_bad: Callable[[str, str], None],
) -> None:
    if too_large:
        on_bad("too_large", "frame exceeds the size limit")
    elif not chunks:
        on_text(texts[0] if len(texts) == 1 else "".join(texts))
    else:
        try:
            on_text(b"".join(chunks).decode("utf-8"))
        except UnicodeDecodeError:
            on_bad("invalid_json", "binary frame is not UTF-8")
