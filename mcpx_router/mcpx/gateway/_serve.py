"""Running the gateway: in-process for tests (`run_gateway`) and as a command (`gateway_main`).

The gateway is served by its own front door (`_front.py`: WebSockets below ASGI, HTTP through
its ASGI app); `serve_asgi` serves any ASGI app with Hypercorn. Both run on whichever backend is
running (asyncio or trio), inside the caller's task group: nothing outlives the `async with`.
"""

from __future__ import annotations

import argparse
import gc
import logging
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import sniffio
from hypercorn.config import Config, Sockets
from hypercorn.utils import wrap_app

from ..._console import CommandParser, add_verbose, console_logging, run_command
from .._errors import MCPxClusterError
from .._keepalive import Keepalive, keepalive_settings
from .._topic_options import add_keepalive_flags
from ._front import serve_front
from ._gateway import WS_PATH, Gateway
from ._gateway_state import GatewayConfig, TokenGrant, valid_id

logger = logging.getLogger("mcpx_router.mcpx.gateway")
_GRACE = 2.0
_BACKLOG = 4096
"""Connections the kernel may hold before we accept them (it caps this at net.core.somaxconn):
a topic of thousands reconnecting after a restart overflowed the usual 128, and every refused
connection was tried again later."""


def _listen(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(_BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


GC_OLDEST = 100
"""`mcpx-router gateway`'s threshold for the collector's oldest generation (Python's is 10)."""


def tune_gc(oldest: int) -> None:
    """The gateway process's garbage collector: a full collection at most once every `oldest`
    collections of the middle generation (`gc.set_threshold(700, 10, oldest)`), and what exists
    once the gateway is up frozen (`gc.freeze()`: never scanned again).

    A full collection walks every object the process holds, and holds the event loop for it: in
    a topic of 10,000 filling from empty, Python's default (10) made ten of them, 0.3 to 0.6 s
    each, and each one held every call in flight; at 100 there was one (docs/scaling.md). The
    gateway's own garbage is freed by reference counting; fewer full collections only keep
    cyclic garbage, if any, a little longer."""
    gc.set_threshold(gc.get_threshold()[0], gc.get_threshold()[1], oldest)
    gc.freeze()


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def _serve(
    asgi: Any,
    sock: socket.socket,
    shutdown: Callable[[], Awaitable[None]],
    max_message_bytes: int,
    keepalive: Keepalive | None,
) -> None:
    config = Config()
    config.accesslog = None
    config.errorlog = logger
    config.graceful_timeout = _GRACE
    config.websocket_max_message_size = max_message_bytes
    if keepalive is not None:
        # Hypercorn pings; a connection that has sent nothing, not even a pong, for an interval
        # and a timeout is closed, and the app sees it disconnect.
        config.websocket_ping_interval = keepalive.interval
        config.read_timeout = keepalive.interval + keepalive.timeout  # type: ignore[assignment]
    app = wrap_app(asgi, config.wsgi_max_body_size, "asgi")
    sockets = Sockets(secure_sockets=[], insecure_sockets=[sock], quic_sockets=[])
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio.run import worker_serve as trio_serve

        await trio_serve(app, config, sockets=sockets, shutdown_trigger=shutdown)
    else:
        from hypercorn.asyncio.run import worker_serve as asyncio_serve

        await asyncio_serve(app, config, sockets=sockets, shutdown_trigger=shutdown)


@asynccontextmanager
async def serve_asgi(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_message_bytes: int = 16 * 1024 * 1024,
    on_shutdown: Callable[[], None] | None = None,
    keepalive: Keepalive | None = None,
) -> AsyncIterator[str]:
    """Serve any ASGI app with Hypercorn on the running backend; yield its base URL.

    With `keepalive`, WebSocket connections are pinged and closed once they stop answering."""
    sock = _listen(host, port)
    stop = anyio.Event()
    stopped = anyio.Event()
    # Hypercorn must see its shutdown trigger rather than a cancellation (its asyncio worker does
    # not survive being cancelled mid-shutdown), so it runs shielded and is cancelled only if it
    # overstays its graceful period.
    serve_scope = anyio.CancelScope(shield=True)

    async def serve() -> None:
        try:
            with serve_scope:
                await _serve(app, sock, stop.wait, max_message_bytes, keepalive)
        finally:
            stopped.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield _url(sock)
            finally:
                if on_shutdown is not None:
                    on_shutdown()
                stop.set()
                with anyio.CancelScope(shield=True), anyio.move_on_after(_GRACE + 2.0):
                    await stopped.wait()
                serve_scope.cancel()
    finally:
        sock.close()


@asynccontextmanager
async def run_gateway(
    gateway: Gateway | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: GatewayConfig | None = None,
) -> AsyncIterator[str]:
    """Serve a gateway (a new one with `config` unless given) and yield its base URL.

    Port 0 picks a free port. On exit every participant is disconnected (code 1001).
    In the NATS mode (`GatewayConfig(nats=...)`, asyncio only) the gateway joins the others
    first, and loads the topics' history, before it listens.

    Raises:
        MCPxClusterError: The NATS mode cannot run: on trio, without nats-py, or NATS unreachable.
    """
    gw = gateway if gateway is not None else Gateway(config)
    keepalive = keepalive_settings(gw.config.ping_interval, gw.config.ping_timeout)
    cluster = gw.cluster
    if cluster is not None and sniffio.current_async_library() != "asyncio":
        raise MCPxClusterError(
            "the NATS mode of the gateway runs on asyncio only (the NATS client, nats-py, is "
            "asyncio-only): run it with anyio.run(..., backend='asyncio'), or leave out `nats`"
        )

    def shutdown() -> None:
        if cluster is not None:
            cluster.stopping()  # our participants' leaves are moves: the others hold their frames
        gw.close_all()

    async with AsyncExitStack() as stack:
        if cluster is not None:
            await stack.enter_async_context(cluster.running())
        await stack.enter_async_context(gw.running())
        sock = _listen(host, port)
        stack.callback(sock.close)
        async with serve_front(
            sock,
            gw.app,
            gw.serve_websocket,
            ws_path=WS_PATH,
            send_queue=gw.config.send_queue,
            max_message_bytes=gw.config.max_message_bytes,
            keepalive=keepalive,
            on_shutdown=shutdown,
        ):
            yield _url(sock)


async def serve_gateway(
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    config: GatewayConfig | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve a gateway until cancelled."""
    async with run_gateway(host=host, port=port, config=config) as url:
        if on_ready is not None:
            on_ready(url)
        await anyio.sleep_forever()


def gateway_main(
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    config: GatewayConfig | None = None,
    backend: str = "asyncio",
    gc_oldest: int | None = GC_OLDEST,
) -> int:
    """Blocking entry point for `mcpx-router gateway`; returns an exit status.

    SIGINT (Ctrl-C) stops the gateway with status 130, SIGTERM with 0. `gc_oldest`: see
    `tune_gc` (None: the collector as Python sets it).
    """

    def ready(url: str) -> None:
        if gc_oldest is not None:
            tune_gc(gc_oldest)
        print(f"MCPx gateway listening on {url} (WebSocket {url.replace('http', 'ws', 1)}/v0/ws)", flush=True)

    async def main() -> int:
        await serve_gateway(host, port, config=config, on_ready=ready)
        return 0

    try:
        return run_command(main, backend=backend, on_sigterm=0)
    except (OSError, MCPxClusterError) as exc:
        print(f"mcpx-router: {exc}", file=sys.stderr)
        return 1


def gateway_parser() -> argparse.ArgumentParser:
    """The options of `mcpx-router gateway`."""
    parser = CommandParser(prog="mcpx-router gateway", description="Run an MCPx v0 gateway.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port (0 picks a free one)")
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="ID=TOKEN",
        help="a pre-shared token for participant ID (repeatable); turns off development tokens",
    )
    parser.add_argument(
        "--dev-tokens", action="store_true", help="serve POST /v0/auth/token even with --token"
    )
    parser.add_argument("--history", type=int, default=100, help="broadcast envelopes kept per topic")
    parser.add_argument("--rate", type=float, default=50.0, help="frames per second per participant")
    add_keepalive_flags(parser, "each participant")
    parser.add_argument(
        "--presence-interval",
        type=float,
        default=0.25,
        metavar="SECONDS",
        help="seconds between a topic's presence batches, for participants that ask for them "
        "(?presence=batched; default: 0.25)",
    )
    parser.add_argument(
        "--jwt-key",
        metavar="FILE",
        help="accept signed tokens (JWT): FILE holds an HS256 secret or an RS256 public key (PEM); "
        "turns off development tokens",
    )
    parser.add_argument(
        "--jwt-audience", default="mcpx", help="the `aud` signed tokens must carry (default: mcpx)"
    )
    parser.add_argument(
        "--query-tokens",
        action="store_true",
        help="also accept ?token= in the WebSocket URL (it shows in access logs)",
    )
    parser.add_argument(
        "--nats",
        action="append",
        default=[],
        metavar="URL",
        help="share topics with other gateways through NATS (e.g. nats://127.0.0.1:4222; "
        "repeatable, or comma-separated); needs JetStream and nats-py",
    )
    parser.add_argument("--nats-prefix", default="mcpx", help="subject prefix on NATS (default: mcpx)")
    parser.add_argument(
        "--nats-replicas", type=int, default=1, help="replicas of the history stream when made (default: 1)"
    )
    parser.add_argument(
        "--nats-heartbeat",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="seconds between heartbeats; a gateway silent for three is dead (default: 2)",
    )
    parser.add_argument(
        "--nats-handover",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long a frame for a participant moving between gateways waits for it to "
        "reconnect before it is refused (default: 5; 0 refuses at once)",
    )
    parser.add_argument(
        "--gc-oldest",
        type=int,
        default=GC_OLDEST,
        metavar="N",
        help="a full garbage collection at most once every N of the middle generation's, and "
        f"what exists at start-up frozen (default: {GC_OLDEST}; Python's own is 10; 0 leaves the "
        "collector as Python sets it): each full collection holds the event loop for as long as it "
        "walks every object",
    )
    add_verbose(parser)
    return parser


def gateway_cli(argv: Sequence[str] | None = None) -> int:
    """`mcpx-router gateway [--host H] [--port P] [--token ID=TOKEN ...] [--dev-tokens]`."""
    parser = gateway_parser()
    args = parser.parse_args(argv)
    tokens: dict[str, TokenGrant] = {}
    for item in args.token:
        pid, sep, token = item.partition("=")
        if not sep or not pid or not token:
            parser.error(f"--token expects ID=TOKEN, got {item!r}")
        if not valid_id(pid):
            parser.error(f"--token {pid}=…: not a participant id (none starts with 'system' or holds spaces)")
        tokens[token] = TokenGrant(pid)
    verifier = None
    if args.jwt_key:
        from ._tokens import verifier_from_file

        try:
            verifier = verifier_from_file(args.jwt_key, args.jwt_audience)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        config = _config(args, tokens, verifier)
    except ValueError as exc:
        parser.error(str(exc))
    if args.gc_oldest < 0:
        parser.error(f"--gc-oldest must be 0 (Python's collector, untouched) or more, not {args.gc_oldest}")
    with console_logging(args.verbose):
        return gateway_main(args.host, args.port, config=config, gc_oldest=args.gc_oldest or None)


def _config(args: argparse.Namespace, tokens: dict[str, TokenGrant], verifier: Any) -> GatewayConfig:
    return GatewayConfig(
        dev_tokens=args.dev_tokens or not (tokens or verifier),
        verifier=verifier,
        query_tokens=args.query_tokens,
        tokens=tokens,
        history_limit=args.history,
        rate_per_second=args.rate,
        rate_burst=max(int(args.rate * 2), 1),
        ping_interval=args.ping_interval,
        ping_timeout=args.ping_timeout,
        presence_interval=args.presence_interval,
        nats=[u.strip() for item in args.nats for u in item.split(",") if u.strip()] or None,
        nats_prefix=args.nats_prefix,
        nats_replicas=args.nats_replicas,
        nats_heartbeat=args.nats_heartbeat,
        nats_handover=args.nats_handover,
    )
