"""The server side of the gateway benchmark, in a process of its own: our gateway, or the floor.

    python -m benchmarks.mcpx._gwserver --kind gateway|floor --backend asyncio|trio --participants N
        [--lag] [--gc-oldest N]

Prints its base URL on one line, serves until its standard input closes, then shuts down. With
`--lag` (benchmark only) it also runs a loop-lag probe and logs the collector's pauses
(`_lag.py`), and prints them as one JSON line (`{"lag": [...], "gc": [...]}`) when its standard
input closes, before shutting down. `--gc-oldest N` tunes the collector as `mcpx-router gateway`
does (`tune_gc`: a full collection at most once every N of the middle generation's, what exists
once the gateway is up frozen); the default is the command's, 0 leaves the collector as Python
sets it.

- `gateway`: `Gateway` served by `run_gateway`, pre-shared tokens `tok-<id>` for the ids the
  load generator uses, the rate limit lifted (the limiter still runs on every frame), every
  other setting its default (history of 100, send queue of 1,024, pings every 20 s).
- `floor`: the least a WebSocket fan-out server on an ASGI stack does: a bare ASGI app (no
  Starlette) served by `serve_asgi` (Hypercorn + wsproto, the gateway's keepalive), one send
  queue and writer task per connection as the gateway has, a one-line hello on connect, and
  each frame parsed once for its `to`: broadcast to every other connection, or sent to the
  ids named. No authentication, validation, presence, history or rate limit.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import parse_qs

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpx_router.mcpx import Gateway, GatewayConfig, TokenGrant, run_gateway
from mcpx_router.mcpx._keepalive import keepalive_settings
from mcpx_router.mcpx.gateway._serve import GC_OLDEST, serve_asgi, tune_gc

from ._lag import GcLog, LagProbe

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HELLO = '{"event":"hello"}'
QUEUE = GatewayConfig().send_queue


def participant_ids(count: int) -> list[str]:
    """The ids the load generator uses: `p0`... and two for its warm-up, `w0` and `w1`."""
    return [f"p{i}" for i in range(count)] + ["w0", "w1"]


class Floor:
    """A minimal fan-out server: see the module docstring."""

    def __init__(self) -> None:
        self.members: dict[str, MemoryObjectSendStream[str]] = {}

    def close_all(self) -> None:
        for outbox in self.members.values():
            outbox.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "websocket":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        pid = parse_qs(scope["query_string"].decode()).get("id", [""])[0]
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        outbox, inbox = anyio.create_memory_object_stream[str](QUEUE)
        self.members[pid] = outbox
        outbox.send_nowait(HELLO)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._write, inbox, send, tg.cancel_scope)
                while True:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    self._route(pid, message.get("text") or "")
                tg.cancel_scope.cancel()
        finally:
            if self.members.get(pid) is outbox:
                del self.members[pid]

    def _route(self, sender: str, text: str) -> None:
        to = json.loads(text).get("to")
        if to:
            for recipient in to:
                outbox = self.members.get(recipient)
                if outbox is not None:
                    _offer(outbox, text)
        else:
            for pid, outbox in self.members.items():
                if pid != sender:
                    _offer(outbox, text)

    @staticmethod
    async def _write(inbox: MemoryObjectReceiveStream[str], send: Send, scope: anyio.CancelScope) -> None:
        try:
            async with inbox:
                async for text in inbox:
                    await send({"type": "websocket.send", "text": text})
            await send({"type": "websocket.close", "code": 1001, "reason": ""})
        except (OSError, RuntimeError):
            pass
        finally:
            scope.cancel()


def _offer(outbox: MemoryObjectSendStream[str], text: str) -> None:
    try:
        outbox.send_nowait(text)
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the floor drops what a full or closing connection cannot take


def server(kind: str, participants: int) -> AbstractAsyncContextManager[str]:
    if kind == "gateway":
        tokens = {f"tok-{pid}": TokenGrant(pid) for pid in participant_ids(participants)}
        config = GatewayConfig(dev_tokens=False, tokens=tokens, rate_per_second=1e9, rate_burst=10**9)
        return run_gateway(Gateway(config))
    floor = Floor()
    defaults = GatewayConfig()
    return serve_asgi(
        floor,
        max_message_bytes=defaults.max_message_bytes,
        on_shutdown=floor.close_all,
        keepalive=keepalive_settings(defaults.ping_interval, defaults.ping_timeout),
    )


async def serve(kind: str, participants: int, lag: bool = False, gc_oldest: int = GC_OLDEST) -> None:
    async with server(kind, participants) as url, anyio.create_task_group() as tg:
        if gc_oldest:
            tune_gc(gc_oldest)
        probe, gc_log = LagProbe(), GcLog()
        with gc_log if lag else contextlib.nullcontext():
            if lag:
                tg.start_soon(probe.run)
            print(url, flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
        if lag:
            print(json.dumps({"lag": probe.samples, "gc": gc_log.pauses}), flush=True)
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mcpx._gwserver")
    parser.add_argument("--kind", choices=("gateway", "floor"), required=True)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--participants", type=int, required=True)
    parser.add_argument("--profile", metavar="FILE", help="run under cProfile; write the stats to FILE")
    parser.add_argument("--lag", action="store_true", help="probe the loop's lag; print it when stdin closes")
    parser.add_argument(
        "--gc-oldest", type=int, default=GC_OLDEST, metavar="N", help="tune_gc(N); 0: Python's collector"
    )
    args = parser.parse_args(argv)
    profile = cProfile.Profile() if args.profile else None
    if profile is not None:
        profile.enable()
    try:
        anyio.run(serve, args.kind, args.participants, args.lag, args.gc_oldest, backend=args.backend)
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()
