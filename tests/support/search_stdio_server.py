"""A stdio search peer for the group tests, on the plumbing of tiny_stdio_server (standard library only).

Tools: ``search(query)`` (declared read-only with ``--read-only``) and ``book(item)`` (no hints),
each answering with the peer's ``--name``; ``reshape()`` adds a ``limit`` parameter to
``search`` and announces the change. A call with an argument ``"die"`` (or ``"die@NAME"``, on
the peer of that name only) ends the process before it answers, as a peer that crashes
mid-call. Every `tools/call` is logged to ``TINY_SERVER_LOG`` as it is read
(tiny_stdio_server's log): the server's own record of what it was asked to run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import tiny_stdio_server as tiny

parser = argparse.ArgumentParser()
parser.add_argument("--name", required=True)
parser.add_argument("--read-only", action="store_true")
options, rest = parser.parse_known_args()
sys.argv = [sys.argv[0], *rest]

search = tiny._tool("search", "Search the web for a query.", {"query": {"type": "string"}})
if options.read_only:
    search["annotations"] = {"readOnlyHint": True}
tiny.TOOLS.clear()
tiny.TOOLS.update(
    search=search,
    book=tiny._tool("book", "Book an item.", {"item": {"type": "string"}}),
    reshape=tiny._tool("reshape", "Give search a limit parameter."),
)


def _call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if "die" in args.values() or f"die@{options.name}" in args.values():
        os._exit(3)
    if name == "reshape":
        tiny.TOOLS["search"]["inputSchema"]["properties"]["limit"] = {"type": "integer"}
        tiny._send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        tiny._text(request_id, "reshaped")
    elif name == "search":
        tiny._text(request_id, f"{options.name}: results for {args.get('query')}")
    elif name == "book":
        tiny._text(request_id, f"{options.name} booked {args.get('item')}")
    else:
        tiny._text(request_id, f"unknown tool {name}")


tiny._call = _call
tiny.main()
