"""Parsing and repairing the arguments a model sends for a tool call, and the `ArgumentsError` whose
message is written for the model so that it can fix the call and try again (pure: no I/O).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import NoneType
from typing import Any, Final, NoReturn
from urllib.parse import unquote

__all__ = ["ArgumentsError", "parse_arguments"]

_EXCERPT_RADIUS: Final = 40  # characters shown on each side of a JSON syntax error
_MAX_SHOWN: Final = 200  # longest excerpt of a received value or of one error message
_MAX_LISTED: Final = 20  # problems listed in one message; a model cannot use a thousand lines
_MAX_BRANCHES: Final = 256  # subschemas considered for one value, against schema blow-ups
_MAX_NESTING: Final = 256  # nesting levels accepted in arguments passed as a mapping (cycles end here)
_FIX_HINT: Final = "Fix these problems and call the tool again."
_OBJECT_HINT: Final = "Send the arguments as one JSON object whose keys are the tool's parameter names."

_JSON_TYPES: Final = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


class ArgumentsError(ValueError):
    """The model's arguments cannot be used; the message is written for the model to read."""


def list_problems(title: str, problems: Sequence[str]) -> str:
    lines = [title, *(f"- {p}" for p in problems[:_MAX_LISTED])]
    if len(problems) > _MAX_LISTED:
        lines.append(f"- ... and {len(problems) - _MAX_LISTED} more")
    return "\n".join([*lines, _FIX_HINT])


# --- small helpers, also used by the JSON-string parameter mode -------------------------------


def json_type(value: object) -> str:
    """Return the JSON type name of a decoded value (`object`, `integer`, ...)."""
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return _JSON_TYPES.get(type(value), f"Python {type(value).__name__}")


def a_or_an(type_name: str) -> str:
    """Return the type name with its article, as in "an array was received"."""
    if type_name == "null":
        return "null"
    return ("an " if type_name[0] in "aeiouAEIOU" else "a ") + type_name


def shorten(text: str, limit: int = _MAX_SHOWN) -> str:
    """Cut `text` to about `limit` characters and make control characters visible."""
    if len(text) > limit:
        text = text[:limit] + "…"
    return _UNPRINTABLE.sub(lambda m: json.dumps(m.group())[1:-1], text)


def syntax_problem(exc: json.JSONDecodeError) -> str:
    """Describe a JSON syntax error with its position and the text around it."""
    start, end = max(0, exc.pos - _EXCERPT_RADIUS), exc.pos + _EXCERPT_RADIUS
    before = ("…" if start else "") + exc.doc[start : exc.pos]
    after = exc.doc[exc.pos : end] + ("…" if end < len(exc.doc) else "")
    excerpt = shorten(before, limit=_EXCERPT_RADIUS + 1) + "<HERE>" + shorten(after, _EXCERPT_RADIUS + 1)
    # Some messages end in "at" already ("Unterminated string starting at").
    where = "" if exc.msg.endswith(" at") else " at"
    return f"{exc.msg}{where} line {exc.lineno}, column {exc.colno}: {excerpt}"


def _reject_constant(name: str) -> NoReturn:
    # Python's json accepts NaN and Infinity, which are not JSON and which no peer can take back.
    raise ValueError(f"{name} is not a valid JSON value")


class _OutOfRange(ValueError):
    """A JSON number too large for a double: valid syntax, but no peer can receive it."""


def _finite_float(text: str) -> float:
    # 1e999 is valid JSON syntax but overflows to inf, which would reach the peer as null or Infinity.
    value = float(text)
    if not math.isfinite(value):
        raise _OutOfRange(
            f"the number {shorten(text, 40)} is out of range (a double holds at most about 1.8e308)"
        )
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_DECODE = _DECODER.decode
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
"""One value from a position, without `decode`'s two whitespace matches and two Python frames."""


def loads(text: str) -> Any:
    """Decode strict JSON; raise ArgumentsError-ready ValueError subclasses on any failure.

    Raises:
        json.JSONDecodeError: For a syntax error (it carries the position).
        ValueError: For NaN/Infinity, numbers that overflow a double (1e999) or have too many digits,
            or nesting that is too deep.
    """
    try:
        return _DECODE(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "digits" in str(exc):  # int() refuses more than sys.get_int_max_str_digits() digits
            raise ValueError("a number has too many digits") from None
        raise


def format_path(path: Iterable[str | int]) -> str:
    """Format a path inside the arguments as `$.options.items[2]["odd key"]`."""
    parts = ["$"]
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _IDENTIFIER.match(step):
            parts.append(f".{step}")
        else:
            parts.append(f"[{json.dumps(step, ensure_ascii=False)}]")
    return "".join(parts)


def resolve_local_ref(root: object, ref: str) -> object | None:
    """Resolve a `#/json/pointer` reference inside `root`; None when it is not one or leads nowhere."""
    if not ref.startswith("#"):
        return None  # another document: never fetched
    node: object = root
    for token in ref[1:].split("/")[1:]:
        token = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isascii() and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def flatten(schemas: Iterable[object], root: object) -> list[Mapping[str, Any]]:
    """List the subschemas that apply to one value: the schemas, their local `$ref` targets and
    their `allOf`/`anyOf`/`oneOf` branches, each once (so recursive references end)."""
    found: list[Mapping[str, Any]] = []
    seen: set[int] = set()
    stack = list(schemas)[::-1]
    while stack and len(found) < _MAX_BRANCHES:
        schema = stack.pop()
        if not isinstance(schema, Mapping) or id(schema) in seen:
            continue
        seen.add(id(schema))
        found.append(schema)
        ref = schema.get("$ref")
        target = resolve_local_ref(root, ref) if isinstance(ref, str) else None
        branches = [b for k in ("allOf", "anyOf", "oneOf") if isinstance(b := schema.get(k), list)]
        stack.extend([s for branch in branches[::-1] for s in branch[::-1]])
        if target is not None:
            stack.append(target)
    return found


def schema_types(schemas: Iterable[Mapping[str, Any]]) -> set[str]:
    """Return the JSON types the schemas name explicitly (strings in `enum`/`const` count)."""
    types: set[str] = set()
    for schema in schemas:
        declared = schema.get("type")
        if isinstance(declared, str):
            types.add(declared)
        elif isinstance(declared, list):
            types.update(t for t in declared if isinstance(t, str))
        enum = schema.get("enum")
        if ("const" in schema and isinstance(schema["const"], str)) or (
            isinstance(enum, list) and any(isinstance(v, str) for v in enum)
        ):
            types.add("string")
    return types


# --- parse -----------------------------------------------------------------------------------


def _plain_object(text: str) -> dict[str, Any] | None:
    """The usual case, one JSON object, decoded; None sends anything unusual down the general path."""
    try:
        value, end = _SCAN(text, 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    # Anything after the object (whitespace included) takes the general path.
    return value if end == len(text) and type(value) is dict else None


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn the model's raw arguments into a dict.

    Empty or blank text and None mean "no arguments"; any other value must be a JSON object
    (JSON `null` is not one). A JSON string whose content is a JSON object (the object encoded
    twice) is decoded once more.

    Args:
        raw: The `arguments` of a tool call: JSON text, or an already decoded mapping.

    Returns:
        A new dict (a shallow copy when `raw` is a mapping).

    Raises:
        ArgumentsError: The text is not JSON (NaN, Infinity and numbers that overflow a double
            included), or its value is not an object; a mapping holds something JSON cannot carry.
    """
    if type(raw) is str and raw[:1] == "{" and (quick := _plain_object(raw)) is not None:
        return quick
    if type(raw) is dict and _plain_json(raw):  # the usual mapping: a plain dict of JSON values
        return dict(raw)
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        if not all(isinstance(key, str) for key in raw):
            raise ArgumentsError(f"The keys of the arguments object must be strings.\n{_OBJECT_HINT}")
        problem = non_json(raw)
        if problem is not None:
            raise ArgumentsError(f"The arguments must hold only JSON values: {problem}.\n{_OBJECT_HINT}")
        return dict(raw)
    if not isinstance(raw, str):
        raise ArgumentsError(_not_an_object(raw))
    text = raw.removeprefix("\ufeff")  # a byte order mark is not JSON, but clearly harmless
    if not text.strip():
        return {}
    value = _decode_or_raise(text, "The arguments are not valid JSON")
    if isinstance(value, str) and value.strip().startswith("{"):
        value = _decode_or_raise(value, "The arguments are a JSON string, and its content is not valid JSON")
    if not isinstance(value, dict):
        raise ArgumentsError(_not_an_object(value, text.strip()))
    return value


_ATOMS: Final = frozenset({str, int, bool, NoneType})


def _plain_json(value: object) -> bool:
    """Whether `value` is plainly JSON: exact dicts with string keys, lists and atoms (the usual case)."""
    if type(value) is dict:  # the usual arguments: one flat object of atoms, without the walk below
        for key, child in value.items():
            kind = type(child)
            if type(key) is not str or (kind not in _ATOMS and not (kind is float and math.isfinite(child))):
                break
        else:
            return True
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_NESTING:
            return False
        children = node.values() if type(node) is dict else node if type(node) is list else None
        if children is None or (type(node) is dict and not all(type(k) is str for k in node)):
            return False
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind not in _ATOMS and not (kind is float and math.isfinite(child)):
                return False
    return True


def non_json(value: object) -> str | None:
    """Where a decoded value holds something JSON cannot carry (inf, NaN, a set, a non-string key,
    nesting deeper than 256 levels or a cycle), said for the model; None when it is all JSON."""
    if _plain_json(value):
        return None
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > _MAX_NESTING:
            return f"at {format_path(path[:8])}…: the value nests more than {_MAX_NESTING} levels deep"
        if isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"at {format_path(path)}: the key {shorten(repr(key))} is not a string"
                stack.append((child, (*path, key)))
        elif isinstance(node, list | tuple):
            stack.extend((child, (*path, index)) for index, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            return f"at {format_path(path)}: {node} is not a finite number"
        elif not isinstance(node, str | int | float | NoneType):
            return f"at {format_path(path)}: a Python {type(node).__name__} is not a JSON value"
    return None


def _decode_or_raise(text: str, what: str) -> Any:
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"{what}: {syntax_problem(exc)}\n{_OBJECT_HINT}") from None
    except _OutOfRange as exc:
        raise ArgumentsError(f"The arguments cannot be sent: {exc}.\n{_OBJECT_HINT}") from None
    except ValueError as exc:
        raise ArgumentsError(f"{what}: {exc}.\n{_OBJECT_HINT}") from None


def _not_an_object(value: object, text: str | None = None) -> str:
    if text is None:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    received = f"{a_or_an(json_type(value))} was received: {shorten(text)}"
    return f"The arguments must be a JSON object, but {received}\n{_OBJECT_HINT}"
