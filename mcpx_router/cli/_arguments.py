"""A tool's arguments from the command line, typed by its input schema (pure, no I/O).

    mcpx-router call NAME count=3 flag=true tags=a,b 'filter:={"since": 2020}' name=3

- `key=value`: typed by the parameter's schema. A string parameter takes the text as it is
  (`name=3` is `"3"`); `integer` and `number` take a JSON number; `boolean` takes
  true/false/yes/no/on/off; `null` takes `null` or nothing; `array` takes JSON (`[1, 2]`) or
  comma-separated items, each typed by `items` (`tags=a,b`, `ids=1,2`; empty: `[]`); `object`
  takes JSON. An enum takes one of its values; a union takes the text as it is if any branch may
  be a string, else the first branch that accepts it. A parameter the schema does not describe
  takes the text as it is.
- `key:=JSON`: the JSON value as it is, whatever the schema says (as httpie has it).
- A JSON object (`'{"count": 3}'`): taken as it is; `key=value` items after it add to it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from ._signature import resolve

__all__ = ["RawArguments", "split_arguments", "typed_arguments"]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_TRUE = frozenset({"true", "yes", "on"})
_FALSE = frozenset({"false", "no", "off"})
_ORDER = ("integer", "number", "boolean", "null", "array", "object")
"""The order in which the types of a union that takes no string are tried."""
_DEPTH = 8


@dataclass(frozen=True, slots=True)
class RawArguments:
    """The arguments as given, before the tool's schema is known."""

    base: dict[str, Any] = field(default_factory=dict)
    """From a JSON object, and `key:=JSON` items."""
    pairs: tuple[tuple[str, str], ...] = ()
    """`key=value` items, in order, to be typed by the schema."""


def split_arguments(items: Sequence[str]) -> RawArguments:
    """Read `key=value`, `key:=JSON` and JSON-object items; UsageError for one that is none of these."""
    base: dict[str, Any] = {}
    pairs: list[tuple[str, str]] = []
    for item in items:
        if item.lstrip().startswith("{"):
            value = _json(item, "the JSON object")
            if not isinstance(value, dict):
                raise UsageError(f"{_shown(item)} is not a JSON object")
            base.update(value)
            continue
        key, sep, value = item.partition("=")
        if not sep or not key or key == ":":
            raise UsageError(
                f"{_shown(item)} is not an argument: give key=value, key:=JSON or a JSON object "
                "like '{\"key\": 1}'"
            )
        if key.endswith(":"):
            base[key[:-1]] = _json(value, f"the value of {key[:-1]!r}")
            pairs = [(k, v) for k, v in pairs if k != key[:-1]]
        else:
            base.pop(key, None)
            pairs.append((key, value))
    return RawArguments(base, tuple(pairs))


def typed_arguments(raw: RawArguments, schema: Any) -> dict[str, Any]:
    """The arguments, each `key=value` typed by `schema`; UsageError naming the parameter if one cannot be."""
    arguments = dict(raw.base)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    extra = schema.get("additionalProperties") if isinstance(schema, Mapping) else None
    for key, text in raw.pairs:
        if isinstance(properties, Mapping) and key in properties:
            sub = properties[key]
        else:
            sub = extra if isinstance(extra, Mapping) else {}
        try:
            arguments[key] = coerce(text, sub, schema)
        except ValueError as exc:
            raise UsageError(f"{key}={_shown(text)}: {exc}") from None
    return arguments


def coerce(text: str, schema: Any, root: Any = None, depth: int = 0) -> Any:
    """The value `text` stands for under `schema`; ValueError saying what was expected if none."""
    schema = resolve(schema, schema if root is None else root)
    root = schema if root is None else root
    if not isinstance(schema, Mapping) or depth > _DEPTH:
        return text
    if "const" in schema:
        return _choice(text, [schema["const"]])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _choice(text, schema["enum"])
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list) and branches:
        if any(_may_be_string(b, root, depth) for b in branches):
            return text
        return _first(text, [(b, None) for b in branches], root, depth)
    kind = schema.get("type")
    kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)]
    if not kinds or "string" in kinds:
        return text
    if len(kinds) == 1:
        return _as(kinds[0], text, schema, root, depth)
    ordered = sorted(kinds, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))
    return _first(text, [(schema, k) for k in ordered], root, depth)


def _first(text: str, options: list[tuple[Any, str | None]], root: Any, depth: int) -> Any:
    wanted: list[str] = []
    for schema, kind in options:
        try:
            if kind is None:
                return coerce(text, schema, root, depth + 1)
            return _as(kind, text, schema, root, depth)
        except ValueError as exc:
            wanted.append(str(exc).removeprefix("expected "))
    raise ValueError("expected " + " or ".join(dict.fromkeys(wanted)))


def _as(kind: str, text: str, schema: Mapping[str, Any], root: Any, depth: int) -> Any:
    if kind == "integer":
        if _INTEGER.fullmatch(text.strip()):
            return int(text)
        raise ValueError("expected an integer")
    if kind == "number":
        if _NUMBER.fullmatch(text.strip()):
            value = json.loads(text)
            if isinstance(value, int) or math.isfinite(value):
                return value
        raise ValueError("expected a number")
    if kind == "boolean":
        if text.strip().lower() in _TRUE | _FALSE:
            return text.strip().lower() in _TRUE
        raise ValueError("expected true or false")
    if kind == "null":
        if text.strip() in ("", "null"):
            return None
        raise ValueError("expected null")
    if kind == "array":
        if text.lstrip().startswith("["):
            value = _json(text, "the list")
            if isinstance(value, list):
                return value
        if text == "":
            return []
        items = schema.get("items")
        return [coerce(part, items, root, depth + 1) for part in text.split(",")]
    if kind == "object":
        value = _json(text, "the object") if text.lstrip().startswith("{") else None
        if isinstance(value, dict):
            return value
        raise ValueError('expected a JSON object like {"key": 1}')
    return text


def _choice(text: str, values: list[Any]) -> Any:
    if text in values:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    else:
        for option in values:
            if type(option) is type(value) and option == value:
                return value
    shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:10])
    raise ValueError(f"expected one of {shown}{', …' if len(values) > 10 else ''}")


def _may_be_string(schema: Any, root: Any, depth: int) -> bool:
    schema = resolve(schema, root)
    if not isinstance(schema, Mapping) or depth > _DEPTH:
        return True
    if "const" in schema:
        return isinstance(schema["const"], str)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return any(isinstance(v, str) for v in schema["enum"])
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list) and branches:
        return any(_may_be_string(b, root, depth + 1) for b in branches)
    kind = schema.get("type")
    kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)]
    return not kinds or "string" in kinds


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise UsageError(f"{what} is not valid JSON ({exc}): {_shown(text)}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "…"
