"""`mcpx-router servers`: the MCP configs found in the usual places and the servers each names.

Nothing is started: this says which file the other commands would use without `--config`, and
what is in the others.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._console import fail
from .._errors import RouterError
from ..peers import load_config
from ._discover import Candidate, discover, here
from ._render import print_json, write
from ._signature import one_line

__all__ = ["add_servers_command"]


def add_servers_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register the `servers` subcommand."""
    parser = commands.add_parser(
        "servers",
        help="show the MCP configs found in the usual places, and their servers",
        description="List every MCP config found in the places the other commands look when given no "
        "--config (./mcp.json, ./.mcp.json, .vscode/mcp.json, .cursor/mcp.json, ~/.cursor/mcp.json, "
        "~/.claude.json, Claude Desktop's, Windsurf's, Gemini CLI's), the first of them marked as the one "
        "they use, with the servers each names. Nothing is started.",
        epilog="exit status: 0 at least one config found; 1 none",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print a JSON list of {"path", "host", "default", "servers": {id: command or URL}} '
        '(or "error" instead of "servers")',
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show more log records")
    parser.set_defaults(run=_run_servers)


def _run_servers(args: argparse.Namespace) -> int:
    places = here()
    chosen = discover(places)
    found = [place for place in places if place.path.is_file() and (not place.shared or place == chosen)]
    if not found:
        looked = ", ".join(str(place.path) for place in places)
        return fail(f"no MCP config found; looked for {looked}", 1)
    entries = [_entry(place, place == chosen) for place in found]
    if args.json:
        print_json(sys.stdout, entries)
        return 0
    for entry in entries:
        mark = "  (used when no --config is given)" if entry["default"] else ""
        write(sys.stdout, f"{entry['path']} ({entry['host']}){mark}")
        if "error" in entry:
            write(sys.stdout, f"  cannot be used: {entry['error']}")
            continue
        width = max((len(peer) for peer in entry["servers"]), default=0)
        for peer, what in entry["servers"].items():
            write(sys.stdout, one_line(f"  {peer:<{width}}  {what}"))
    return 0


def _entry(place: Candidate, default: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": str(place.path), "host": place.host, "default": default}
    try:
        entry["servers"] = {peer: spec.describe() for peer, spec in load_config(place.path).items()}
    except RouterError as exc:
        entry["error"] = str(exc)
    return entry
