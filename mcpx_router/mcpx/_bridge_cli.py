"""`mcpx-router bridge`: make a stdio MCP server a participant of a topic, from a shell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._console import add_connect_timeout, add_verbose, console_logging, run_command
from ._bridge import run_bridge
from ._errors import MCPxError

__all__ = ["bridge_cli", "bridge_main"]


def bridge_main(
    gateway_url: str,
    topic: str,
    participant_id: str,
    command: Sequence[str],
    *,
    token: str | None = None,
    connect_timeout: float = 10.0,
) -> int:
    """Blocking entry point for `mcpx-router bridge`; returns an exit status.

    SIGINT (Ctrl-C) stops the bridge and its server with status 130, SIGTERM with 0.
    """

    async def main() -> int:
        return await run_bridge(
            gateway_url, topic, participant_id, command, token=token, connect_timeout=connect_timeout
        )

    try:
        return run_command(main, on_sigterm=0)
    except (MCPxError, BaseExceptionGroup) as exc:
        error: BaseException = exc
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]  # raised inside the bridge's task group
        if not isinstance(error, MCPxError):
            raise
        print(f"mcpx bridge: {error}", file=sys.stderr)
        return 1


def bridge_cli(argv: Sequence[str] | None = None) -> int:
    """`mcpx-router bridge --gateway URL --topic T --id ID [--token TOKEN] -- <command...>`."""
    parser = argparse.ArgumentParser(
        prog="mcpx-router bridge", description="Make a stdio MCP server a participant of an MCPx topic."
    )
    parser.add_argument("--gateway", required=True, help="gateway base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--id", required=True, dest="participant_id", help="participant id to join as")
    parser.add_argument("--token", help="a pre-shared token (default: ask the development token endpoint)")
    add_connect_timeout(parser, 10.0, "each attempt to connect to the gateway")
    add_verbose(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the stdio server command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the stdio server command after --")
    with console_logging(args.verbose):
        return bridge_main(
            args.gateway,
            args.topic,
            args.participant_id,
            command,
            token=args.token,
            connect_timeout=args.connect_timeout,
        )
