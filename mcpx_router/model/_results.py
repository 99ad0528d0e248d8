"""MCP `CallToolResult` → the text a model reads (pure functions, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp_types as mt

__all__ = ["render", "render_content", "render_result", "truncate"]

NO_OUTPUT = "(the tool returned no output)"


def render(result: mt.CallToolResult, limit: int | None) -> tuple[str, bool]:
    """`render_result`, its text cut to about `limit` characters (`truncate`): what the model reads."""
    text, is_error = render_result(result)
    if limit is None or len(text) <= limit:
        return text, is_error
    return truncate(text, limit), is_error


def render_result(result: mt.CallToolResult) -> tuple[str, bool]:
    """Return (text for the model, whether the peer reported an error).

    Text blocks are joined; `structuredContent` is added as JSON unless a text block already
    carries it; images, audio and resources are described, never dumped.

    Example:
        >>> render_result(mt.CallToolResult(content=[mt.TextContent(type="text", text="hi")]))
        ('hi', False)
    """
    content, structured = result.content, result.structured_content
    if len(content) == 1 and type(content[0]) is mt.TextContent:
        # The usual result: one text block, perhaps repeated as {"result": text}.
        text = content[0].text
        if structured is None or structured == text or structured == {"result": text}:
            return text or NO_OUTPUT, bool(result.is_error)
    parts = [render_content(block) for block in content]
    if structured is not None and not _duplicated(structured, result.content):
        parts.append(_dump(structured))
    text = "\n".join(part for part in parts if part) or NO_OUTPUT
    return text, bool(result.is_error)


def render_content(block: Any) -> str:
    """One content block as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_size(_b64_len(block.data))}]"
    if kind == "resource":
        resource = block.resource
        mime = resource.mime_type or "unknown type"
        if isinstance(resource, mt.TextResourceContents):
            return f"[resource {resource.uri} ({mime})]\n{resource.text}"
        return f"[resource {resource.uri} ({mime}, {_size(_b64_len(resource.blob))})]"
    if kind == "resource_link":
        details = ", ".join(
            d for d in (block.mime_type, None if block.size is None else _size(block.size)) if d
        )
        line = f"[resource link {block.name}: {block.uri}" + (f" ({details})" if details else "") + "]"
        return f"{line} {block.description}" if block.description else line
    return f"[{kind or 'unknown'} content]"


def _duplicated(structured: Any, content: Sequence[Any]) -> bool:
    texts = [block.text for block in content if getattr(block, "type", None) == "text"]
    if not texts:
        return False
    joined = "\n".join(texts) if len(texts) > 1 else texts[0]
    candidates = [structured]
    # Servers that wrap a plain return value as {"result": value} also send the value as text.
    if isinstance(structured, dict) and len(structured) == 1:
        candidates.append(next(iter(structured.values())))
    # The cheap test first: most results that repeat themselves repeat a string verbatim.
    if any(isinstance(c, str) and (c == joined or c in texts) for c in candidates):
        return True
    decoded: dict[str, Any] = {}

    def carries(text: str, value: Any) -> bool:
        """Whether `text` is `value` itself or its JSON (each text is parsed at most once)."""
        if isinstance(value, str) and text == value:
            return True
        if text not in decoded:
            decoded[text] = _loads(text)
        found = decoded[text]
        # In Python True == 1: a boolean is only carried by a boolean.
        return (
            found is not _NOT_JSON and isinstance(found, bool) == isinstance(value, bool) and found == value
        )

    for candidate in candidates:
        if any(carries(text, candidate) for text in (joined, *texts)):
            return True
        # A returned list is sent one text block per item.
        if isinstance(candidate, list) and len(candidate) == len(texts):
            if all(carries(text, item) for text, item in zip(texts, candidate, strict=True)):
                return True
    return False


_NOT_JSON: Any = object()
_JSON_START = frozenset('{["-0123456789tfn')


def _loads(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in _JSON_START:
        return _NOT_JSON
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _b64_len(data: str) -> int:
    """Decoded size of base64 text, without decoding it."""
    stripped = data.strip()
    return max(0, len(stripped) * 3 // 4 - stripped[-2:].count("="))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def truncate(text: str, limit: int | None) -> str:
    """Cut `text` to about `limit` characters, saying clearly that it was cut and by how much."""
    if limit is None or len(text) <= limit:
        return text
    marker = f"\n[… output truncated: {len(text) - limit} of {len(text)} characters omitted …]\n"
    head = max(0, (limit * 4) // 5)
    tail = max(0, limit - head)
    return text[:head] + marker + (text[-tail:] if tail else "")
