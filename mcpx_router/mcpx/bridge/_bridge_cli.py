"""`mcpx-router bridge`: make a stdio MCP server a participant of a topic, from a shell.

`run_bridge` holds the command's lifetime: the topic connection with its reconnects, the
bridged server, and the exit status when either ends.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Unpack

import anyio

from ..._backoff import Reconnect
from ..._console import CommandParser, add_connect_timeout, add_verbose, console_logging, run_command
from .._errors import MCPxError
from .._topic_options import TopicOptions, add_topic_flags, topic_options
from ..client._auth import static_token
from ..client._topic import TopicClient
from ..client._topic_events import ConnectionEvent, ConnectionState
from ._bridge import bridge_stdio_server

__all__ = ["bridge_cli", "bridge_main", "run_bridge"]

logger = logging.getLogger("mcpx_router.mcpx.bridge")

_RECONNECT = Reconnect(initial_delay=0.5, max_delay=10.0)
"""The command's policy: keep trying, at least every 10 s, for as long as it runs."""


async def run_bridge(
    gateway_url: str | Sequence[str],
    topic: str,
    participant_id: str,
    command: Sequence[str],
    *,
    token: str | None = None,
    reconnect: Reconnect | None = _RECONNECT,
    connect_timeout: float = 10.0,
    **options: Unpack[TopicOptions],
) -> int:
    """Bridge until the server exits or the gateway is given up on; the exit status for a CLI.

    A lost connection is made again after `reconnect` delays (the server keeps running, and
    participants handshake with it again); None: a lost connection ends the bridge.
    `connect_timeout` bounds each attempt to connect to the gateway. `options` go to the
    `TopicClient` (send rate, keepalive, a token provider instead of `token`).
    """
    if token:
        options["token_provider"] = static_token(token)
    client = TopicClient(
        gateway_url, topic, participant_id, reconnect=reconnect, connect_timeout=connect_timeout, **options
    )
    lost: list[str] = []
    async with (
        # The server is started and the bridge answers before our presence is announced: a
        # participant that sees us join may ask at once.
        bridge_stdio_server(client, command) as bridge,
        client,
        client.subscribe() as events,
        anyio.create_task_group() as tg,
    ):

        async def watch_connection() -> None:
            final = ConnectionState.CLOSED if reconnect is not None else ConnectionState.LOST
            async for event in events:
                if isinstance(event, ConnectionEvent) and event.state is final:
                    lost.append(event.reason or "connection closed")
                    tg.cancel_scope.cancel()

        async def watch_server() -> None:
            await bridge.exited.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch_connection)
        tg.start_soon(watch_server)
    if lost:
        logger.error("lost the connection to the gateway: %s", lost[0])
        return 1
    return bridge.process.returncode or 0


def bridge_main(
    gateway_url: str | Sequence[str],
    topic: str,
    participant_id: str,
    command: Sequence[str],
    *,
    token: str | None = None,
    connect_timeout: float = 10.0,
    **options: Unpack[TopicOptions],
) -> int:
    """Blocking entry point for `mcpx-router bridge`; returns an exit status.

    SIGINT (Ctrl-C) stops the bridge and its server with status 130, SIGTERM with 0.
    """

    async def main() -> int:
        return await run_bridge(
            gateway_url,
            topic,
            participant_id,
            command,
            token=token,
            connect_timeout=connect_timeout,
            **options,
        )

    try:
        return run_command(main, on_sigterm=0)
    except (MCPxError, BaseExceptionGroup) as exc:
        error: BaseException = exc
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]  # raised inside the bridge's task group
        if not isinstance(error, MCPxError):
            raise
        print(f"mcpx-router: {error}", file=sys.stderr)
        return 1


def bridge_parser() -> argparse.ArgumentParser:
    """The options of `mcpx-router bridge`."""
    parser = CommandParser(
        prog="mcpx-router bridge", description="Make a stdio MCP server a participant of an MCPx topic."
    )
    parser.add_argument(
        "--gateway",
        required=True,
        action="append",
        help="gateway base URL, e.g. http://127.0.0.1:8080; repeat it (or separate with commas) for "
        "gateways sharing topics through NATS: a lost connection moves to the next",
    )
    parser.add_argument("--topic", required=True, help="the topic to join")
    parser.add_argument("--id", required=True, dest="participant_id", help="participant id to join as")
    parser.add_argument("--token", help="a pre-shared token (default: ask the development token endpoint)")
    add_connect_timeout(parser, 10.0, "each attempt to connect to the gateway")
    add_topic_flags(parser)
    add_verbose(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the stdio server command")
    return parser


def bridge_cli(argv: Sequence[str] | None = None) -> int:
    """`mcpx-router bridge --gateway URL --topic T --id ID [--token TOKEN] -- <command...>`."""
    parser = bridge_parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the stdio server command after --")
    if args.token and args.token_url:
        parser.error("give --token or --token-url, not both")
    with console_logging(args.verbose):
        return bridge_main(
            args.gateway,
            args.topic,
            args.participant_id,
            command,
            token=args.token,
            connect_timeout=args.connect_timeout,
            **topic_options(args),
        )
