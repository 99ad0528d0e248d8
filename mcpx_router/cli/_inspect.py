"""`mcpx-router inspect`: the servers connected, and a live inspector of them in the browser.

mcpx-router inspect --config mcp.json              # prints http://127.0.0.1:PORT/?token=...
mcpx-router inspect --command 'uvx mcp-server-time' --read-only --port 8765
mcpx-router inspect --gateway http://127.0.0.1:8080 --topic room
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from .._adapter import OpenAIPeerToolAdapter
from .._console import USAGE, fail, run_command
from .._errors import RouterError
from ..mcpx import static_token
from ..peers import PeerSpec
from ..peers._router import Router
from ..peers._topic_peers import TopicMembership
from ._connect import join_peers, status_line
from ._peer_commands import EXIT_STATUS, _shared_options, load_peers
from ._render import write

__all__ = ["add_inspect_command"]


def add_inspect_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register the `inspect` subcommand."""
    inspect = commands.add_parser(
        "inspect",
        help="connect the servers and show them live in the browser",
        description="Connect the servers (as `tools` and `call` do) and serve a page on 127.0.0.1 that "
        "shows them live: each peer's state, tools and statistics, the tool lists exactly as the model "
        "is sent them, a form to try a call, and the events. Open the URL it prints: it holds the "
        "session token every request needs. Runs until Ctrl-C.",
        epilog=EXIT_STATUS,
    )
    inspect.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)")
    inspect.add_argument(
        "--read-only", action="store_true", help="show everything, but refuse to call tools from the page"
    )
    _shared_options(inspect)
    inspect.set_defaults(run=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        return fail(f"--port must be 0 to 65535, not {args.port}", USAGE)
    if args.gateway or args.topic:
        if not (args.gateway and args.topic):
            return fail("give both --gateway and --topic", USAGE)
        return run_command(lambda: _inspect(args, None))
    peers = load_peers(args)
    if peers is None:
        return USAGE
    return run_command(lambda: _inspect(args, peers))


async def _inspect(args: argparse.Namespace, peers: Mapping[str, PeerSpec] | None) -> int:
    from ..inspector import serve

    limit = 30.0 if args.connect_timeout is None else args.connect_timeout
    async with (
        OpenAIPeerToolAdapter(strict=None, stats=True) as adapter,
        Router(adapter=adapter, connect_timeout=limit) as router,
    ):
        topic: TopicMembership | None = None
        failed: Mapping[str, str] = {}
        async with status_line() as status:
            if peers is not None:
                failed = await join_peers(router, peers, status)
            else:
                status.set(f"joining topic {args.topic} at {', '.join(args.gateway)}")
                try:
                    topic = await _join_topic(router, args)
                except RouterError as exc:
                    return fail(str(exc), 1)
        async with serve(router, port=args.port, read_only=args.read_only, topic=topic) as (_, url):
            joined = ", ".join(router.peers) or "no server"
            write(sys.stderr, f"inspecting {joined}{' (read-only)' if args.read_only else ''}")
            write(sys.stdout, url)
            sys.stdout.flush()
            await anyio.sleep_forever()
    return 1 if failed else 0


def _join_topic(router: Router, args: argparse.Namespace) -> Awaitable[TopicMembership]:
    provider: Callable[[], Awaitable[str]] | None = static_token(args.token) if args.token else None
    limits = {} if args.connect_timeout is None else {"handshake_timeout": args.connect_timeout}
    return router.join_topic(
        args.gateway,
        args.topic,
        args.participant_id,
        token_provider=provider,
        send_rate=args.send_rate,
        **limits,
    )
