"""What a stdio peer writes, checked line by line before the `mcp` SDK's session sees it.

Every request we send is remembered until its answer comes, so that whatever the peer answers is
answered at once:

- an answer that is not a JSON-RPC response (a result that is `5` or `null`, a line that is not
  JSON but names a waiting request's id, nesting deeper than the SDK reads) becomes an error for
  that request, marked `UnusableAnswer`, which the adapter tells the model as such;
- a listing (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`) is read
  entry by entry: an entry the SDK would refuse is taken out, and its reason travels with the page
  in `_meta[HELD_BACK]`, so the rest of the listing is published;
- a tool result of more than `MAX_BLOCKS` content blocks keeps its last ones, after a text block
  that says how many were left out (the model reads a result's end, see `render`).

A line that answers nothing is counted per kind in `Strays`, and logged once per peer and kind,
as a warning. Messages that a transport of the `mcp` SDK parsed itself (streamable HTTP, SSE, in
memory) are checked by `received` the same way (see `_checked.py`); the errors that transport
makes up itself are recognised: an answer it could not parse becomes an `UnusableAnswer` in a few
words, a request it gave up on when its stream ended carries `LostByTransport`.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as mt
import pydantic
from mcp.shared.message import SessionMessage
from mcp_types import methods as _methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from ..._naming import shown
from ..._session import HELD_BACK, LostByTransport, UnusableAnswer, describe_invalid
from ._lines import MAX_DEPTH, TooDeep

__all__ = ["MAX_BLOCKS", "Exchange", "Strays"]

logger = logging.getLogger("mcpx_router.peers")

MAX_BLOCKS: Final = 1_000
"""Content blocks of a tool result kept, the last ones (one more says how many were left out)."""
_LISTINGS: Final[dict[str, tuple[str, type[pydantic.BaseModel], str]]] = {
    "tools/list": ("tools", mt.Tool, "tool"),
    "prompts/list": ("prompts", mt.Prompt, "prompt"),
    "resources/list": ("resources", mt.Resource, "resource"),
    "resources/templates/list": ("resourceTemplates", mt.ResourceTemplate, "resource template"),
}
_ENTRIES: Final[dict[str, pydantic.TypeAdapter[Any]]] = {
    method: pydantic.TypeAdapter(list[model])  # type: ignore[valid-type]  # a model class per listing
    for method, (_, model, _) in _LISTINGS.items()
}
"""Each listing's entries, checked in one call."""
_WHAT: Final = {
    "tools/call": "a tool result",
    "tools/list": "a tool list",
    "initialize": "a handshake answer",
}
_ID: Final = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_SDK_UNPARSED: Final = ("Failed to parse JSON response: ", "Failed to parse SSE message: ")
"""How the SDK's HTTP transport begins the error it answers a request with when the peer's answer
was not a JSON-RPC message (with the whole validation error after it)."""
_SDK_LOST: Final = ("SSE stream failed: ", "SSE stream ended without a response", "SSE stream ended and ")
"""How it begins the "connection closed" (-32000) error of a request whose stream ended."""
_INVALID_JSON: Final = re.compile(r"Invalid JSON: ([^\[\n]{1,120})")
_NOT_AN_OBJECT: Final = re.compile(
    r"JSONRPCResponse\.result\n\s*Input should be (?:a valid dictionary|an object) "
    r"\[type=dict_type, input_value=(.{0,60}?), input_type=(\w+)\]"
)
_KINDS: Final = {"NoneType": "null", "str": "a string", "list": "an array", "bool": "a boolean"}
_HEAD: Final = 4096
_EXCERPT: Final = 60


class Strays:
    """Lines of one peer that answered nothing, counted per kind (across its reconnections)."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.counts: dict[str, int] = {}

    def count(self, kind: str, line: bytes | str, where: str = "on stdout") -> None:
        seen = self.counts.get(kind, 0)
        self.counts[kind] = seen + 1
        if not seen:
            logger.warning(
                "peer %r wrote %s %s, which was ignored: %s "
                "(further such lines are counted, not logged)",
                self.peer,
                kind,
                where,
                _excerpt(line),
            )


class Exchange:
    """One connection's requests in flight, and the check of each message that comes back."""

    def __init__(self, peer: str, strays: Strays, where: str = "on stdout") -> None:
        self.peer = peer
        self.strays = strays
        self.where = where
        """Where the peer's messages come from, as its stray lines are logged."""
        self.version = "2025-11-25"
        self.answered = False
        """Whether the peer has sent one JSON-RPC message: lines before it fail the handshake."""
        self._waiting: dict[Any, str] = {}
        self._read_ahead: dict[Any, SessionMessage] = {}

    def outgoing(self, message: SessionMessage) -> None:
        """Remember a request we send (and forget one we cancel) by its id."""
        sent = message.message
        if isinstance(sent, mt.JSONRPCRequest):
            self._waiting[_key(sent.id)] = sent.method
        elif isinstance(sent, mt.JSONRPCNotification) and sent.method == "notifications/cancelled":
            request = (sent.params or {}).get("requestId")
            if isinstance(request, int | str):
                self._waiting.pop(_key(request), None)

    def awaits(self, line: bytes, method: str) -> bool:
        """Whether `line` looks like the answer to a waiting `method` request (by its id)."""
        head = line[:_HEAD]
        found = _ID.search(head) if b'"method"' not in head else None
        return found is not None and self._waiting.get(_key(json.loads(found.group(1)))) == method

    def incoming(self, value: Any, cut: bool, line: bytes, left_out: int = 0) -> SessionMessage | None:
        """The message to hand on for a parsed line, or None for a line that answers nothing.

        `left_out` content blocks of a tool result were dropped as the line was read."""
        try:
            message = mt.jsonrpc_message_adapter.validate_python(value, by_name=False)
        except pydantic.ValidationError:
            message = None
        if message is None or (cut and not isinstance(message, mt.JSONRPCResponse)):
            request = value.get("id") if isinstance(value, dict) and "method" not in value else None
            if isinstance(request, int | str) and _key(request) in self._waiting:
                return self._unusable(request, _why(value, cut))
            kind = "nested deeper than the router reads" if cut else "JSON that is not JSON-RPC"
            self.strays.count(kind, line, self.where)
            return None
        self.answered = True
        if isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError) and message.id is not None:
            method = self._waiting.pop(_key(message.id), None)
            if isinstance(message, mt.JSONRPCResponse) and method is not None:
                return self._answer(message, method, cut, left_out)
        return SessionMessage(message)

    def read_ahead(self, request: int | str, message: SessionMessage) -> None:
        """Keep the answer to `request`, read (and checked) before the transport parsed its stand-in."""
        self._read_ahead[_key(request)] = message

    def received(self, item: SessionMessage) -> SessionMessage:
        """What to hand on for a message a transport of the SDK parsed itself."""
        message = item.message
        self.answered = True
        if isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError) and self._read_ahead:
            ahead = self._read_ahead.pop(_key(message.id), None)
            if ahead is not None:
                return ahead
        if isinstance(message, mt.JSONRPCResponse) and message.id is not None:
            method = self._waiting.pop(_key(message.id), None)
            if method is not None:
                return self._answer(message, method, False, 0)
        elif isinstance(message, mt.JSONRPCError) and message.id is not None:
            if _key(message.id) not in self._waiting:
                return item
            error = message.error
            if error.code == mt.PARSE_ERROR and error.message.startswith(_SDK_UNPARSED):
                return self._unusable(message.id, _sdk_why(error.message))
            self._waiting.pop(_key(message.id), None)
            if error.code == mt.CONNECTION_CLOSED and error.message.startswith(_SDK_LOST):
                lost = error.model_copy(update={"data": LostByTransport(error.message)})
                return SessionMessage(message.model_copy(update={"error": lost}))
        return item

    def unreadable(self, line: bytes, error: Exception) -> SessionMessage | None:
        """The message to hand on for a line that is not JSON: an error for the waiting request it
        names, if it names one (a cut-off answer), else None (counted as a stray)."""
        head = line[:_HEAD]
        found = _ID.search(head) if b'"jsonrpc"' in head and b'"method"' not in head else None
        if found is not None:
            request = json.loads(found.group(1))
            if _key(request) in self._waiting:
                return self._unusable(request, f"it is not valid JSON ({_parse_error(error)})")
        self.strays.count("a line that is not JSON", line, self.where)
        return None

    def _answer(self, message: mt.JSONRPCResponse, method: str, cut: bool, left_out: int) -> SessionMessage:
        result = message.result
        if method == "initialize" and isinstance(result.get("protocolVersion"), str):
            self.version = result["protocolVersion"]
        if method in _LISTINGS:
            listing = self._listing(method, result, cut)
            return SessionMessage(message.model_copy(update={"result": listing}))
        if cut:
            return self._unusable(message.id, _why(result, cut), method)
        if method == "tools/call":
            content = result.get("content")
            if isinstance(content, list) and (left_out or len(content) > MAX_BLOCKS):
                left_out += max(0, len(content) - MAX_BLOCKS)
                note = {"type": "text", "text": f"[{left_out:,} earlier content blocks left out]"}
                kept = {**result, "content": [note, *content[-MAX_BLOCKS:]]}
                return SessionMessage(message.model_copy(update={"result": kept}))
        return SessionMessage(message)

    def _listing(self, method: str, result: dict[str, Any], cut: bool) -> dict[str, Any]:
        """`result` with each entry the SDK would refuse taken out, and why in `_meta[HELD_BACK]`
        (`cut`: the line was nested too deep somewhere, so some entry holds a `TooDeep`)."""
        key, model, what = _LISTINGS[method]
        result = dict(result)
        meta = result.get("_meta")
        if isinstance(meta, dict) and HELD_BACK in meta:  # only the router says what it held back
            result["_meta"] = {k: v for k, v in meta.items() if k != HELD_BACK}
        entries = result.get(key)
        if not isinstance(entries, list) or (not cut and self._fits(method, result)):
            return result
        kept: list[Any] = []
        held_back: dict[str, str] = {}
        for index, entry in enumerate(entries):
            problem = self._problem(method, key, model, entry)
            if problem is None:
                kept.append(entry)
                continue
            name = entry.get("name") if isinstance(entry, dict) else None
            label = name if isinstance(name, str) and name else f"(entry {index}, {_unnamed(name)})"
            held_back[label] = f"peer {shown(self.peer)} listed a {what} that cannot be read: {problem}"
            logger.warning("%s; the rest of its list is used", held_back[label])
        meta = result.get("_meta")
        meta = {**meta, HELD_BACK: held_back} if isinstance(meta, dict) else {HELD_BACK: held_back}
        return {**result, key: kept, "_meta": meta}

    def _fits(self, method: str, result: Mapping[str, Any]) -> bool:
        """Whether the SDK takes `result` as it is, every entry too: one check of the whole listing
        (as its session checks it), not one per entry."""
        key = _LISTINGS[method][0]
        return _check(method, self.version, result, _ENTRIES[method], key) is None

    def _problem(self, method: str, key: str, model: type[pydantic.BaseModel], entry: Any) -> str | None:
        if _holds_cut(entry):
            return f"it is nested deeper than {MAX_DEPTH} levels"
        return _check(method, self.version, {key: [entry]}, model, key)

    def _unusable(self, request: int | str, why: str, method: str | None = None) -> SessionMessage:
        method = self._waiting.pop(_key(request), "") if method is None else method
        what = _WHAT.get(method, f"an answer to {method}" if method else "an answer")
        text = f"peer {shown(self.peer)} answered with something that is not {what}: {why}"
        error = mt.ErrorData(code=mt.INTERNAL_ERROR, message=text, data=UnusableAnswer(why))
        return SessionMessage(mt.JSONRPCError(jsonrpc="2.0", id=request, error=error))


def _check(
    method: str,
    version: str,
    result: Mapping[str, Any],
    model: type[pydantic.BaseModel] | pydantic.TypeAdapter[Any],
    key: str,
) -> str | None:
    """What the SDK's checks of a `method` result find wrong with `result`, shortly; None if nothing.

    `model` checks the listing's first entry (a model) or all of it (a `TypeAdapter` of a list)."""
    try:
        surface = _surface(method, version)
        if surface is not None:
            surface.validate_python(result, by_name=False)
        if isinstance(model, pydantic.TypeAdapter):
            model.validate_python(result[key], by_name=False)
        else:
            model.model_validate(result[key][0], by_name=False)
    except pydantic.ValidationError as exc:
        return describe_invalid(exc, skip=2)
    except (TypeError, ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


@functools.cache
def _surface(method: str, version: str) -> pydantic.TypeAdapter[Any] | None:
    """The check the SDK's session makes of a `method` result at protocol `version`, without the
    dump it makes after it (None where the SDK checks nothing: a version or method it does not
    know)."""
    if version not in KNOWN_PROTOCOL_VERSIONS:
        return None
    target: Any = _methods.SERVER_RESULTS.get((method, version))
    return None if target is None else pydantic.TypeAdapter(target)


def _why(value: Any, cut: bool) -> str:
    if cut:
        return f"it is nested deeper than {MAX_DEPTH} levels"
    if not isinstance(value, dict):
        return f"it is {_shown(value)}, not a JSON-RPC response"
    if "result" in value:
        result = value["result"]
        if not isinstance(result, dict):
            return f"its result is {_shown(result)}, not an object"
    if "error" in value:
        return f"its error is {_shown(value['error'])}, not a JSON-RPC error object"
    return "it is neither a result nor an error"


def _sdk_why(text: str) -> str:
    """Why the SDK could not parse an answer, in a few words, from its validation error's text."""
    found = _INVALID_JSON.search(text)
    if found is not None:
        return f"it is not valid JSON ({found.group(1).strip()})"
    if "recursion limit" in text.lower():
        return "it is nested deeper than the mcp SDK reads"
    found = _NOT_AN_OBJECT.search(text)
    if found is not None:
        value, kind = found.groups()
        shown = value if kind in ("int", "float") else _KINDS.get(kind, kind)
        return f"its result is {shown}, not an object"
    return "it is not a JSON-RPC response"


def _holds_cut(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, TooDeep):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _unnamed(name: Any) -> str:
    return "no name" if name is None else f"the name {_shown(name)}"


def _shown(value: Any) -> str:
    """A JSON value as the peer wrote it, cut to a few dozen characters."""
    if isinstance(value, str) and len(value) > _EXCERPT:
        value = value[:_EXCERPT]
    elif isinstance(value, list | dict) and len(value) > 8:
        return f"{'an array' if isinstance(value, list) else 'an object'} of {len(value)} items"
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _key(request: Any) -> tuple[type, Any]:
    """A request id as a dict key: `1` and `"1"` are different ids."""
    return (type(request), request)


def _parse_error(error: Exception) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


def _excerpt(text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text[: _EXCERPT * 4].decode("utf-8", "replace")
    if not text.strip():
        return "an empty line" if not text else "a blank line"
    return repr(text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…")
