"""A stdio MCP server for the command-line tests, standard library only, with bad habits on demand.

- ``--before HEX``: write these bytes on stdout as soon as it starts (a banner, a log line, binary);
- ``--after HEX``: write these bytes on stdout after every answer, the handshake's included
  (a chatty server);
- ``--hang``: never answer ``initialize`` (a server stuck while starting);
- ``--mark PATH``: append ``started PID`` to PATH when it starts and ``call NAME`` when a tool
  call arrives, so that a test knows what it is doing.

Tools: ``echo(text)`` answers the text; ``wait()`` never answers. The process exits when its
stdin closes; it keeps Python's default SIGINT handling (a KeyboardInterrupt traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.", "inputSchema": _SCHEMA},
    {"name": "wait", "description": "Never answer.", "inputSchema": {"type": "object"}},
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="")
    parser.add_argument("--after", default="")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--mark", default=None)
    options = parser.parse_args()
    out = sys.stdout.buffer
    after = bytes.fromhex(options.after)

    def mark(text: str) -> None:
        if options.mark:
            with open(options.mark, "a") as file:
                file.write(text + "\n")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message).encode() + b"\n" + after)
        out.flush()

    out.write(bytes.fromhex(options.before))
    out.flush()
    mark(f"started {os.getpid()}")
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            if options.hang:
                continue
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "cli-test", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            mark(f"call {params.get('name')}")
            if params.get("name") == "echo":
                text = str((params.get("arguments") or {}).get("text", ""))
                content = [{"type": "text", "text": text}]
                send({"jsonrpc": "2.0", "id": request_id, "result": {"content": content}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
