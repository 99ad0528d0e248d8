"""The shapes of tool calls a model sends, read into `ToolCall`s (pure functions).

What `dispatch` is given (`tool_call_items`): a list (or any iterable) of calls; None (a message
without calls); one call on its own; an assistant message (its `tool_calls`, and a legacy
`function_call`); or a whole Responses `Response` (its `output`).

Each item is decided by its `type` (`parse_tool_call`), as SDK object or plain dict:

- served: Chat `{"id", "type": "function", "function": {"name", "arguments"}}`, Responses
  `{"type": "function_call", "call_id", "name", "arguments"}`, legacy `{"name", "arguments"}`;
- answered with an error, in their own answer shape: Chat `"custom"` and Responses
  `"custom_tool_call"` (free-form tools are not ours to serve);
- passed over, with no answer (`PASSED_OVER`): items the API ran itself, calls of the built-in
  tools the host enabled and answers itself, and items that are not calls; a `tool_search_call`
  the client must run (`client_search`) is answered by a `ToolSearch` (`search_output`);
- anything else raises ToolCallFormatError, except inside a whole `Response`, whose items of a
  type not known here are passed over too (the API never sends a function call as anything but
  `function_call`).

A call whose answer could not be matched to it (a Chat or custom call without a usable `id`, a
Responses call without a usable `call_id`: missing, None, empty or not a string) refuses the whole
batch with ToolCallFormatError before anything runs: its answer would carry no usable id, a message
the API refuses, and the conversation's next request would fail. A recognised call with something
else unusable in it (no name) is answered with an error and never run. Each answer is in its
call's own shape (`_answers.answer`).
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel

from ..._errors import ToolCallFormatError
from ._passed_over import PASSED_OVER

if TYPE_CHECKING:
    # The `openai` SDK's own types, for annotations only: importing the package loads no openai.
    from openai.types.chat import (
        ChatCompletionMessageToolCallUnion,
        ChatCompletionMessageToolCallUnionParam,
    )
    from openai.types.chat.chat_completion_message import FunctionCall
    from openai.types.responses import (
        ResponseCustomToolCall,
        ResponseCustomToolCallParam,
        ResponseFunctionToolCall,
        ResponseFunctionToolCallParam,
        ResponseOutputItem,
    )

    ChatCall: TypeAlias = ChatCompletionMessageToolCallUnion | ChatCompletionMessageToolCallUnionParam
    """A Chat Completions tool call (function or custom), SDK object or its request form."""
    ResponsesFunctionCall: TypeAlias = ResponseFunctionToolCall | ResponseFunctionToolCallParam
    ResponsesCustomCall: TypeAlias = ResponseCustomToolCall | ResponseCustomToolCallParam
    ResponsesItem: TypeAlias = ResponseOutputItem | ResponsesFunctionCall | ResponsesCustomCall
    """An item of a Response's `output` (calls among others), or a call in its request form."""
    LegacyCall: TypeAlias = FunctionCall
    """A legacy `function_call` (as a dict it is told from a Responses call only at run time)."""

__all__ = [
    "PASSED_OVER",
    "Shape",
    "ToolCall",
    "client_search",
    "parse_one_call",
    "parse_tool_call",
    "parse_tool_calls",
    "tool_call_items",
    "usable_id",
]

Shape = Literal["chat", "responses", "custom", "function"]
"""How a call is answered: Chat tool message, `function_call_output`, `custom_tool_call_output`,
or legacy function message."""


CUSTOM_PROBLEM = (
    "custom (free-form) tool calls are not served here; call one of the functions offered instead"
)

_HINT = (
    "Pass message.tool_calls of a Chat Completions reply, the output of a Responses reply, "
    "or dicts of those shapes"
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call, whatever shape it came in."""

    shape: Shape
    call_id: Any
    """The call's id as the model sent it (a str for every call that can be run)."""
    name: str
    arguments: Any
    problem: str | None = None
    """Set when the call is recognised but cannot be served; it is answered with this error."""


_CALL_FIELDS = ("shape", "call_id", "name", "arguments", "problem")
"""`ToolCall`'s fields, each of which `tool_call` sets (a test holds the two together)."""
_SET_SHAPE, _SET_CALL_ID, _SET_NAME, _SET_ARGUMENTS, _SET_PROBLEM = [
    ToolCall.__dict__[field].__set__ for field in _CALL_FIELDS
]


def tool_call(shape: Shape, call_id: Any, name: str, arguments: Any) -> ToolCall:
    """`ToolCall(shape, call_id, name, arguments)`, made for every call that is run at a third of
    the cost: a frozen dataclass's `__init__` goes through `object.__setattr__` once per field,
    while the slots' own setters store the values directly (the instance is the same)."""
    call = object.__new__(ToolCall)
    _SET_SHAPE(call, shape)
    _SET_CALL_ID(call, call_id)
    _SET_NAME(call, name)
    _SET_ARGUMENTS(call, arguments)
    _SET_PROBLEM(call, None)
    return call


def _stream_fragment_types() -> tuple[type, ...]:
    """The openai classes of streamed tool-call fragments, if openai has loaded them.

    An object of these classes cannot exist before their module is imported, so this never
    imports openai itself (importing mcpx_router stays light).
    """
    chunk = sys.modules.get("openai.types.chat.chat_completion_chunk")
    if chunk is None:
        return ()
    return (chunk.ChoiceDeltaToolCall, chunk.ChoiceDeltaFunctionCall)


def _get(obj: Any, key: str) -> Any:
    """`obj[key]` or `obj.key`; None when absent or when reading it fails."""
    try:
        if isinstance(obj, Mapping):
            return obj.get(key)
        return getattr(obj, key, None)
    except Exception:
        return None


def _text(obj: Any, key: str) -> str | None:
    """`_get(obj, key)` when it is a str; None when absent; "" when it is anything else."""
    value = _get(obj, key)
    return value if value is None or isinstance(value, str) else ""


def _has(obj: Any, key: str) -> bool:
    try:
        return key in obj if isinstance(obj, Mapping) else hasattr(obj, key)
    except Exception:
        return False


def tool_call_items(value: Any) -> tuple[list[Any], bool]:
    """The items to answer in what was passed to `dispatch`, and whether it was a whole Response.

    Raises:
        ToolCallFormatError: `value` holds no tool calls in any shape known here.
    """
    if value is None:
        return [], False
    if type(value) is list:
        return value, False
    if isinstance(value, str | bytes | bytearray | memoryview):
        raise ToolCallFormatError(f"dispatch takes a list of tool calls, not {_what(value)}. {_HINT}")
    role, kind, obj = _text(value, "role"), _text(value, "type"), _text(value, "object")
    if role == "assistant" and kind in (None, "message"):
        return _message_calls(value), False
    if obj == "response":
        output = _get(value, "output")
        if isinstance(output, Iterable) and not isinstance(output, str | bytes | Mapping):
            return list(output), True
        raise ToolCallFormatError(f"the response passed to dispatch has no output list: {_what(value)}")
    if obj in ("chat.completion", "chat.completion.chunk"):
        raise ToolCallFormatError(
            f"dispatch takes the tool calls of one message, not a whole completion ({_what(value)}); "
            "pass completion.choices[0].message.tool_calls (assemble a stream first)"
        )
    if isinstance(value, Mapping | BaseModel) or not isinstance(value, Iterable):
        return [value], False  # one call on its own (or something else, refused by its parse)
    return list(value), False


def _message_calls(message: Any) -> list[Any]:
    calls = _get(message, "tool_calls")
    if calls is None:
        calls = []
    elif isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Iterable):
        raise ToolCallFormatError(f"the message's tool_calls is not a list: {_what(calls)}")
    items = list(calls)
    function_call = _get(message, "function_call")
    if function_call is not None:
        items.append(function_call)
    return items


def parse_tool_call(obj: Any, *, lenient: bool = False, index: int | None = None) -> ToolCall | None:
    """Decide one item: a call to answer, or None for an item passed over (`PASSED_OVER`).

    Args:
        obj: The item, an SDK object or a dict.
        lenient: Pass over items of an unknown `type` too (the items of a whole Response).
        index: The item's place in the list, named in the error.

    Raises:
        ToolCallFormatError: The item is no tool call of any shape known here, or a call without a
            usable id (its answer could not be matched to it).
    """
    if type(obj) is dict and obj.get("type") == "function":
        # The common case, a Chat Completions call as a plain dict, without the general probing.
        function, call_id = obj.get("function"), obj.get("id")
        if type(function) is dict and type(call_id) is str and call_id:
            name = function.get("name")
            if type(name) is str and name:
                return tool_call("chat", call_id, name, function.get("arguments"))
    if isinstance(obj, _stream_fragment_types()):
        raise ToolCallFormatError(
            f"a fragment of a streamed tool call, not a tool call: {_what(obj)}. Assemble the stream "
            "first (openai's ChatCompletionStreamState, or the stream's final completion)"
        )
    kind = _text(obj, "type")
    if kind == "function_call":
        _check_id(obj, "call_id", index)
        return _checked("responses", _get(obj, "call_id"), _get(obj, "name"), _get(obj, "arguments"))
    if kind == "custom_tool_call":
        _check_id(obj, "call_id", index)
        return _custom("custom", _get(obj, "call_id"), _get(obj, "name"))
    if kind == "function" or (kind is None and _get(obj, "function") is not None):
        function = _get(obj, "function")
        if _has(obj, "parameters") or (_has(function, "parameters") and not _has(function, "arguments")):
            raise ToolCallFormatError(
                f"a tool definition (as get_openai_tools gives), not a tool call: {_what(obj)}. {_HINT}"
            )
        _check_id(obj, "id", index)
        return _checked("chat", _get(obj, "id"), _get(function, "name"), _get(function, "arguments"))
    if kind == "custom":
        _check_id(obj, "id", index)
        return _custom("chat", _get(obj, "id"), _get(_get(obj, "custom"), "name"))
    if kind is not None and (kind in PASSED_OVER or lenient):
        return None
    if kind is None and _get(obj, "call_id") is not None:
        _check_id(obj, "call_id", index)
        return _checked("responses", _get(obj, "call_id"), _get(obj, "name"), _get(obj, "arguments"))
    if kind is None and _get(obj, "role") is None and _has(obj, "name") and _has(obj, "arguments"):
        return _checked("function", None, _get(obj, "name"), _get(obj, "arguments"))
    where = "not a tool call" if index is None else f"item {index} is not a tool call"
    hint = _HINT
    if kind is not None and kind.startswith("response."):
        hint = "This is a streaming event: pass the output of the final response"
    raise ToolCallFormatError(f"{where}: {_what(obj)}. {hint}")


def usable_id(call_id: Any) -> bool:
    """Whether an answer can carry `call_id` back to its call: a non-empty string."""
    return isinstance(call_id, str) and call_id != ""


def _check_id(obj: Any, field: str, index: int | None) -> None:
    """Refuse a call whose answer could not be matched to it: an answer without a usable id is a
    message the API refuses, so the conversation's next request would fail."""
    call_id = _get(obj, field)
    if usable_id(call_id):
        return
    where = "the tool call" if index is None else f"tool call {index}"
    raise ToolCallFormatError(
        f"{where} has no usable {field} (got {_short(call_id)}): its answer could not be matched to "
        f"it, so nothing was run: {_what(obj)}. Every call needs its {field} as the model's reply gave it"
    )


def _checked(shape: Shape, call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A recognised call (its id already checked); unusable when it names no function."""
    if not isinstance(name, str) or not name:
        return ToolCall(
            shape, call_id, "", arguments, problem=f"the tool call has no function name (got {_short(name)})"
        )
    return tool_call(shape, call_id, name, arguments)


def _custom(shape: Shape, call_id: Any, name: Any) -> ToolCall:
    return ToolCall(shape, call_id, name if isinstance(name, str) else "", None, problem=CUSTOM_PROBLEM)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 3, 6, 6, 6
_REPR.maxstring, _REPR.maxother = 80, 120


def _short(value: Any) -> str:
    """A bounded repr that never raises."""
    try:
        text = _REPR.repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 200 else text[:200] + "…"


def _what(value: Any) -> str:
    """What was passed, for an error message: its type and a bounded repr."""
    return f"{type(value).__name__} {_short(value)}"


def parse_tool_calls(tool_calls: Any) -> list[ToolCall]:
    """Every tool call in what `dispatch` was given, recognised, in order (`tool_call_items`, then
    `parse_tool_call` on each item); items that are not ours to run are passed over."""
    items, whole_response = tool_call_items(tool_calls)
    if len(items) == 1:  # the usual turn
        call = parse_tool_call(items[0], lenient=whole_response, index=None if items[0] is tool_calls else 0)
        return [] if call is None else [call]
    parsed = (
        parse_tool_call(item, lenient=whole_response, index=None if item is tool_calls else index)
        for index, item in enumerate(items)
    )
    return [call for call in parsed if call is not None]


def parse_one_call(obj: Any) -> ToolCall:
    """`parse_tool_call` for one item that must be a call to answer (`execute_function_call`)."""
    call = parse_tool_call(obj)
    if call is None:
        kind = _text(obj, "type") or ""
        raise ToolCallFormatError(
            f"a {kind!r} item is not a call to answer here ({PASSED_OVER.get(kind, 'not a call')}): "
            f"{_what(obj)}"
        )
    return call


def client_search(obj: Any) -> tuple[Any, Any] | None:
    """`(call_id, arguments)` of a Responses `tool_search_call` the client must run (execution
    "client"); None for any other item (a search the API ran has its results already)."""
    if _text(obj, "type") != "tool_search_call" or _text(obj, "execution") != "client":
        return None
    _check_id(obj, "call_id", None)
    return _get(obj, "call_id"), _get(obj, "arguments")
