"""A tool's call signature from its input schema, for people (pure, no I/O).

    time__get_current_time(timezone: str, format?: "iso" | "unix" = "iso")

Required parameters are `name: type`, optional ones `name?: type`, followed by ` = default`
when the schema gives one. Types read as Python's: `str`, `int`, `float`, `bool`, `None`,
`list[int]`, `dict`, unions `int | str`, enums and constants as their JSON values. Any JSON
value is accepted as a schema; the result is always one line (control characters, line
separators and lone surrogates are escaped) and never longer than about `WIDEST` characters
per parameter type or default.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = ["one_line", "resolve", "signature", "type_text"]

WIDEST = 60
"""The most characters shown of one parameter's type, or of its default."""
_DEPTH = 4
"""How deep nested schemas are described before `…` stands for the rest."""
_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_NAMES |= {"array": "list", "object": "dict"}
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional overrides, which would make a line read other than it is."""


def one_line(text: str, keep: str = "") -> str:
    """`text` with every character that could break the line or the terminal escaped (but `keep`'s)."""
    if text.isprintable():
        return text
    return "".join(_escaped(ch, keep) for ch in text)


def _escaped(ch: str, keep: str) -> str:
    if ch in keep or ch == " ":
        return ch
    if ch not in _BREAKS | _BIDI and unicodedata.category(ch) not in ("Cc", "Cs", "Zl", "Zp"):
        return ch
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or (
        f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
    )


def _short(text: str, limit: int = WIDEST) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """`schema`, or what its local `$ref` (`#/$defs/X`, `#/definitions/X`) points to in `root`."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and depth < _DEPTH:
        ref: str = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return schema
            target = target[part]
        schema, depth = target, depth + 1
    return schema


def type_text(schema: Any, root: Any = None, depth: int = 0) -> str:
    """The Python-like type a JSON Schema describes: `str`, `list[int]`, `"a" | "b"`, `int | None`…"""
    return _short(one_line(_type(schema, schema if root is None else root, depth)))


def _type(schema: Any, root: Any, depth: int) -> str:
    if depth > _DEPTH:
        return "…"
    ref = schema.get("$ref") if isinstance(schema, Mapping) else None
    schema = resolve(schema, root)
    if schema is True or schema == {} or not isinstance(schema, Mapping):
        return "any" if schema is True or isinstance(schema, Mapping) else "never"
    if "const" in schema:
        return _json(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _union([_json(value) for value in enum])
    for key, joint in (("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return _union([_type(b, root, depth + 1) for b in branches], joint)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    parts = [_one_type(k, schema, root, depth) for k in kinds if isinstance(k, str)]
    if parts:
        return _union(parts)
    if isinstance(ref, str) and ref.startswith("#/"):
        return ref.rsplit("/", 1)[-1] or "any"
    return "any"


def _one_type(kind: str, schema: Mapping[str, Any], root: Any, depth: int) -> str:
    name = _NAMES.get(kind, kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping) and schema["items"]:
        return f"list[{_type(schema['items'], root, depth + 1)}]"
    extra = schema.get("additionalProperties")
    if kind == "object" and isinstance(extra, Mapping) and extra and not schema.get("properties"):
        return f"dict[str, {_type(extra, root, depth + 1)}]"
    return name


def _union(parts: list[str], joint: str = " | ") -> str:
    unique = list(dict.fromkeys(parts))
    return joint.join(unique) if unique else "never"


def signature(name: str, schema: Any) -> str:
    """`name(required: type, optional?: type = default, ...)`, from an input schema; always one line."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    needed = {key for key in required if isinstance(key, str)} if isinstance(required, list) else set()
    params: list[str] = []
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            text = f"{one_line(str(key))}{'' if key in needed else '?'}: {type_text(sub, schema)}"
            sub = resolve(sub, schema)
            if isinstance(sub, Mapping) and "default" in sub:
                text += f" = {_short(one_line(_json(sub['default'])))}"
            params.append(text)
    return f"{one_line(name)}({', '.join(params)})"
