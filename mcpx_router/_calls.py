"""The shapes of tool calls a model sends, and of the answers it expects (pure functions).

Accepted, as `openai` SDK objects or as plain dicts:

- Chat Completions: `{"id", "type": "function", "function": {"name", "arguments"}}`
  (a `"custom"` tool call is recognised and answered with an error: it is not ours to serve);
- Responses API: `{"type": "function_call", "call_id", "name", "arguments"}`;
- legacy function calling: `{"name", "arguments"}`.

Each call is answered in its own shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._errors import ToolCallFormatError

__all__ = ["Shape", "ToolCall", "answer", "parse_tool_call"]

Shape = Literal["chat", "responses", "function"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call, whatever shape it came in."""

    shape: Shape
    call_id: str | None
    name: str
    arguments: Any
    problem: str | None = None
    """Set when the call is recognised but cannot be served; it is answered with this error."""


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def parse_tool_call(obj: Any) -> ToolCall:
    """Recognise the shape of one tool call; raise ToolCallFormatError if it has none we know."""
    if type(obj) is dict and obj.get("type") == "function":
        # The common case, a Chat Completions call as a plain dict, without the general probing.
        function, call_id = obj.get("function"), obj.get("id")
        if type(function) is dict and type(call_id) is str and call_id:
            name = function.get("name")
            if type(name) is str and name:
                return ToolCall("chat", call_id, name, function.get("arguments"))
    kind = _get(obj, "type")
    function = _get(obj, "function")
    if kind == "function_call" or (kind is None and _get(obj, "call_id") is not None):
        call_id = _get(obj, "call_id")
        _check_id(call_id, "call_id", obj)
        return _named(ToolCall("responses", call_id, "", None), _get(obj, "name"), _get(obj, "arguments"))
    if function is not None or kind in ("function", "custom"):
        call_id = _get(obj, "id")
        _check_id(call_id, "id", obj)
        if kind == "custom":
            custom = _get(obj, "custom")
            name = _get(custom, "name") if custom is not None else None
            return ToolCall(
                "chat",
                call_id,
                name if isinstance(name, str) else "",
                None,
                problem="custom (free-form) tool calls are not served here; call one of the functions "
                "offered instead",
            )
        return _named(
            ToolCall("chat", call_id, "", None), _get(function, "name"), _get(function, "arguments")
        )
    name = _get(obj, "name")
    if isinstance(name, str) and (isinstance(obj, Mapping) or hasattr(obj, "arguments")):
        return _named(ToolCall("function", None, "", None), name, _get(obj, "arguments"))
    raise ToolCallFormatError(
        f"not a tool call: {_brief(obj)}. Pass the tool calls of a Chat Completions message "
        "(message.tool_calls), the function_call items of a Responses output, or dicts of either shape"
    )


def _check_id(call_id: Any, field: str, obj: Any) -> None:
    if not isinstance(call_id, str) or not call_id:
        raise ToolCallFormatError(
            f"tool call without a usable {field!r} (got {call_id!r}) in {_brief(obj)}: "
            "its answer could not be matched to it"
        )


def _named(call: ToolCall, name: Any, arguments: Any) -> ToolCall:
    if not isinstance(name, str) or not name:
        return ToolCall(
            call.shape,
            call.call_id,
            "",
            arguments,
            problem=f"the tool call has no function name (got {name!r})",
        )
    return ToolCall(call.shape, call.call_id, name, arguments)


def _brief(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 200 else text[:200] + "…"


def answer(call: ToolCall, content: str | list[dict[str, Any]]) -> dict[str, Any]:
    """The message or item that answers `call`, in the call's own shape."""
    if call.shape == "chat":
        return {"role": "tool", "tool_call_id": call.call_id, "content": content}
    if call.shape == "responses":
        return {"type": "function_call_output", "call_id": call.call_id, "output": content}
    return {"role": "function", "name": call.name, "content": content}
