"""A stdio MCP server (standard library only) that answers badly on purpose.

Each tool answers in its own wrong way (see `ANSWERS`); `ok` answers "ok", `echo` its `text`
argument and `listings` how many times its tools were listed. Options:

- `--bad-listing`: tools/list (and prompts/list, resources/list) also hold malformed entries: an
  input schema that is a string or null, a tool without a name or with a numeric name, schemas
  nested 120 and 5,000 levels deep;
- `--garbage N`: N lines that are not JSON-RPC after the handshake, of two kinds;
- `--blocks N`, `--mb N`: the sizes the `blocks` and `huge` tools answer with (200,000 and 50);
- `--many N`: N more tools in tools/list, each with a schema of a few described parameters;
- `--churn SECONDS`: after the handshake, `notifications/tools/list_changed` every SECONDS (the
  listing the same each time), from a thread beside the reader.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

OPTIONS = sys.argv[1:]


def _option(name: str, default: int) -> int:
    return int(OPTIONS[OPTIONS.index(name) + 1]) if name in OPTIONS else default


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _nested_text(levels: int) -> str:
    """`_nested(levels)` as JSON text."""
    return '{"type":"object","properties":{"x":' * levels + '{"type":"string"}' + "}}" * levels


def _tool(name: Any, schema: Any = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"} if schema is None else schema}


def _generated(index: int) -> dict[str, Any]:
    """One of `--many`'s tools: a name, a sentence, three parameters as real servers describe them."""
    return {
        "name": f"record_{index}_lookup",
        "description": f"Look up record {index} in table {index % 97} and return its fields as JSON.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "record_id": {"type": "string", "description": "The record's id, as the table gives it."},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Fields to return."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            },
            "required": ["record_id"],
        },
    }


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
        "listings",
    )
]
BAD_TOOLS: list[Any] = [
    _tool("schema_string", "string"),
    {"name": "schema_null", "inputSchema": None},
    {"inputSchema": {"type": "object"}},
    _tool(42),
    _tool("nested_95", _nested(95)),
    '{"name":"nested_120","inputSchema":' + _nested_text(120) + "}",
    '{"name":"nested_5000","inputSchema":' + _nested_text(5000) + "}",
]
"""Entries given as text are written as they are (too deep for `json.dumps`)."""
PROMPTS: list[Any] = [{"name": "greet"}]
RESOURCES: list[Any] = [{"uri": "file:///a.txt", "name": "a"}]
BAD_PROMPTS: list[Any] = [{"description": "no name"}, {"name": 7}]
BAD_RESOURCES: list[Any] = [{"name": "no uri"}, {"uri": 5, "name": "b"}]


_LISTINGS = [0]
"""How many tools/list requests were answered (the `listings` tool tells)."""
_LOCK = threading.Lock()
"""Held while a line is written: the `--churn` thread writes beside the reader."""
_SINK: list[str] | None = None
"""Where `respond` collects the lines written for one message (for `hostile_http_server.py`)."""


def _write(text: str) -> None:
    if _SINK is not None:
        _SINK.append(text)
        return
    with _LOCK:
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
    elif name == "listings":
        text = str(_LISTINGS[0])
        _send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
    elif name == "huge":
        size = _option("--mb", 50) * 1_000_000
        _write(head + '"result":{"content":[{"type":"text","text":"' + "x" * (size - 3) + 'end"}]}}')


def respond(message: dict[str, Any]) -> list[str]:
    """The lines `main` writes for `message` (with the options in `OPTIONS`)."""
    global _SINK
    _SINK = []
    try:
        _handle(message, "--bad-listing" in OPTIONS)
        return _SINK
    finally:
        _SINK = None


def _churn(seconds: float) -> None:
    while True:
        time.sleep(seconds)
        _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            _handle(json.loads(line), "--bad-listing" in OPTIONS)


def _handle(message: dict[str, Any], bad_listing: bool) -> None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        if method == "notifications/initialized":
            for index in range(_option("--garbage", 0)):
                _write(f"log line {index}" if index % 2 else '{"not": "json-rpc"}')
            if "--churn" in OPTIONS:
                every = float(OPTIONS[OPTIONS.index("--churn") + 1])
                threading.Thread(target=_churn, args=(every,), daemon=True).start()
        return
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        _LISTINGS[0] += 1
        listed = TOOLS + BAD_TOOLS * bad_listing + [_generated(i) for i in range(_option("--many", 0))]
        tools = ",".join(t if isinstance(t, str) else json.dumps(t) for t in listed)
        _write(f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"tools":[{tools}]}}}}')
        return
    elif method == "prompts/list":
        result = {"prompts": PROMPTS + BAD_PROMPTS * bad_listing}
    elif method == "resources/list":
        result = {"resources": RESOURCES + BAD_RESOURCES * bad_listing}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": []}
    elif method == "tools/call":
        params = message.get("params") or {}
        _answer(request_id, params.get("name"), params.get("arguments") or {})
        return
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        _send({"jsonrpc": "2.0", "id": request_id, "error": error})
        return
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
