"""The `mcpx-router` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from .._console import INTERRUPTED, CommandParser, add_connect_timeout, add_verbose, console_logging, fail
from .._errors import ConfigError
from ._auth import add_login_command
from ._inspect import add_inspect_command
from ._list_servers import add_servers_command
from ._peer_commands import EXIT_STATUS, add_peer_commands
from ._sources import add_source_options
from ._stats import add_stats_file, stats_file

__all__ = ["build_parser", "main"]

logger = logging.getLogger("mcpx_router.cli")


def version() -> str:
    """The installed distribution's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("mcpx-router")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The `mcpx-router` command's parser, with every subcommand's."""
    parser = CommandParser(
        prog="mcpx-router",
        description="Use the tools of many MCP peers through OpenAI function calling.",
        epilog=EXIT_STATUS + "; 143 terminated (SIGTERM)",
    )
    parser.add_argument("--version", action="version", version=f"mcpx-router {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="publish the tools of a few bundled peers and answer a batch of tool calls",
        description="Start bundled in-process peers, print the merged OpenAI tool catalogue and answer "
        "a batch of parallel tool calls. With OPENAI_API_KEY set (and optionally OPENAI_BASE_URL, "
        "OPENAI_MODEL), run a real conversation with these tools instead.",
    )
    demo.add_argument("--offline", action="store_true", help="never contact a model, even if a key is set")
    demo.add_argument("--prompt", default=None, help="what to ask the model (with OPENAI_API_KEY)")
    demo.add_argument(
        "--topic",
        nargs="?",
        const="demo",
        default=None,
        metavar="NAME",
        help="the MCPx demo instead: a gateway on 127.0.0.1, participants joining and leaving topic NAME "
        "(default: demo), and a Router publishing their tools",
    )
    add_connect_timeout(demo, 10.0, "each bundled peer's handshake")
    add_verbose(demo)
    demo.set_defaults(run=_run_demo)

    chat = commands.add_parser(
        "chat",
        help="talk to a model that uses the tools of MCP servers",
        description="Connect the servers (see 'servers' below) and hold a conversation with an "
        "OpenAI-compatible model (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL) that calls their tools. "
        "Servers that cannot be reached are said on standard error; the conversation goes on with the "
        "others. Prompts come from --prompt, else one per line of standard input.",
        epilog="exit status: 0 done; 1 no server could connect, or the model endpoint failed; "
        "2 unusable options or config; 130 interrupted (Ctrl-C)",
    )
    chat.add_argument("--prompt", action="append", default=[], help="a user message (repeatable)")
    chat.add_argument("--model", default=None, help="the model (default: $OPENAI_MODEL)")
    chat.add_argument("--system", default=None, help="a system message")
    chat.add_argument("--max-turns", type=int, default=10, help="requests per user message")
    chat.add_argument(
        "--strict",
        choices=["auto", "on", "off"],
        default="auto",
        help="offer tools in OpenAI's strict mode: auto (where a schema allows), on (and warn where not) "
        "or off",
    )
    chat.add_argument(
        "--media",
        choices=["describe", "attach"],
        default="describe",
        help="images and files from tools: describe them to the model, or attach them",
    )
    chat.add_argument("--max-tools", type=int, default=128, help="tools per request")
    chat.add_argument(
        "--text-calls",
        action="store_true",
        help="run tool calls the model writes as text (Hermes <tool_call>, JSON, Mistral, Llama, "
        "pythonic) as if sent as tool_calls, for local models that do so",
    )
    chat.add_argument(
        "--code-mode",
        action="store_true",
        help="offer run_python(code) and find_tools(query) instead of the tools: the model writes a "
        "program that calls them, run in a sandbox (the codemode extra; docs/code-mode.md)",
    )
    add_stats_file(chat)
    add_source_options(chat)
    add_connect_timeout(chat, 30.0, "each server's handshake and tool listing")
    add_verbose(chat)
    chat.set_defaults(run=_run_chat)
    add_peer_commands(commands)
    add_inspect_command(commands)
    add_login_command(commands)
    add_servers_command(commands)
    # MCPx commands parse their own arguments (see `main`); listed here for --help.
    commands.add_parser(
        "gateway", help="run an MCPx v0 gateway (see mcpx-router gateway --help)", add_help=False
    )
    commands.add_parser(
        "bridge", help="make a stdio MCP server a participant of an MCPx topic", add_help=False
    )
    return parser


def _run_chat(args: argparse.Namespace) -> int:
    from ._chat import run_chat_command
    from ._peer_commands import load_peers

    peers = load_peers(args)
    if peers is None:
        return 2
    return run_chat_command(
        peers=peers,
        prompts=args.prompt,
        model=args.model,
        system=args.system,
        max_turns=args.max_turns,
        strict=args.strict,
        media=args.media,
        max_tools=args.max_tools,
        text_calls=args.text_calls,
        connect_timeout=args.connect_timeout,
        stats_file=stats_file(args),
        code_mode=args.code_mode,
    )


def _run_demo(args: argparse.Namespace) -> int:
    if args.topic is not None:
        from ._demo_topic import run_topic_demo

        return run_topic_demo(args.topic, connect_timeout=args.connect_timeout)
    from ._demo import run_demo

    return run_demo(offline=args.offline, prompt=args.prompt, connect_timeout=args.connect_timeout)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `mcpx-router` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["gateway"]:
            from ..mcpx import gateway_cli

            return gateway_cli(argv[1:])
        if argv[:1] == ["bridge"]:
            from ..mcpx import bridge_cli

            return bridge_cli(argv[1:])
        args = build_parser().parse_args(argv)
        with console_logging(args.verbose):
            try:
                code: int = args.run(args)
            except ConfigError as exc:  # an unusable file the options name (a statistics file)
                return fail(str(exc), 2)
            except Exception as exc:  # a defect: one line, and the traceback at -vv
                logger.debug("the command failed", exc_info=exc)
                hint = "" if args.verbose >= 2 else " (-vv shows the traceback)"
                return fail(f"unexpected error: {type(exc).__name__}: {exc}{hint}", 1)
        return code
    except KeyboardInterrupt:  # Ctrl-C before or after a command's event loop runs
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
