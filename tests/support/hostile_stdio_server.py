"""A stdio MCP server (standard library only) that answers badly on purpose.

Each tool answers in its own wrong way (see `ANSWERS`); `ok` answers "ok" and `echo` its `text`
argument. Options:

- `--bad-listing`: tools/list (and prompts/list, resources/list) also hold malformed entries: an
  input schema that is a string or null, a tool without a name or with a numeric name, schemas
  nested 120 and 5,000 levels deep;
- `--garbage N`: N lines that are not JSON-RPC after the handshake, of two kinds;
- `--blocks N`, `--mb N`: the sizes the `blocks` and `huge` tools answer with (200,000 and 50).
"""

from __future__ import annotations

import json
import sys
from typing import Any

OPTIONS = sys.argv[1:]


def _option(name: str, default: int) -> int:
    return int(OPTIONS[OPTIONS.index(name) + 1]) if name in OPTIONS else default


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _tool(name: Any, schema: Any = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"} if schema is None else schema}


TOOLS: list[Any] = [
    _tool(name)
    for name in (
        "ok",
        "echo",
        "five",
        "null",
        "not_json",
        "deep_result",
        "deeper_result",
        "content_string",
        "unknown_block",
        "empty",
        "failing",
        "long_error",
        "blocks",
        "huge",
    )
]
if "--bad-listing" in OPTIONS:
    TOOLS += [
        _tool("schema_string", "string"),
        {"name": "schema_null", "inputSchema": None},
        {"inputSchema": {"type": "object"}},
        _tool(42),
        _tool("nested_95", _nested(95)),
        _tool("nested_120", _nested(120)),
        _tool("nested_5000", _nested(5000)),
    ]
PROMPTS: list[Any] = [{"name": "greet"}]
RESOURCES: list[Any] = [{"uri": "file:///a.txt", "name": "a"}]
if "--bad-listing" in OPTIONS:
    PROMPTS += [{"description": "no name"}, {"name": 7}]
    RESOURCES += [{"name": "no uri"}, {"uri": 5, "name": "b"}]


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _send(message: dict[str, Any]) -> None:
    _write(json.dumps(message))


def _deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def _answer(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    head = f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},'
    if name == "ok":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "ok"}]}})
    elif name == "echo":
        text = arguments.get("text", "")
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
    elif name == "five":
        _write(head + '"result":5}')
    elif name == "null":
        _write(head + '"result":null}')
    elif name == "not_json":
        _write(head + '"result":{"content":[{"type":"text","text":"cut sho')
    elif name in ("deep_result", "deeper_result"):
        levels = 300 if name == "deep_result" else 5000
        _write(head + f'"result":{{"content":[],"structuredContent":{_deep(levels)}}}}}')
    elif name == "content_string":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "hello"}})
    elif name == "unknown_block":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "hologram"}]}})
    elif name == "empty":
        _send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif name == "failing":
        _send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "database down"}})
    elif name == "long_error":
        message = "E" * 1_000_000 + " the end"
        _send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}})
    elif name == "blocks":
        count = _option("--blocks", 200_000)
        blocks = ",".join(f'{{"type":"text","text":"block {i}"}}' for i in range(count))
        _write(head + f'"result":{{"content":[{blocks}]}}}}')
    elif name == "huge":
        size = _option("--mb", 50) * 1_000_000
        _write(head + '"result":{"content":[{"type":"text","text":"' + "x" * (size - 3) + 'end"}]}}')


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            if method == "notifications/initialized":
                for index in range(_option("--garbage", 0)):
                    _write(f"log line {index}" if index % 2 else '{"not": "json-rpc"}')
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            _write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}))
            continue
        elif method == "prompts/list":
            result = {"prompts": PROMPTS}
        elif method == "resources/list":
            result = {"resources": RESOURCES}
        elif method == "resources/templates/list":
            result = {"resourceTemplates": []}
        elif method == "tools/call":
            params = message.get("params") or {}
            _answer(request_id, params.get("name"), params.get("arguments") or {})
            continue
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            _send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        _send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    sys.setrecursionlimit(20_000)  # json.dumps of the listing nested 5,000 deep
    main()
