"""What `tools` and `call` print: a table and a JSON document of the tools, and a tool's result.

`tools --json` prints one JSON object, whose shape is kept stable:

    {"tools": [{"name": "time__get_current_time", "peer": "time", "tool": "get_current_time",
                "title": null, "description": "...", "signature": "time__get_current_time(timezone: str)",
                "inputSchema": {...}}],
     "peers": [{"id": "time", "connected": true, "tools": 2},
               {"id": "ghost", "connected": false, "error": "..."}]}

`call --json` prints the peer's `CallToolResult` as MCP has it (`content`, `structuredContent`,
`isError`), or, when no result came back (timeout, lost connection), `{"content": [{"type":
"text", "text": why}], "isError": true}`. Any JSON printed is valid JSON: numbers JSON cannot
hold (NaN, infinities) are written as the strings "NaN", "Infinity", "-Infinity", and the text
is ASCII-escaped when the output cannot encode it.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import mcp_types as mt

from .._catalogue import PublishedTool
from .._errors import redact
from ..model._results import render_content
from ._signature import one_line, signature

__all__ = ["dump_json", "result_json", "result_text", "tools_document", "tools_table", "write"]

_WIDEST_NAME = 56
"""Signatures longer than this do not widen the table's first column."""
_NARROWEST = 20


def write(stream: TextIO, text: str) -> None:
    """Write `text` and a newline: what the stream cannot encode is escaped, never an error."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    stream.write(text + "\n")
    stream.flush()


def terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal `stream` writes to, or None when it is not a terminal."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns


def for_terminal(text: str) -> str:
    """`text` with control characters other than newlines and tabs escaped (no escape sequences)."""
    return one_line(text, keep="\n\t")


def summary(tool: PublishedTool) -> str:
    """The first line of the peer's description of the tool (its title if it has none)."""
    lines = (tool.origin[0] or tool.origin[1] or "").strip().splitlines()
    return one_line(lines[0].strip()) if lines else ""


def tools_table(tools: Sequence[PublishedTool], width: int | None, schemas: bool = False) -> list[str]:
    """One row per tool: its signature and description, aligned.

    On a terminal (`width` given) a signature too long for the first column puts the description
    on the next line, and descriptions are cut to the width; elsewhere every tool is one line.
    With `schemas`, each row is followed by the tool's input schema, indented.
    """
    signatures = [signature(tool.name, tool.input_schema) for tool in tools]
    widest = max((len(s) for s in signatures), default=0)
    column = min(widest, _WIDEST_NAME if width is None else max(_NARROWEST, width // 2))
    room = None if width is None else max(_NARROWEST, width - column - 3)
    rows: list[str] = []
    for tool, sig in zip(tools, signatures, strict=True):
        text = summary(tool)
        if room is not None and len(text) > room:
            text = text[: room - 1].rstrip() + "…"
        if not text:
            rows.append(sig)
        elif len(sig) <= column or width is None:
            rows.append(f"{sig:<{column}}  {text}")
        else:
            rows += [sig, f"{'':<{column}}  {text}"]
        if schemas:
            shown = dump_json(dict(tool.input_schema), indent=2)
            rows += ["    " + line for line in shown.splitlines()]
    return rows


def tools_document(
    tools: Sequence[PublishedTool], joined: Mapping[str, int], failed: Mapping[str, str]
) -> dict[str, Any]:
    """The `tools --json` document (see the module docstring): the tools, and every peer's state."""
    peers: list[dict[str, Any]] = [{"id": p, "connected": True, "tools": n} for p, n in joined.items()]
    peers += [{"id": p, "connected": False, "error": redact(why)} for p, why in failed.items()]
    return {
        "tools": [
            {
                "name": tool.name,
                "peer": tool.peer,
                "tool": tool.tool,
                "title": tool.origin[1],
                "description": tool.origin[0],
                "signature": signature(tool.name, tool.input_schema),
                "inputSchema": tool.input_schema,
            }
            for tool in tools
        ],
        "peers": peers,
    }


def result_text(result: mt.CallToolResult) -> str:
    """A tool's result for a person: text as text, structured content as indented JSON, the rest described."""
    structured = result.structured_content
    texts = [block.text for block in result.content if isinstance(block, mt.TextContent)]
    if isinstance(structured, dict) and list(structured) == ["result"]:
        # A plain return value wrapped as {"result": value}: its text says it as the tool meant it.
        if any(_carries(text, structured["result"]) for text in texts):
            structured = None
    shown = structured is None
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            if not shown and _carries(block.text, structured):
                parts.append(dump_json(structured, indent=2))
                shown = True
            elif structured is None or not _carries(block.text, structured):
                parts.append(block.text)
        else:
            parts.append(render_content(block))
    if not shown:
        parts.append(dump_json(structured, indent=2))
    return "\n".join(parts) if parts else "(the tool returned no output)"


def _carries(text: str, value: Any) -> bool:
    """Whether `text` is `value` itself or its JSON (as servers send structured results as text too)."""
    candidates = [value]
    if isinstance(value, dict) and len(value) == 1:
        candidates.append(next(iter(value.values())))
    if any(isinstance(c, str) and c == text for c in candidates):
        return True
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return any(isinstance(decoded, bool) == isinstance(c, bool) and decoded == c for c in candidates)


def result_json(result: mt.CallToolResult | None, why: str) -> dict[str, Any]:
    """The `call --json` document: the result as MCP has it, or an error result saying `why`."""
    if result is None:
        return {"content": [{"type": "text", "text": why}], "isError": True}
    try:
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    except ValueError:  # text pydantic cannot encode (a lone surrogate): JSON escapes it instead
        dumped = result.model_dump(mode="python", by_alias=True, exclude_none=True)
    dumped.setdefault("isError", bool(result.is_error))
    return dumped


def dump_json(value: Any, *, indent: int | None = 2, ascii_only: bool = False) -> str:
    """JSON text of `value` that any JSON parser reads (see the module docstring)."""
    try:
        return json.dumps(value, indent=indent, ensure_ascii=ascii_only, allow_nan=False, default=str)
    except ValueError:
        return json.dumps(
            _finite(value), indent=indent, ensure_ascii=ascii_only, allow_nan=False, default=str
        )


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def print_json(stream: TextIO, value: Any) -> None:
    """Print `value` as JSON on `stream`, escaped to ASCII if the stream cannot encode it as is."""
    text = dump_json(value)
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        text = dump_json(value, ascii_only=True)
    stream.write(text + "\n")
    stream.flush()
