"""Tool calls a model wrote as text instead of sending them as `tool_calls` (pure functions).

Many local models and servers put a call in the reply's `content`. `recover_calls(text, resolve)`
finds the calls written in one of these forms:

- Hermes / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block a call
  (a last block may lack its closing tag), prose around the blocks allowed;
- Mistral: `[TOOL_CALLS]` then a JSON list of calls (or one call), or `name[ARGS]{...}` once or
  more (each after its own `[TOOL_CALLS]`); prose before the marker allowed;
- Llama 3.x: `<|python_tag|>` then one JSON call, or several separated by `;`; prose before the
  marker allowed;
- a JSON call, or a list of them, or several calls one after another (one a line, as small
  models write a second call), that is the whole message, bare or in one fenced block
  (```` ```json ```` or ```` ``` ````) that is the whole message;
- pythonic: the whole message is a list of calls, `[get_weather(city="Oslo"), now()]`, keyword
  arguments only, each a literal (read with `ast`, never evaluated).

A JSON call is an object with `name` and `arguments` (or `parameters`), an object or a string
holding one, and nothing else but `id` or `type`. A call is recovered only when its name is
known (`resolve` gives the public name: the catalogue's own, or a tool's own name when only one
peer has it) and its arguments are a JSON object; every call written in the message must be so,
or nothing is recovered (a message half of whose calls could not run is left as the model wrote
it). Nothing is recovered from a JSON object inside prose without a marker, from a fenced block
with prose around it, from code in another language, or from prose that names a tool.

Each recovered call gets an id made from the message's text and the call's place in it
(`call_text_<hash>_<n>`), so that the same message always gives the same ids.

Two readings the loops use: `or_unknown(resolve)` also takes a name no tool answers to (a call
written in one of the forms above is evidently a call; its answer then names the close tools,
where a message left as text would end the conversation), and `truncated=True` (the reply was
cut by its token limit) keeps the calls written whole before a last one that was cut, in the
forms that hold several (Hermes blocks, calls one a line, a JSON list, Llama's `;`); the cut
call stays in the text.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Recovered", "TextCall", "or_unknown", "recover_calls"]

Resolve = Callable[[str], "str | None"]
"""A name as the model wrote it → the public name it calls, or None when it calls nothing known."""


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call recovered from a message's text."""

    call_id: str
    name: str
    """The public name (as `resolve` gave it)."""
    arguments: str
    """A JSON object, as text."""


@dataclass(frozen=True, slots=True)
class Recovered:
    """The calls of a message and what is left of its text once they are taken out."""

    calls: tuple[TextCall, ...]
    text: str | None
    """The rest of the text, stripped; None when nothing but the calls was written."""


class _NotACall(Exception):
    """What was written is not a call that can be recovered."""


_CALLABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,127}\Z")
"""A name written as a function's name (what a model may call, a prefix such as `functions.` too)."""


def or_unknown(resolve: Resolve) -> Resolve:
    """`resolve`, and a name it does not know as it is, when it is written as a function's name."""

    def lenient(name: str) -> str | None:
        return resolve(name) or (name if _CALLABLE.match(name) else None)

    return lenient


_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_ARGS = "[ARGS]"
_LLAMA = "<|python_tag|>"
_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL)
_KEYS = {"name", "arguments", "parameters", "id", "type"}
_DECODER = json.JSONDecoder()


def recover_calls(text: Any, resolve: Resolve, *, truncated: bool = False) -> Recovered | None:
    """The calls written in `text`, or None when it holds none that can all be recovered
    (`truncated`: but for a last one cut by the reply's token limit, left in the text)."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        calls, rest = _find(text.strip(), _Reading(resolve, truncated))
    except (_NotACall, ValueError, RecursionError, MemoryError):
        return None
    if not calls:
        return None
    seed = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    recovered = tuple(
        TextCall(f"call_text_{seed}_{n}", name, arguments) for n, (name, arguments) in enumerate(calls)
    )
    rest = rest.strip()
    return Recovered(recovered, rest or None)


class _Reading:
    """`resolve`, and whether the text may end in a call cut short."""

    __slots__ = ("resolve", "truncated")

    def __init__(self, resolve: Resolve, truncated: bool) -> None:
        self.resolve, self.truncated = resolve, truncated

    def __call__(self, name: str) -> str | None:
        return self.resolve(name)


def _find(text: str, resolve: _Reading) -> tuple[list[tuple[str, str]], str]:
    if "<tool_call>" in text:
        bodies = _HERMES.findall(text)
        rest = _HERMES.sub("", text)
        if "</tool_call>" in rest:
            raise _NotACall("a closing tag without its opening one")
        cut = ""
        if resolve.truncated and len(bodies) > 1 and not text.rstrip().endswith("</tool_call>"):
            try:
                _one_json(bodies[-1])
            except _NotACall:  # the last block was cut: the others stand, it stays as text
                cut = text[text.rindex("<tool_call>") :]
                bodies = bodies[:-1]
        return [_json_call(_one_json(body), resolve) for body in bodies], (rest + " " + cut).strip()
    if _MISTRAL in text:
        before, _, after = text.partition(_MISTRAL)
        return _mistral(after, resolve), before
    if _LLAMA in text:
        before, _, after = text.partition(_LLAMA)
        return _llama(after, resolve), before
    fenced = _FENCE.match(text)
    if fenced is not None:
        return _call_sequence(fenced.group(1), resolve)[0], ""
    if text.startswith("{"):
        return _call_sequence(text, resolve)
    if text.startswith("["):
        try:
            value = _one_json(text)
        except _NotACall:
            if resolve.truncated and text.lstrip("[ \t\r\n").startswith("{"):
                return _cut_list(text, resolve)
            return _pythonic(text, resolve), ""
        return _json_calls(value, resolve), ""
    return [], text


def _one_json(text: str) -> Any:
    """The one JSON value `text` holds, nothing else around it (NaN and Infinity refused)."""
    text = text.strip()
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError as exc:
        raise _NotACall(str(exc)) from exc
    if text[end:].strip():
        raise _NotACall("text after the JSON value")
    return value


def _call_sequence(text: str, resolve: _Reading) -> tuple[list[tuple[str, str]], str]:
    """One JSON value that is a call or a list of calls, or call objects one a line (a line
    break, and only whitespace, between two of them); nothing else around them. With the
    reply truncated, a last object cut short is the text left."""
    text = text.strip()
    if not text.startswith("{"):
        return _json_calls(_one_json(text), resolve), ""
    calls: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        try:
            value, end = _DECODER.raw_decode(text, at)
        except ValueError as exc:
            if resolve.truncated and calls and text[at] == "{":
                return calls, text[at:]
            raise _NotACall(str(exc)) from exc
        at = end
        calls.append(_json_call(value, resolve))
        start = at
        while at < len(text) and text[at].isspace():
            at += 1
        if at < len(text) and "\n" not in text[start:at]:
            raise _NotACall("another call on the same line")
    return calls, ""


def _cut_list(text: str, resolve: _Reading) -> tuple[list[tuple[str, str]], str]:
    """A JSON list of calls cut short: the calls before the cut, and the cut one as text."""
    calls: list[tuple[str, str]] = []
    at = text.index("[") + 1
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            value, end = _DECODER.raw_decode(text, at)
        except ValueError:
            if not calls:
                raise _NotACall("a list cut before its first call") from None
            return calls, text[at:]
        calls.append(_json_call(value, resolve))
        at = end


def _json_calls(value: Any, resolve: Resolve) -> list[tuple[str, str]]:
    """A call, or a non-empty list of calls."""
    if isinstance(value, list):
        if not value:
            raise _NotACall("an empty list")
        return [_json_call(item, resolve) for item in value]
    return [_json_call(value, resolve)]


def _json_call(value: Any, resolve: Resolve) -> tuple[str, str]:
    """`{"name", "arguments" | "parameters"}` (and perhaps `id`, `type`) → (public name, arguments)."""
    if not isinstance(value, dict) or not set(value) <= _KEYS or "name" not in value:
        raise _NotACall("not a call object")
    if ("arguments" in value) == ("parameters" in value):
        raise _NotACall("neither arguments nor parameters, or both")
    if value.get("type", "function") != "function":
        raise _NotACall("a call of another type")
    arguments = value["arguments"] if "arguments" in value else value["parameters"]
    return _name(value["name"], resolve), _arguments(arguments)


def _name(name: Any, resolve: Resolve) -> str:
    if not isinstance(name, str) or not name:
        raise _NotACall("no name")
    public = resolve(name)
    if public is None:
        raise _NotACall(f"{name!r} is not a tool")
    return public


def _arguments(arguments: Any) -> str:
    """The arguments as JSON object text: an object, or a string holding one."""
    if isinstance(arguments, str):
        arguments = _one_json(arguments)
    if not isinstance(arguments, dict):
        raise _NotACall("arguments that are not an object")
    return _dumps(arguments)


def _dumps(value: dict[str, Any]) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _NotACall(str(exc)) from exc


def _mistral(after: str, resolve: Resolve) -> list[tuple[str, str]]:
    """`[{...}, ...]` or `{...}`, or `name[ARGS]{...}` (repeated after further `[TOOL_CALLS]`)."""
    if _MISTRAL_ARGS not in after:
        return _json_calls(_one_json(after), resolve)
    calls = []
    for part in after.split(_MISTRAL):
        name, marker, arguments = part.partition(_MISTRAL_ARGS)
        if not marker or name.strip() != name or not name:
            raise _NotACall("not name[ARGS]{...}")
        value = _one_json(arguments)
        if not isinstance(value, dict):  # the object itself, never a string holding one
            raise _NotACall("arguments that are not an object")
        calls.append((_name(name, resolve), _arguments(value)))
    return calls


def _llama(after: str, resolve: _Reading) -> list[tuple[str, str]]:
    """One JSON call, or several separated by `;`."""
    after = after.strip()
    if after.endswith("<|eom_id|>") or after.endswith("<|eot_id|>"):
        after = after[: -len("<|eom_id|>")]
    calls: list[tuple[str, str]] = []
    while True:
        try:
            value, end = _DECODER.raw_decode(after)
        except ValueError as exc:
            if resolve.truncated and calls:
                return calls
            raise _NotACall(str(exc)) from exc
        calls.append(_json_call(value, resolve))
        after = after[end:].strip()
        if not after:
            return calls
        if not after.startswith(";"):
            raise _NotACall("text after a call")
        after = after[1:].strip()
        if not after:
            return calls


def _pythonic(text: str, resolve: Resolve) -> list[tuple[str, str]]:
    """`[name(key=literal, ...), ...]`: read with `ast`, the values with `literal_eval`."""
    if len(text) > 100_000:
        raise _NotACall("too long")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise _NotACall(str(exc)) from exc
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        raise _NotACall("not a list of calls")
    calls = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            raise _NotACall("not a call by name with keyword arguments")
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg in arguments:
                raise _NotACall("** or a repeated keyword")
            arguments[keyword.arg] = _literal(keyword.value)
        calls.append((_name(node.func.id, resolve), _dumps(arguments)))
    return calls


def _literal(node: ast.expr) -> Any:
    """A JSON value written as a Python literal (`None`, `True` and `False` included)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise _NotACall("not a literal") from exc
    return _as_json(value)


def _as_json(value: Any) -> Any:
    """Tuples become lists; anything JSON cannot carry (sets, bytes, complex, NaN) is refused."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotACall("not a finite number")
        return value
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _as_json(item) for key, item in value.items()}
    raise _NotACall(f"a {type(value).__name__} is no JSON value")
