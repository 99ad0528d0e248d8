"""`mcpx-router tools` and `mcpx-router call`: the peers of an `mcpServers` config, from a shell.

mcpx-router tools --config mcp.json            # the merged catalogue, one tool a line
mcpx-router tools --config mcp.json --json     # the Chat Completions `tools` list
mcpx-router call time__get_current_time '{"timezone": "UTC"}' --config mcp.json
mcpx-router tools --gateway http://127.0.0.1:8080 --topic room   # the participants of an MCPx topic
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from .._catalogue import PublishedTool
from .._console import add_verbose, positive_seconds, run_command
from .._errors import RouterError
from ..mcpx import static_token
from ..mcpx._topic_options import send_rate
from ..peers import PeerSpec, load_config
from ..peers._router import Router

__all__ = ["add_peer_commands"]


def add_peer_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the `tools` and `call` subcommands."""
    config_help = "an mcpServers JSON file, as desktop MCP hosts use (default: mcp.json)"
    tools = commands.add_parser(
        "tools",
        help="list the merged tool catalogue of the peers in a config file",
        description="Connect every server of an mcpServers config file and print the tools they offer, "
        "under the public names a model calls them by. Peers that cannot be reached are reported on "
        "standard error (exit status 1); the others are still listed.",
    )
    tools.add_argument("--config", default="mcp.json", help=config_help)
    tools.add_argument(
        "--json", action="store_true", help="print the Chat Completions `tools` list as JSON instead"
    )
    _topic_options(tools)
    _common_options(tools)
    tools.set_defaults(run=_run_tools)
    call = commands.add_parser(
        "call",
        help="call one tool of a peer in a config file and print the answer",
        description="Call a tool by its public name (as `tools` lists it) with JSON arguments and print "
        "the answer a model would get. Exit status 1 if the answer is an error.",
    )
    call.add_argument("name", help="the tool's public name, e.g. time__get_current_time")
    call.add_argument("arguments", nargs="?", default="{}", help="a JSON object (default: {})")
    call.add_argument("--config", default="mcp.json", help=config_help)
    call.add_argument("--timeout", type=float, default=60.0, help="seconds the call may take (default: 60)")
    _topic_options(call)
    _common_options(call)
    call.set_defaults(run=_run_call)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--connect-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds each peer's handshake and tool listing may take (default: 30 for the servers "
        "of a config, 10 for the participants of a topic)",
    )
    add_verbose(parser)


def _topic_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the participants of an MCPx topic as peers, instead of --config")
    group.add_argument("--gateway", help="the gateway's URL, e.g. http://127.0.0.1:8080")
    group.add_argument("--topic", help="the topic to join (with --gateway)")
    group.add_argument(
        "--id", dest="participant_id", default="mcpx-router", help="our participant id (default: mcpx-router)"
    )
    group.add_argument("--token", help="a pre-shared token (default: a development token from the gateway)")
    group.add_argument(
        "--send-rate",
        type=send_rate,
        default=50.0,
        metavar="RATE",
        help="frames a second we send at most, "
        "or N/min, N/h (default 50); match the gateway's per-participant rate limit",
    )


def _run_tools(args: argparse.Namespace) -> int:
    if args.gateway or args.topic:
        return _run_in_topic(args, lambda router: _topic_tools(router, args.json))
    peers = _load(args.config)
    if peers is None:
        return 2
    return run_command(lambda: _tools(peers, args.json, args.connect_timeout))


def _run_call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except ValueError as exc:
        return _fail(f"the arguments are not valid JSON ({exc}); give an object like '{{\"a\": 1}}'", 2)
    if not isinstance(arguments, dict):
        return _fail(f"the arguments must be a JSON object, not {type(arguments).__name__}", 2)
    if not args.timeout > 0:
        return _fail(f"--timeout must be a positive number of seconds, not {args.timeout}", 2)
    if args.gateway or args.topic:
        return _run_in_topic(args, lambda router: _answer(router, args.name, arguments, args.timeout))
    peers = _load(args.config)
    if peers is None:
        return 2
    return run_command(lambda: _call(peers, args.name, arguments, args.timeout, args.connect_timeout))


def _router(connect_timeout: float | None) -> Router:
    return Router() if connect_timeout is None else Router(connect_timeout=connect_timeout)


async def _tools(peers: Mapping[str, PeerSpec], as_json: bool, connect_timeout: float | None) -> int:
    async with _router(connect_timeout) as router:
        failed = await _join(router, peers)
        # Peers join concurrently; list them in the config's order.
        tools = [tool for peer in peers for tool in router.adapter.tools_of(peer)]
        _print_tools(router, tools, [peer for peer in peers if peer in router.peers], as_json)
    return 1 if failed else 0


async def _topic_tools(router: Router, as_json: bool) -> int:
    _print_tools(router, router.tools, router.peers, as_json)
    return 0


def _print_tools(
    router: Router, tools: Sequence[PublishedTool], joined: Sequence[str], as_json: bool
) -> None:
    if as_json:
        chat = {entry["function"]["name"]: entry for entry in router.get_openai_tools(max_tools=None)}
        print(json.dumps([chat[tool.name] for tool in tools], indent=2, ensure_ascii=False))
    else:
        width = max((len(tool.name) for tool in tools), default=0)
        for tool in tools:
            summary = (tool.origin[0] or tool.origin[1] or "").strip().splitlines()
            print(f"{tool.name:<{width}}  {summary[0] if summary else ''}".rstrip())
        print(f"{len(tools)} tools from {len(joined)} peer(s): {', '.join(joined) or 'none'}")


def _run_in_topic(args: argparse.Namespace, body: Callable[[Router], Awaitable[int]]) -> int:
    """Join the topic as a participant, run `body` with its participants as peers, leave."""
    if not (args.gateway and args.topic):
        return _fail("give both --gateway and --topic", 2)

    async def run() -> int:
        provider = static_token(args.token) if args.token else None
        limits = {} if args.connect_timeout is None else {"handshake_timeout": args.connect_timeout}
        async with Router() as router:
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
                return _fail(str(exc), 1)
            for participant, reason in topic.skipped.items():
                print(f"mcpx-router: participant {participant!r} skipped: {reason}", file=sys.stderr)
            return await body(router)

    return run_command(run)


async def _answer(router: Router, name: str, arguments: dict[str, Any], limit: float) -> int:
    outcome = await router.call(name, arguments, call_timeout=limit)
    if outcome.is_error:
        return _fail(outcome.text, 1)
    print(outcome.text)
    return 0


async def _call(
    peers: Mapping[str, PeerSpec],
    name: str,
    arguments: dict[str, Any],
    limit: float,
    connect_timeout: float | None,
) -> int:
    async with _router(connect_timeout) as router:
        # Most names start with their peer's id: try that peer alone before starting every server.
        owners = sorted((p for p in peers if name.startswith(f"{p}__")), key=len, reverse=True)
        first = {owner: peers[owner] for owner in owners[:1]}
        failed = await _join(router, first)
        if not first or failed or name not in {t.name for t in router.tools}:
            rest = {p: spec for p, spec in peers.items() if p not in router.peers and p not in failed}
            failed += await _join(router, rest)
        if failed and name not in {t.name for t in router.tools}:
            # It may be the tool of a peer that could not join: each failure is reported above.
            return _fail(f"no tool named {name!r} among the peers that joined", 1)
        outcome = await router.call(name, arguments, call_timeout=limit)
    if outcome.is_error:
        return _fail(outcome.text, 1)
    print(outcome.text)
    return 0


async def _join(router: Router, peers: Mapping[str, PeerSpec]) -> list[str]:
    """Join each peer; report those that cannot join on standard error and return their ids."""
    failed: list[str] = []

    async def one(peer: str, spec: PeerSpec) -> None:
        try:
            await router.join(peer, spec)
        except RouterError as exc:
            failed.append(peer)
            print(f"mcpx-router: {exc}", file=sys.stderr)

    async with anyio.create_task_group() as tg:
        for peer, spec in peers.items():
            tg.start_soon(one, peer, spec)
    return failed


def _load(path: str) -> dict[str, PeerSpec] | None:
    try:
        return load_config(path)
    except RouterError as exc:
        _fail(str(exc), 2)
        return None


def _fail(message: str, code: int) -> int:
    print(f"mcpx-router: {message}", file=sys.stderr)
    return code
