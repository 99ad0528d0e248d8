"""`mcpx-router tools` and `mcpx-router call`: the tools of MCP servers, from a shell.

mcpx-router tools --command 'uvx mcp-server-time'   # time__get_current_time(timezone: str)  Get ...
mcpx-router tools --config mcp.json --json          # a JSON document of the tools and peers
mcpx-router call time__get_current_time timezone=UTC --config mcp.json
mcpx-router tools --gateway http://127.0.0.1:8080 --topic room   # the participants of an MCPx topic
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from difflib import get_close_matches
from fnmatch import fnmatchcase
from typing import Any

from .._adapter import OpenAIPeerToolAdapter
from .._catalogue import PublishedTool
from .._console import USAGE, add_verbose, fail, positive_seconds, run_command
from .._errors import RouterError, UsageError
from .._published import prepare_arguments
from ..mcpx import static_token
from ..mcpx._topic_options import add_send_rate_flag
from ..model._suggest import NameSuggester
from ..model.arguments._arguments import ArgumentsError
from ..peers import PeerSpec
from ..peers._events import CallProgress, RouterEvent
from ..peers._router import Router
from ._arguments import RawArguments, split_arguments, typed_arguments
from ._connect import Status, join_peers, status_line
from ._render import (
    for_terminal,
    print_json,
    result_json,
    result_text,
    terminal_width,
    tools_document,
    tools_table,
    write,
)
from ._signature import signature
from ._sources import add_source_options, peers_from
from ._stats import add_stats_file, stats_file

__all__ = ["EXIT_STATUS", "add_peer_commands", "load_peers"]

EXIT_STATUS = (
    "exit status: 0 done; 1 a server could not connect (the others are still used), the tool answered "
    "with an error or the call failed; 2 unusable options, arguments or config; 130 interrupted (Ctrl-C)"
)
_FORMATS = ("chat", "responses", "functions")


def add_peer_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Register the `tools` and `call` subcommands."""
    tools = commands.add_parser(
        "tools",
        help="list the tools of MCP servers, with their signatures",
        description="Connect the servers (see 'servers' below) and list the tools they offer, under the "
        "public names a model calls them by, each with its signature from its input schema: "
        "`name(required: type, optional?: type = default)`. Servers that cannot be reached are said on "
        "standard error; the others are still listed.",
        epilog=EXIT_STATUS,
    )
    tools.add_argument(
        "patterns",
        nargs="*",
        metavar="PATTERN",
        help="list only the tools whose public names match one of these shell patterns, e.g. 'time__*'",
    )
    tools.add_argument(
        "--json", action="store_true", help="print one JSON document of the tools and peers' state"
    )
    tools.add_argument(
        "--openai",
        nargs="?",
        const="chat",
        choices=_FORMATS,
        metavar="FORMAT",
        help="print the tools exactly as the model receives them, as JSON: chat (Chat Completions "
        "`tools`, when no FORMAT is given), responses (Responses API) or functions (legacy)",
    )
    tools.add_argument("--schema", action="store_true", help="print each tool's full input schema under it")
    _shared_options(tools)
    add_stats_file(tools, listing=_run_tools)

    call = commands.add_parser(
        "call",
        help="call one tool and print its answer",
        description="Call a tool by its public name (as `tools` lists it; a tool's own name works too "
        "when one server has it) and print its answer: text as text, structured content as JSON, "
        "images and resources described. Arguments are key=value, typed by the tool's input schema "
        "(count=3 is a number when the schema says integer, tags=a,b a list, name=3 the string '3' "
        "when the schema says string), key:=JSON for a JSON value as it is, or one JSON object. "
        "Progress the server reports is shown while the call runs.",
        epilog=EXIT_STATUS,
    )
    call.add_argument("tool", metavar="NAME", help="the tool's public name, e.g. time__get_current_time")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar="ARG",
        help="key=value, key:=JSON or a JSON object ('-': a JSON object read from standard input)",
    )
    call.add_argument(
        "--json", action="store_true", help="print the tool's result as MCP has it (CallToolResult JSON)"
    )
    call.add_argument(
        "--timeout", type=positive_seconds, default=60.0, metavar="SECONDS", help="seconds the call may take"
    )
    add_stats_file(call)
    _shared_options(call)
    call.set_defaults(run=_run_call)


def _shared_options(parser: argparse.ArgumentParser) -> None:
    add_source_options(parser)
    group = parser.add_argument_group("the participants of an MCPx topic as the servers")
    gateway_help = "the gateway's URL, e.g. http://127.0.0.1:8080 (repeat it for gateways sharing a topic)"
    group.add_argument("--gateway", metavar="URL", action="append", help=gateway_help)
    group.add_argument("--topic", help="the topic to join (with --gateway)")
    group.add_argument("--id", dest="participant_id", default="mcpx-router", help="our participant id")
    group.add_argument("--token", help="a pre-shared token (default: a development token from the gateway)")
    add_send_rate_flag(group)
    parser.add_argument(
        "--connect-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds each server's handshake and tool listing may take (default: 30; 10 for the "
        "participants of a topic)",
    )
    add_verbose(parser)


def load_peers(args: argparse.Namespace) -> dict[str, PeerSpec] | None:
    """The servers the options name; None, having said why, if they cannot be used."""
    try:
        return peers_from(args)
    except RouterError as exc:
        fail(str(exc), USAGE)
        return None


@asynccontextmanager
async def _router(
    connect_timeout: float | None,
    on_event: Callable[[RouterEvent], object] | None = None,
    stats: str | None = None,
) -> AsyncIterator[Router]:
    """A Router whose tools keep their peers' own input schemas (defaults and all) for signatures,
    offered as `chat` offers them (`--strict auto`: `tools --openai` prints what `chat` sends);
    with `stats`, its calls are recorded into that statistics file."""
    limit = 30.0 if connect_timeout is None else connect_timeout
    async with (
        OpenAIPeerToolAdapter(strict=None, stats_file=stats) as adapter,
        Router(adapter=adapter, on_event=on_event, connect_timeout=limit) as router,
    ):
        yield router


# -- tools ------------------------------------------------------------------------------------


def _run_tools(args: argparse.Namespace) -> int:
    if args.gateway or args.topic:
        return _run_in_topic(args, lambda router, _: _print_tools(router, router.tools, {}, args))
    peers = load_peers(args)
    if peers is None:
        return USAGE
    return run_command(lambda: _tools(peers, args))


async def _tools(peers: Mapping[str, PeerSpec], args: argparse.Namespace) -> int:
    async with _router(args.connect_timeout) as router:
        async with status_line() as status:
            failed = await join_peers(router, peers, status)
        # Peers join concurrently; list them in the config's order.
        tools = [tool for peer in peers for tool in router.adapter.tools_of(peer)]
        code = await _print_tools(router, tools, failed, args, order=list(peers))
    return 1 if failed else code


async def _print_tools(
    router: Router,
    tools: Sequence[PublishedTool],
    failed: Mapping[str, str],
    args: argparse.Namespace,
    order: Sequence[str] = (),
) -> int:
    ids = [peer for peer in order if peer in router.peers] or router.peers
    joined = {peer: len(router.adapter.tools_of(peer)) for peer in ids}
    if args.patterns:
        tools = [tool for tool in tools if any(fnmatchcase(tool.name, p) for p in args.patterns)]
        if not tools:
            return fail(f"no tool matches {' or '.join(map(repr, args.patterns))}", 1)
    if args.openai:
        getter = {
            "chat": router.get_openai_tools,
            "responses": router.get_responses_tools,
            "functions": router.get_openai_functions,
        }[args.openai]
        entries: list[Any] = list(getter(max_tools=None))
        by_name = {entry.get("function", entry)["name"]: entry for entry in entries}
        print_json(sys.stdout, [by_name[tool.name] for tool in tools if tool.name in by_name])
    elif args.json:
        print_json(sys.stdout, tools_document(tools, joined, failed))
    else:
        for row in tools_table(tools, terminal_width(sys.stdout), schemas=args.schema):
            write(sys.stdout, row)
        peers = f"{len(joined)} peer{'' if len(joined) == 1 else 's'}"
        of = f" of {sum(joined.values())}" if args.patterns else ""
        write(sys.stdout, f"{len(tools)}{of} tools from {peers}: {', '.join(joined) or 'none'}")
    return 0


# -- call -------------------------------------------------------------------------------------


def _run_call(args: argparse.Namespace) -> int:
    try:
        raw = _read_arguments(args.arguments)
    except UsageError as exc:
        return fail(str(exc), USAGE)
    if args.gateway or args.topic:
        return _run_in_topic(args, lambda router, status: _answer(router, args.tool, raw, args, {}, status))
    peers = load_peers(args)
    if peers is None:
        return USAGE
    return run_command(lambda: _call(peers, raw, args))


def _read_arguments(items: Sequence[str]) -> RawArguments:
    if "-" in items:
        text = sys.stdin.read()
        if not text.lstrip().startswith("{"):
            raise UsageError("standard input ('-') must hold a JSON object like {\"key\": 1}")
        items = [text if item == "-" else item for item in items]
    return split_arguments(items)


class _Progress:
    """Shows the progress notifications of the running call on the status line (else one line each)."""

    status: Status | None = None

    def event(self, event: RouterEvent) -> None:
        if not isinstance(event, CallProgress) or self.status is None:
            return
        done = f"{event.progress:g}" + ("" if event.total is None else f"/{event.total:g}")
        text = f"{event.name}: {done}" + (f" {event.message}" if event.message else "")
        if self.status.live:
            self.status.set(text)
        else:
            self.status.say(text)


async def _call(peers: Mapping[str, PeerSpec], raw: RawArguments, args: argparse.Namespace) -> int:
    progress = _Progress()
    async with _router(args.connect_timeout, progress.event, stats_file(args)) as router:
        async with status_line() as status:
            name = args.tool
            # Most names start with their peer's id: try that peer alone before starting every server.
            owners = sorted((p for p in peers if name.startswith(f"{p}__")), key=len, reverse=True)
            first = {owner: peers[owner] for owner in owners[:1]}
            failed = await join_peers(router, first, status)
            if not first or failed or name not in {t.name for t in router.tools}:
                rest = {p: spec for p, spec in peers.items() if p not in router.peers and p not in failed}
                failed |= await join_peers(router, rest, status)
            progress.status = status
            return await _answer(router, name, raw, args, failed, status)


async def _answer(
    router: Router,
    name: str,
    raw: RawArguments,
    args: argparse.Namespace,
    failed: Mapping[str, str],
    status: Status,
) -> int:
    tool = _find(router.tools, name)
    if tool is None:
        return fail(_unknown(name, router.tools, failed), 1)
    try:
        arguments = typed_arguments(raw, tool.input_schema)
    except UsageError as exc:
        return fail(f"{exc}; {signature(tool.name, tool.input_schema)}", USAGE)
    unknown = _unknown_parameters(tool.input_schema, arguments)
    if unknown:
        return fail(f"{tool.name} {unknown}: {signature(tool.name, tool.input_schema)}", USAGE)
    required = tool.input_schema.get("required")
    needed = required if isinstance(required, list) else []
    missing = [key for key in needed if isinstance(key, str) and key not in arguments]
    if missing:
        needs = ", ".join(missing)
        return fail(f"{tool.name} needs {needs}: {signature(tool.name, tool.input_schema)}", USAGE)
    problems = _problems(tool, arguments)
    if problems:
        return fail(f"{tool.name}: {'; '.join(problems)}: {signature(tool.name, tool.input_schema)}", USAGE)
    status.set(f"calling {tool.name}")
    outcome = await router.call(tool.name, arguments, call_timeout=args.timeout)
    status.idle()
    why = outcome.text.removeprefix("Error: ")
    if args.json:
        print_json(sys.stdout, result_json(outcome.result, why))
    elif outcome.result is not None and not outcome.is_error:
        text = result_text(outcome.result)
        write(sys.stdout, for_terminal(text) if terminal_width(sys.stdout) else text)
    elif outcome.result is not None:
        status.say(f"{tool.name} answered with an error: {result_text(outcome.result)}")
    else:
        status.say(why)
    return 1 if outcome.is_error else 0


def _unknown_parameters(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """What is wrong with argument names a schema that takes no others does not have, if any."""
    properties = schema.get("properties")
    if schema.get("additionalProperties") is not False or not isinstance(properties, Mapping):
        return None
    names = [str(key) for key in properties]
    for key in arguments:
        if key not in properties:
            close = get_close_matches(key, names, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            return f"has no parameter {json.dumps(key, ensure_ascii=False)}{hint}"
    return None


def _problems(tool: PublishedTool, arguments: dict[str, Any]) -> list[str]:
    """How the arguments break the tool's schema, for a person (none when the adapter would take them)."""
    try:
        prepare_arguments(tool, arguments)
    except ArgumentsError:
        try:
            return [problem.removeprefix("at $.") for problem in tool.validator().errors(arguments)]
        except ArgumentsError:  # the check cannot be made: the adapter answers the call itself
            return []
    return []


def _find(tools: Sequence[PublishedTool], name: str) -> PublishedTool | None:
    """The tool by public name, or by its own name when exactly one peer has a tool so named."""
    exact = [tool for tool in tools if tool.name == name]
    own = [tool for tool in tools if tool.tool == name]
    return exact[0] if exact else own[0] if len(own) == 1 else None


def _unknown(name: str, tools: Sequence[PublishedTool], failed: Mapping[str, str]) -> str:
    shown = json.dumps(name, ensure_ascii=False) if len(name) <= 80 else f"{name[:64]!r}…"
    message = f"there is no tool named {shown}"
    if failed:
        message += f" among the servers that connected ({', '.join(failed)} could not)"
    close = NameSuggester([(tool.name, tool.tool) for tool in tools]).suggest(name)
    if close:
        listed = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]
        message += f"; did you mean {listed}?"
    elif tools:
        message += "; 'mcpx-router tools' lists them"
    return message


# -- MCPx topics ------------------------------------------------------------------------------


def _run_in_topic(args: argparse.Namespace, body: Callable[[Router, Status], Awaitable[int]]) -> int:
    """Join the topic as a participant, run `body` with its participants as peers, leave."""
    if not (args.gateway and args.topic):
        return fail("give both --gateway and --topic", USAGE)
    progress = _Progress()

    async def run() -> int:
        provider = static_token(args.token) if args.token else None
        limits = {} if args.connect_timeout is None else {"handshake_timeout": args.connect_timeout}
        async with _router(None, progress.event, stats_file(args)) as router:
            async with status_line() as status:
                status.set(f"joining topic {args.topic} at {', '.join(args.gateway)}")
                try:
                    topic = await router.join_topic(
                        args.gateway,
                        args.topic,
                        args.participant_id,
                        token_provider=provider,
                        send_rate=args.send_rate,
                        **limits,
                    )
                except RouterError as exc:
                    return fail(str(exc), 1)
                status.idle()
                for participant, reason in topic.skipped.items():
                    status.say(f"participant {participant!r} skipped: {reason}")
                progress.status = status
                return await body(router, status)

    return run_command(run)
