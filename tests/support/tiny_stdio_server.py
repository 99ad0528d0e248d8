"""A minimal MCP server over stdio, standard library only, so that it starts in milliseconds.

It speaks the initialize handshake (2025-11-25) and answers `server/discover` with "method not
found", so `mcp.Client(mode="auto")` falls back to the handshake. Tools:

- ``echo(text)``: returns the text;
- ``pid()``: returns this process's id;
- ``sleep(seconds)``: answers after a while, sending a progress notification every 0.05 s when
  the request carries a progress token; a `notifications/cancelled` for it ends it early;
- ``add_tool(name)``: adds a tool named ``name`` (it echoes) and sends
  ``notifications/tools/list_changed`` (not with ``quiet: true``); ``remove_tool(name)`` takes one
  away the same way.

``tools/list`` is paginated, ``--page-size`` tools per page (default: all on one page).
``--tools N`` adds N more tools ``t0``... ``tN-1``. Every notification, `tools/call` and `ping`
received from the client is appended as a JSON line to the file named by the environment
variable ``TINY_SERVER_LOG``, as it is read (so in the order the client wrote them).
The process exits when its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

_write_lock = threading.Lock()
_tools_lock = threading.Lock()
_cancelled: set[Any] = set()


def _send(message: dict[str, Any]) -> None:
    data = json.dumps(message) + "\n"
    with _write_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def _tool(name: str, description: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if properties:
        schema["required"] = sorted(properties)
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS: dict[str, dict[str, Any]] = {
    "echo": _tool("echo", "Echo the text back.", {"text": {"type": "string"}}),
    "pid": _tool("pid", "The server's process id."),
    "sleep": _tool("sleep", "Answer after some seconds.", {"seconds": {"type": "number"}}),
    "add_tool": _tool("add_tool", "Offer one more tool.", {"name": {"type": "string"}}),
    "remove_tool": _tool("remove_tool", "Stop offering a tool.", {"name": {"type": "string"}}),
}


def _text(request_id: Any, text: str) -> None:
    _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def _call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "pid":
        _text(request_id, str(os.getpid()))
    elif name == "sleep":
        token = (params.get("_meta") or {}).get("progressToken")
        deadline = time.monotonic() + float(args.get("seconds", 1))
        step = 0
        while time.monotonic() < deadline:
            if request_id in _cancelled:
                return  # a cancelled request is never answered
            if token is not None:
                step += 1
                _send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "message": f"step {step}"},
                    }
                )
            time.sleep(0.05)
        _text(request_id, "slept")
    elif name in ("add_tool", "remove_tool"):
        with _tools_lock:
            if name == "add_tool":
                TOOLS[args["name"]] = _tool(args["name"], "An added tool.", {"text": {"type": "string"}})
            else:
                TOOLS.pop(args["name"], None)
        if not args.get("quiet"):
            _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        _text(request_id, "done")
    elif name in TOOLS:
        _text(request_id, str(args.get("text", name)))
    else:
        _text(request_id, f"unknown tool {name}")


def _list(request_id: Any, params: dict[str, Any], page_size: int) -> None:
    with _tools_lock:
        tools = list(TOOLS.values())
    start = int(params.get("cursor") or 0)
    page = tools[start : start + page_size]
    result: dict[str, Any] = {"tools": page}
    if start + page_size < len(tools):
        result["nextCursor"] = str(start + page_size)
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


def _log(message: dict[str, Any]) -> None:
    path = os.environ.get("TINY_SERVER_LOG")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(message) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page-size", type=int, default=10_000)
    parser.add_argument("--tools", type=int, default=0)
    options = parser.parse_args()
    for i in range(options.tools):
        TOOLS[f"t{i}"] = _tool(f"t{i}", f"Tool number {i}.", {"text": {"type": "string"}})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            _log(message)
            if method == "notifications/cancelled":
                _cancelled.add(params.get("requestId"))
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "tiny", "version": "1"},
            }
            _send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            _list(request_id, params, options.page_size)
        elif method == "tools/call":
            _log(message)
            threading.Thread(target=_call, args=(request_id, params), daemon=True).start()
        elif method == "ping":
            _log(message)
            _send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            _send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
