"""Tool calls written as text, turned into calls the API knows (`text_calls=True`).

`_text_calls` finds the calls in a message's text, given a way to read the names (the answerer's
`written_names`); this module writes what it found back into the conversation's own shapes: a
Chat assistant message gains `tool_calls` (its content keeps only the rest of the text, or
None), a Responses `message` output item is followed by `function_call` items. The answers
`dispatch` gives those calls carry the same ids, so the conversation stays valid for the API.
Only a reply that called nothing natively is read: one with `tool_calls`, a `function_call` or
`function_call` items is left as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._text_calls import Recovered, Resolve, recover_calls

__all__ = [
    "chat_with_text_calls",
    "function_calls",
    "responses_with_text_calls",
    "text_call_items",
]

_CALL_TYPES = {"function_call", "custom_tool_call"}


def _get(obj: Any, key: str) -> Any:
    """`obj[key]` or `obj.key`; None when absent or when reading it fails."""
    try:
        if isinstance(obj, Mapping):
            return obj.get(key)
        return getattr(obj, key, None)
    except Exception:
        return None


def _text_of(content: Any) -> str | None:
    """A message's text: its content string, or its text parts joined; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, bytes | Mapping):
        texts = [_get(part, "text") for part in content if _get(part, "type") in ("text", "output_text")]
        if texts and all(isinstance(text, str) for text in texts):
            return "".join(texts)
    return None


def _chat_recovered(message: Any, resolve: Resolve, truncated: bool = False) -> Recovered | None:
    if _get(message, "role") != "assistant" or _get(message, "tool_calls") or _get(message, "function_call"):
        return None
    return recover_calls(_text_of(_get(message, "content")), resolve, truncated=truncated)


def _chat_calls(recovered: Recovered) -> list[dict[str, Any]]:
    return [
        {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in recovered.calls
    ]


def chat_with_text_calls(message: Any, resolve: Resolve, *, truncated: bool = False) -> dict[str, Any] | None:
    """The assistant message to append instead of `message`: its calls as `tool_calls`, its
    content only the text around them (None when there is none); None when it holds no calls.
    `truncated`: the reply was cut by its token limit (`recover_calls`)."""
    recovered = _chat_recovered(message, resolve, truncated)
    if recovered is None:
        return None
    if isinstance(message, Mapping):
        out = {key: value for key, value in message.items() if key != "tool_calls"}
    else:
        out = {"role": "assistant"}
        for key in ("name", "refusal"):
            if _get(message, key) is not None:
                out[key] = _get(message, key)
        audio = _get(message, "audio")
        if audio is not None:
            out["audio"] = {"id": _get(audio, "id")}
    out["content"] = recovered.text
    out["tool_calls"] = _chat_calls(recovered)
    return out


def _output_items(reply: Any) -> list[Any] | None:
    items = _get(reply, "output") if _get(reply, "object") == "response" else reply
    if isinstance(items, Iterable) and not isinstance(items, str | bytes | Mapping):
        return list(items)
    return None


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    dumped: dict[str, Any] = item.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dumped


def responses_with_text_calls(
    reply: Any, resolve: Resolve, *, truncated: bool = False
) -> list[dict[str, Any]] | None:
    """The input items to append instead of a Responses reply's output (a `Response` or its
    `output`): each assistant `message` holding written calls keeps only the text around them (or
    goes, when there is none) and is followed by its calls as `function_call` items; None when
    the reply holds no written calls, or calls functions already."""
    items = _output_items(reply)
    if items is None or any(_get(item, "type") in _CALL_TYPES for item in items):
        return None
    out: list[dict[str, Any]] = []
    found = False
    for item in items:
        recovered = None
        if _get(item, "type") == "message" and _get(item, "role") == "assistant":
            recovered = recover_calls(_text_of(_get(item, "content")), resolve, truncated=truncated)
        if recovered is None:
            out.append(_as_dict(item))
            continue
        found = True
        if recovered.text is not None:
            kept = _as_dict(item)
            kept["content"] = [{"type": "output_text", "text": recovered.text, "annotations": []}]
            out.append(kept)
        out.extend(
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments}
            for call in recovered.calls
        )
    return out if found else None


def text_call_items(value: Any, resolve: Resolve) -> Any:
    """What `dispatch(value, text_calls=True)` answers: the calls written in an assistant message
    that called nothing, or in a Response's messages (with the ids the `*_with_text_calls`
    functions give them); anything else, `value` itself."""
    if _get(value, "role") == "assistant":
        recovered = _chat_recovered(value, resolve)
        return value if recovered is None else _chat_calls(recovered)
    if _get(value, "object") == "response":
        items = responses_with_text_calls(value, resolve)
        if items is not None:
            return function_calls(items)
    return value


def function_calls(items: Iterable[Any]) -> list[Any]:
    """The `function_call` items among input items (those `responses_with_text_calls` gives)."""
    return [item for item in items if _get(item, "type") == "function_call"]
