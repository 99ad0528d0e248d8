"""The load generator of the gateway benchmark, in a process of its own (always asyncio).

One idea: the cheapest client of many participants, its codec, its frames and its phases in one
place, so that what it costs per frame can be read at a glance.

    python -m benchmarks.mcpx._gwload --url URL --kind gateway|floor --participants N --server-pid PID
        [--presence batched]

Prints one JSON object (`LoadResult`). Every participant is an `asyncio.Protocol` over a plain
socket with a WebSocket codec of a few lines: server frames are only delimited, never decoded,
except the benchmark's own, recognised by their first bytes (`{"id":"b…` broadcast,
`{"id":"q…` request, `{"id":"r…` response) with a fixed-width sequence number; client frames
are masked with a zero key (allowed by RFC 6455: the key is the client's choice). So the load
costs far less per frame than the server's side of it, and one process drives thousands of
participants. Phases:

1. warm-up: two participants connect, exchange a broadcast, leave; the server's RSS is read.
2. fill: N participants connect in waves of `WAVE`, each wave waiting for its frames (welcome,
   and with the gateway every `join` of the others, or with `--presence batched` the batch after
   the newest welcome's roster) before the next; the server's RSS is read.
3. broadcast: `p0` broadcasts, keeping `window` broadcasts in flight (one is done when every
   other participant has it); every delivery's latency is kept.
4. request/response: `pairs` requesters each keep one request in flight to a responder of
   their own, which answers at once; every round trip's latency is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from urllib.parse import urlsplit

WAVE = 50
FRAME_BYTES = 300
"""About the size of every benchmark frame: a short MCP notification, request or result."""

_BROADCAST, _REQUEST, _RESPONSE = b'{"id":"b', b'{"id":"q', b'{"id":"r'
_ZERO_MASK = b"\x00\x00\x00\x00"
_VERSION = re.compile(rb'"(roster_)?version":(\d+)')
"""A batch's number, or the batch a welcome's roster is as of (both near the frame's start)."""


def encode_frame(data: bytes, opcode: int = 0x1) -> bytes:
    """One client frame (FIN, masked with the zero key)."""
    size = len(data)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 65536:
        head = bytes((0x80 | opcode, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
    return head + _ZERO_MASK + data


def _padded(head: str, tail: str) -> str:
    return head + "x" * max(0, FRAME_BYTES - len(head) - len(tail)) + tail


def broadcast_text(seq: int, sender: str) -> str:
    return _padded(
        f'{{"id":"b{seq:08d}","protocol":"mcp-x/v0","from":"{sender}","to":[],"kind":"mcp",'
        '"payload":{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"',
        '"}}}',
    )


def request_text(seq: int, sender: str, to: str) -> str:
    return _padded(
        f'{{"id":"q{seq:08d}","protocol":"mcp-x/v0","from":"{sender}","to":["{to}"],"kind":"mcp",'
        f'"payload":{{"jsonrpc":"2.0","id":{seq},"method":"tools/call","params":{{"name":"echo",'
        '"arguments":{"text":"',
        '"}}}}',
    )


def response_text(seq: int, sender: str, to: str) -> str:
    return _padded(
        f'{{"id":"r{seq:08d}","protocol":"mcp-x/v0","from":"{sender}","to":["{to}"],"kind":"mcp",'
        f'"correlation_id":"q{seq:08d}","payload":{{"jsonrpc":"2.0","id":{seq},"result":{{"content":'
        '[{"type":"text","text":"',
        '"}]}}}',
    )


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_bytes(pid: int) -> int | None:
    """Resident set size of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


@dataclass
class Phase:
    """One measured phase: what was done, in how long, and the CPU both sides used."""

    seconds: float = 0.0
    count: int = 0
    """Frames delivered (broadcast) or round trips (request/response)."""
    latencies: list[float] = field(default_factory=list)
    server_cpu: float | None = None
    load_cpu: float = 0.0


@dataclass
class LoadResult:
    participants: int
    fill_seconds: float
    frames_at_fill: int
    """Frames the participants received while joining (welcomes, and the gateway's joins)."""
    rss_idle: int | None
    rss_full: int | None
    broadcast: Phase
    broadcasts: int
    request: Phase
    pairs: int
    closed: list[int]
    """Close codes of connections the server closed during the run (none expected)."""


class Client(asyncio.Protocol):
    def __init__(self, load: Load, pid: str, request: bytes) -> None:
        self.load, self.pid, self._request = load, pid, request
        self.transport: asyncio.Transport | None = None
        self.upgraded = asyncio.get_running_loop().create_future()
        self.frames = 0
        self.peer = ""
        """Responders: the requester they answer."""
        self.version = -1
        """The newest presence batch this participant has (batched presence)."""
        self.welcome_version: int | None = None
        self.quiet = False
        """Connected with `presence=none`: its joining is its welcome alone."""
        self._buf = bytearray()
        self._open = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self._request)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.upgraded.done():
            self.upgraded.set_exception(ConnectionError(f"{self.pid}: closed during the handshake"))

    def send(self, text: str) -> None:
        assert self.transport is not None
        self.transport.write(encode_frame(text.encode()))

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if not self._open:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[:end]).split(b"\r\n", 1)[0]
            if b" 101 " not in status + b" ":
                self.upgraded.set_exception(ConnectionError(f"{self.pid}: upgrade refused: {status!r}"))
                return
            self._open = True
            del buf[: end + 4]
            self.upgraded.set_result(None)
        now = time.perf_counter()
        at, size = 0, len(buf)
        while size - at >= 2:
            opcode, length = buf[at] & 0x0F, buf[at + 1] & 0x7F
            head = 2
            if length == 126:
                if size - at < 4:
                    break
                length, head = int.from_bytes(buf[at + 2 : at + 4], "big"), 4
            elif length == 127:
                if size - at < 10:
                    break
                length, head = int.from_bytes(buf[at + 2 : at + 10], "big"), 10
            if size - at < head + length:
                break
            start = at + head
            at = start + length
            if opcode == 0x1:
                self.frames += 1
                self.load.frames += 1
                self.load.on_text(self, buf[start : start + self.load.head], now)
            elif opcode == 0x9:
                assert self.transport is not None
                self.transport.write(encode_frame(bytes(buf[start:at]), 0xA))
            elif opcode == 0x8:
                code = int.from_bytes(buf[start : start + 2], "big") if length >= 2 else 1005
                self.load.closed.append(code)
        del buf[:at]


class Load:
    def __init__(self, url: str, kind: str, server_pid: int, presence: str | None = None) -> None:
        parts = urlsplit(url)
        self.presence = presence
        self.head = 512 if presence == "batched" else 16
        """Bytes of each frame read: enough for the batch numbers with batched presence."""
        self.gateway_frames = 0
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.kind, self.server_pid = kind, server_pid
        self.clients: list[Client] = []
        self.frames = 0
        self.closed: list[int] = []
        self._changed = asyncio.Event()
        # broadcast phase
        self.sending = False
        self.next_seq = 0
        self.in_flight: dict[int, list[float]] = {}
        """seq -> [deliveries still due, sent at]."""
        self.done_broadcasts = 0
        self.delivery_latency: list[float] = []
        # request/response phase
        self.sent_at: dict[int, float] = {}
        self.round_trips: list[float] = []
        self.phase_broadcasts = 0

    # -- connections ------------------------------------------------------------------------------

    def _upgrade_request(self, pid: str, presence: str | None) -> bytes:
        query = f"&presence={presence}" if presence else ""
        return (
            f"GET /v0/ws?topic=bench&id={pid}{query} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: bWNweC1iZW5jaC1rZXkh\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer tok-{pid}\r\n\r\n"
        ).encode()

    async def connect(self, pids: list[str], presence: str | None = None) -> list[Client]:
        loop = asyncio.get_running_loop()

        async def one(pid: str) -> Client:
            _, client = await loop.create_connection(
                lambda: Client(self, pid, self._upgrade_request(pid, presence)), self.host, self.port
            )
            await client.upgraded
            return client

        return list(await asyncio.gather(*(one(pid) for pid in pids)))

    async def until(self, ready: Callable[[], bool], patience: float) -> None:
        """Wait until `ready()` is true (checked whenever frames arrive), at most `patience` s."""
        deadline = time.perf_counter() + patience
        while not ready():
            self._changed.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"load generator: timed out ({self.frames} frames so far)")
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.05))
            except TimeoutError:
                pass

    async def fill(self, count: int) -> float:
        started, base = time.perf_counter(), self.gateway_frames
        for first in range(0, count, WAVE):
            pids = [f"p{i}" for i in range(first, min(first + WAVE, count))]
            self.clients += await self.connect(pids, self.presence)
            k = len(self.clients)
            await self.until(partial(self.filled, base, k), 60 + k / 10)
        return time.perf_counter() - started

    def filled(self, base: int, k: int) -> bool:
        """Whether the `k` participants connected have every frame of their joining (`base`: the
        gateway's frames before): with batched presence, the batch after the newest roster."""
        if self.presence != "batched":
            return self.gateway_frames >= base + k + (k * (k - 1) // 2 if self.kind == "gateway" else 0)
        versions = [c.welcome_version for c in self.clients]
        if None in versions:
            return False
        newest = max(v for v in versions if v is not None)
        return all(c.quiet or c.version > newest for c in self.clients)

    # -- frames -----------------------------------------------------------------------------------

    def on_text(self, client: Client, head: bytearray, now: float) -> None:
        prefix = bytes(head[:8])
        if prefix == _BROADCAST:
            seq = int(head[8:16])
            entry = self.in_flight[seq]
            self.delivery_latency.append(now - entry[1])
            entry[0] -= 1
            if entry[0] == 0:
                del self.in_flight[seq]
                self.done_broadcasts += 1
                if self.sending:
                    self.broadcast()
        elif prefix == _REQUEST:
            client.send(response_text(int(head[8:16]), client.pid, client.peer))
        elif prefix == _RESPONSE:
            seq = int(head[8:16])
            self.round_trips.append(now - self.sent_at.pop(seq))
            if self.sending:
                self.request(client, client.peer)
        else:
            self.gateway_frames += 1
            found = _VERSION.search(head) if self.head > 16 else None
            if found is not None:
                version = int(found[2])
                client.version = max(client.version, version)
                if found[1]:
                    client.welcome_version = version
        self._changed.set()

    def broadcast(self) -> None:
        seq = self.next_seq
        self.next_seq += 1
        self.in_flight[seq] = [len(self.clients) - 1, time.perf_counter()]
        self.clients[0].send(broadcast_text(seq, self.clients[0].pid))

    def request(self, requester: Client, responder: str) -> None:
        seq = self.next_seq
        self.next_seq += 1
        self.sent_at[seq] = time.perf_counter()
        requester.send(request_text(seq, requester.pid, responder))

    # -- phases -----------------------------------------------------------------------------------

    async def measure(self, seconds: float, start: Callable[[], None], results: list[float]) -> Phase:
        """Run the traffic `start()` begins for `seconds` after a warm-up; stop it and drain it."""
        self.sending = True
        start()
        await asyncio.sleep(min(0.5, seconds / 4))
        del results[:]
        done_before = self.done_broadcasts
        cpu0, load0, t0 = cpu_seconds(self.server_pid), time.process_time(), time.perf_counter()
        await asyncio.sleep(seconds)
        count = len(results)
        t1, cpu1, load1 = time.perf_counter(), cpu_seconds(self.server_pid), time.process_time()
        latencies = list(results)
        broadcasts = self.done_broadcasts - done_before
        self.sending = False
        await self.until(lambda: not self.in_flight and not self.sent_at, 60)
        phase = Phase(t1 - t0, count, latencies, None, load1 - load0)
        if cpu0 is not None and cpu1 is not None:
            phase.server_cpu = cpu1 - cpu0
        self.phase_broadcasts = broadcasts
        return phase

    async def warm_up(self) -> None:
        expected = self.frames + (3 if self.kind == "gateway" else 2)
        clients = await self.connect(["w0", "w1"])
        await self.until(lambda: self.frames >= expected, 30)
        clients[0].send(broadcast_text(99_999_999, "w0").replace('"b99999999"', '"x99999999"'))
        await self.until(lambda: self.frames >= expected + 1, 30)
        for client in clients:
            assert client.transport is not None
            client.transport.close()
        await asyncio.sleep(0.3)

    async def run(self, participants: int, seconds: float, window: int, pairs: int) -> LoadResult:
        await self.warm_up()
        rss_idle = rss_bytes(self.server_pid)
        before = self.frames
        fill = await self.fill(participants)
        await asyncio.sleep(0.2)
        rss_full = rss_bytes(self.server_pid)
        frames_at_fill = self.frames - before

        def start_broadcasts() -> None:
            for _ in range(window):
                self.broadcast()

        broadcast = await self.measure(seconds, start_broadcasts, self.delivery_latency)
        broadcasts = self.phase_broadcasts
        pairs = max(1, min(pairs, (participants - 1) // 2))
        requesters = self.clients[1 : 1 + pairs]
        responders = self.clients[1 + pairs : 1 + 2 * pairs]
        for requester, responder in zip(requesters, responders, strict=True):
            requester.peer, responder.peer = responder.pid, requester.pid

        def start_requests() -> None:
            for requester in requesters:
                self.request(requester, requester.peer)

        request = await self.measure(seconds, start_requests, self.round_trips)
        for client in self.clients:
            assert client.transport is not None
            client.transport.close()
        return LoadResult(
            participants,
            fill,
            frames_at_fill,
            rss_idle,
            rss_full,
            broadcast,
            broadcasts,
            request,
            pairs,
            self.closed,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcpx._gwload")
    parser.add_argument("--url", required=True)
    parser.add_argument("--kind", choices=("gateway", "floor"), required=True)
    parser.add_argument("--participants", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measured phase")
    parser.add_argument("--window", type=int, default=2, help="broadcasts in flight")
    parser.add_argument("--pairs", type=int, default=50, help="requester/responder pairs")
    parser.add_argument("--presence", choices=("batched",), help="ask the gateway for batched presence")
    args = parser.parse_args(argv)
    if args.participants < 3:
        parser.error("--participants must be at least 3 (a broadcaster and a requester/responder pair)")
    load = Load(args.url, args.kind, args.server_pid, args.presence)
    result = asyncio.run(load.run(args.participants, args.seconds, args.window, args.pairs))
    print(json.dumps(asdict(result)), flush=True)


if __name__ == "__main__":
    main()
