"""A stdio MCP server (standard library only) whose listing holds what Python's `json` writes but
JSON does not have: `NaN` and `Infinity`, and with `--lone-surrogate`, a lone surrogate escape.

It speaks the initialize handshake (2025-11-25); its tools answer "ok".
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _tool(name: str, prop: dict[str, Any], description: str = "A tool.") -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": {"type": "number", **prop}}}
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    _tool("fine", {"maximum": 10}),
    _tool("nan_bound", {"maximum": float("nan")}),
    {"name": "huge", "inputSchema": {"type": "object", "properties": {"x": {"minimum": "@"}}}},
    _tool("infinite_default", {"default": float("inf")}),
]


def _send(message: dict[str, Any]) -> None:
    # `-1e400` is read back as -inf: written by hand, since `json` would write -Infinity.
    sys.stdout.write(json.dumps(message).replace('"@"', "-1e400") + "\n")
    sys.stdout.flush()


def main() -> None:
    if "--lone-surrogate" in sys.argv:
        TOOLS.append(_tool("worn", {}, description="Half an emoji: \ud83d"))
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            _send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        _send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
