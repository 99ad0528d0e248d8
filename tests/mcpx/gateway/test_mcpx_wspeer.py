"""The server end of a WebSocket on real sockets: what a frame for one peer and a flusher pass wait for."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import anyio.lowlevel
import pytest
from wsproto import ConnectionType, WSConnection

from mcpx_router.mcpx.gateway import _wspeer
from mcpx_router.mcpx.gateway._wspeer import Flusher, WebSocketPeer, text_frame

pytestmark = pytest.mark.anyio


@contextmanager
def _peers(count: int, flusher: Flusher) -> Iterator[list[tuple[WebSocketPeer, socket.socket]]]:
    """`count` peers, each on one end of a socket pair, with the other end to read them from."""
    pairs = [socket.socketpair() for _ in range(count)]
    try:
        peers = []
        for ours, theirs in pairs:
            ours.setblocking(False)
            peer = WebSocketPeer(
                ours, WSConnection(ConnectionType.SERVER), flusher, limit=8, max_message=1 << 20
            )
            peers.append((peer, theirs))
        yield peers
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()


def _waiting(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


async def test_a_frame_for_one_peer_goes_at_once_after_what_its_peer_has_queued() -> None:
    flusher = Flusher()  # never run: nothing else writes what is queued
    with _peers(1, flusher) as [(peer, theirs)]:
        assert peer.send_frame(text_frame('{"batch":1}'))
        assert not _waiting(theirs)  # a broadcast waits for the flusher
        assert peer.send_frame(text_frame('{"call":1}'), now=True)
        theirs.settimeout(1)
        expected = text_frame('{"batch":1}') + text_frame('{"call":1}')
        data = b""
        while len(data) < len(expected):
            data += theirs.recv(4096)
        assert data == expected  # in order, the call right after what was queued before it


async def test_the_flusher_lets_the_loop_run_between_passes_over_many_peers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_wspeer, "_FLUSH_PASS", 4)  # the pass made small: 3 of them for 9 peers
    flusher = Flusher()
    with _peers(9, flusher) as peers:
        for peer, _ in peers:
            peer.send_frame(text_frame('{"batch":1}'))
        seen: list[int] = []

        async def watch() -> None:
            while not seen or seen[-1] < len(peers):
                await anyio.lowlevel.checkpoint()
                seen.append(sum(_waiting(theirs) for _, theirs in peers))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(flusher.run)
                await watch()
                tg.cancel_scope.cancel()
        assert any(0 < written < len(peers) for written in seen)  # the loop ran between passes


async def test_a_frame_larger_than_the_socket_takes_goes_out_whole_and_in_order() -> None:
    big, after = text_frame("x" * 3_000_000), text_frame('{"after":1}')
    with _peers(1, Flusher()) as [(peer, theirs)]:
        theirs.setblocking(False)
        received = bytearray()

        async def read_slowly() -> None:
            while len(received) < len(big) + len(after):
                await anyio.wait_readable(theirs)
                received.extend(theirs.recv(65536))
                await anyio.lowlevel.checkpoint()

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.run, lambda _: None, lambda *_: None)
                await anyio.lowlevel.checkpoint()
                assert peer.send_frame(big, now=True)  # the socket takes a part; the rest waits
                assert peer.send_frame(after, now=True)  # queued behind it, not before
                await read_slowly()
                tg.cancel_scope.cancel()
        assert bytes(received) == big + after
