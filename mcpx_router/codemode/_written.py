"""Code mode's calls written as text (`code_mode=` with `text_calls=True` in the loops).

A small model offered `run_python` and `find_tools` often calls neither natively: it writes the
call as text (any form `_text_calls` reads) or simply writes a fenced ```python block. A reply
that called nothing natively is read for written calls of the two functions first; when it
holds none, its first block fenced as ```python (or ```py, ```python3) and closed is taken as
`run_python(code=<block>)`. One block per reply, never one fenced otherwise (or not at all),
never one cut short by the token limit. The assistant message is rewritten with the call as
`tool_calls` (Responses: followed by a `function_call` item), the same ids the answers carry,
so the conversation stays valid for the API.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ..model.calls._text_calls import Resolve, or_unknown
from ..model.calls._written_calls import (
    _as_dict,
    _get,
    _output_items,
    _text_of,
    chat_with_text_calls,
    responses_with_text_calls,
)

__all__ = ["chat_with_code", "code_names", "python_block", "responses_with_code"]

_BLOCK = re.compile(
    r"^[ \t]*```[ \t]*(?:python3?|py)[ \t]*\n(?P<code>.*?)\n?^[ \t]*```[ \t]*$",
    re.DOTALL | re.MULTILINE | re.IGNORECASE,
)
_CALL_TYPES = {"function_call", "custom_tool_call"}


def code_names(run_name: str, find_name: str, *, unknown: bool = False) -> Resolve:
    """The written name → `run_name` or `find_name` (`unknown`: any name written as a function's,
    for its answer to say which functions there are)."""

    def resolve(name: str) -> str | None:
        return name if name in (run_name, find_name) else None

    return or_unknown(resolve) if unknown else resolve


def python_block(text: Any) -> tuple[str, str | None] | None:
    """The code of the first closed ```python block in `text` and the text around it (stripped;
    None when empty); None when there is no such block or it holds only blanks."""
    if not isinstance(text, str):
        return None
    found = _BLOCK.search(text)
    if found is None or not found.group("code").strip():
        return None
    rest = (text[: found.start()] + text[found.end() :]).strip()
    return found.group("code"), rest or None


def _run_call(run_name: str, text: str, code: str) -> tuple[str, str, str]:
    seed = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"call_code_{seed}", run_name, json.dumps({"code": code}, ensure_ascii=False)


def chat_with_code(
    message: Any, run_name: str, find_name: str, *, unknown: bool = False, truncated: bool = False
) -> dict[str, Any] | None:
    """The assistant message to append instead of `message` (as `chat_with_text_calls`): its
    written calls, else its first ```python block as a call of `run_name`; None for neither."""
    resolve = code_names(run_name, find_name, unknown=unknown)
    written = chat_with_text_calls(message, resolve, truncated=truncated)
    if written is not None:
        return written
    if _get(message, "role") != "assistant" or _get(message, "tool_calls") or _get(message, "function_call"):
        return None
    text = _text_of(_get(message, "content"))
    block = python_block(text)
    if text is None or block is None:
        return None
    code, rest = block
    call_id, name, arguments = _run_call(run_name, text, code)
    if isinstance(message, Mapping):
        out = {key: value for key, value in message.items() if key != "tool_calls"}
    else:
        out = {"role": "assistant"}
        if _get(message, "refusal") is not None:
            out["refusal"] = _get(message, "refusal")
    out["content"] = rest
    function = {"name": name, "arguments": arguments}
    out["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
    return out


def responses_with_code(
    reply: Any, run_name: str, find_name: str, *, unknown: bool = False, truncated: bool = False
) -> list[dict[str, Any]] | None:
    """The input items to append instead of a Responses reply's output (as
    `responses_with_text_calls`): its written calls, else the first ```python block of its
    assistant messages, the message followed by a `function_call` of `run_name`; None for neither."""
    resolve = code_names(run_name, find_name, unknown=unknown)
    written = responses_with_text_calls(reply, resolve, truncated=truncated)
    if written is not None:
        return written
    items = _output_items(reply)
    if items is None or any(_get(item, "type") in _CALL_TYPES for item in items):
        return None
    out: list[dict[str, Any]] = []
    found = False
    for item in items:
        text = _text_of(_get(item, "content"))
        block = None
        if not found and _get(item, "type") == "message" and _get(item, "role") == "assistant":
            block = python_block(text)
        if text is None or block is None:
            out.append(_as_dict(item))
            continue
        found = True
        code, rest = block
        if rest is not None:
            kept = _as_dict(item)
            kept["content"] = [{"type": "output_text", "text": rest, "annotations": []}]
            out.append(kept)
        call_id, name, arguments = _run_call(run_name, text, code)
        out.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments})
    return out if found else None
