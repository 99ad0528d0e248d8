"""MCP tool definitions → OpenAI tool definitions (pure functions, no I/O).

The peer's schema is never mutated: `convert_parameters` builds a new tree while it walks the
old one. `default` is removed wherever a subschema can hold one, and written into that
subschema's description instead, so the model still learns it. Everything else is kept.
A cycle (possible only in schemas built in-process) or absurd nesting is cut off, never followed.

The tree is written in JSON Schema 2020-12, the dialect the API checks every `parameters` against
(its refusals quote that meta-schema: a tuple `items: [...]` is "not of type 'object', 'boolean'").
Forms of older drafts that 2020-12 reads differently are rewritten into their 2020-12 spelling, and
the API's documented refusals that a rewrite can avoid are avoided (`_repair`); `convert_for_openai`
says which rewrites were made, since only then may the tree differ from the peer's schema in meaning.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from .._errors import ToolConversionError
from .._naming import is_legal_name
from ._budget import shorten

__all__ = [
    "EMPTY_PARAMETERS",
    "Conversion",
    "chat_tool",
    "convert_for_openai",
    "convert_parameters",
    "describe_tool",
    "legacy_function",
    "responses_tool",
    "validate_chat_tool",
]

EMPTY_PARAMETERS: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}

MAX_DEPTH: Final = 64
"""Subschemas nested deeper than this are replaced by an empty schema."""

# Where a subschema can stand, in drafts 04, 06, 07, 2019-09 and 2020-12 (their meta-schemas; the
# tests derive these sets from the meta-schemas jsonschema ships and compare).
# Keywords whose value is one subschema.
_ONE: Final = frozenset(
    {
        "items",
        "additionalProperties",
        "additionalItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
# Keywords whose value is a list of subschemas.
_MANY: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})
# Keywords whose value maps names to subschemas (`dependencies`: a subschema or a list of names).
_NAMED: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
"""The only `$schema` kept: the converted tree is written in this dialect."""


class Conversion(NamedTuple):
    """What `convert_for_openai` made of a schema."""

    parameters: dict[str, Any]
    """The new tree: no `default`s, written in JSON Schema 2020-12."""
    repairs: tuple[str, ...]
    """The rewrites beyond moving defaults (e.g. `"tuple items became prefixItems"`); when empty,
    `parameters` accepts exactly the arguments the peer's schema accepts."""


def convert_parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn an MCP `inputSchema` into OpenAI `parameters`: a new tree, defaults moved to descriptions.

    Example:
        >>> convert_parameters({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}})
        {'type': 'object', 'properties': {'n': {'type': 'integer', 'description': 'Default: 3.'}}}
    """
    return convert_for_openai(schema).parameters


def convert_for_openai(schema: Mapping[str, Any] | None) -> Conversion:
    """`convert_parameters`, also saying which repairs were needed for the API to take the tree.

    Example:
        >>> parameters, repairs = convert_for_openai({"properties": {"xs": {"type": "array"}}})
        >>> parameters["properties"]
        {'xs': {'type': 'array', 'items': {}}}
        >>> repairs
        ('an array without items got items: {}',)
    """
    if not schema:
        return Conversion({"type": "object", "properties": {}}, ())
    fixes: list[str] = []
    converted = _convert(schema, depth=0, active=set(), fixes=fixes)
    # A root without a type is read as an object by MCP; OpenAI wants it said.
    if converted.get("$schema", DIALECT) != DIALECT:
        del converted["$schema"]  # the tree is 2020-12 now, whatever the peer's dialect was
        fixes.append("$schema dropped (the parameters are written in JSON Schema 2020-12)")
    kind = converted.setdefault("type", "object")
    if kind.__class__ is list and "object" in kind:
        # Arguments are always an object; the API refuses any other root type (reported as
        # "schema must be a JSON Schema of 'type: \"object\"'"), so the other types are dropped.
        converted["type"] = "object"
        fixes.append("a root typed as a list of types became an object")
    if converted["type"] == "object" and "properties" not in converted:
        # The API refuses a root object without properties ("object schema missing properties").
        converted["properties"] = {}
    return Conversion(converted, tuple(dict.fromkeys(fixes)) if fixes else ())


_ATOMS: Final = frozenset({str, int, float, bool, type(None)})


def _convert(schema: Mapping[str, Any], *, depth: int, active: set[int], fixes: list[str]) -> dict[str, Any]:
    ident = id(schema)
    if depth > MAX_DEPTH or ident in active:
        return {}
    active.add(ident)
    out: dict[str, Any] = {}
    inner = depth + 1
    repair = False  # whether `_repair` may have something to do: a cheap over-estimate
    for key, value in schema.items():
        kind = value.__class__
        if key == "default":
            continue
        if kind in _ATOMS:  # most keywords hold a string or a number: no walk needed
            out[key] = value
            repair = repair or kind is bool or value == "array"  # a draft-04 bound; an array type
        elif kind is dict and key in _NAMED:  # properties, $defs, ...: plain dicts, the hot case
            out[key] = {
                name: _convert(sub, depth=inner, active=active, fixes=fixes)
                if sub.__class__ is dict
                else _copy(sub)
                for name, sub in value.items()
            }
        else:
            out[key] = _convert_keyword(key, value, depth=depth, active=active, fixes=fixes)
            repair = repair or key == "items" or key == "type"  # a tuple; a list of types
    if "default" in schema:
        out["description"] = _with_default(out.get("description"), schema["default"])
    if repair:
        _repair(out, fixes)
    # `active` belongs to one conversion, so an exception may leave it dirty: nothing reads it then.
    active.discard(ident)
    return out


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # the ABC check only for the rare others


def _convert_keyword(key: str, value: Any, *, depth: int, active: set[int], fixes: list[str]) -> Any:
    if key in _ONE and _is_map(value):
        return _convert(value, depth=depth + 1, active=active, fixes=fixes)
    if key in _MANY and isinstance(value, list | tuple):
        return [
            _convert(item, depth=depth + 1, active=active, fixes=fixes) if _is_map(item) else _copy(item)
            for item in value
        ]
    if key in _NAMED and _is_map(value):
        return {
            name: _convert(sub, depth=depth + 1, active=active, fixes=fixes) if _is_map(sub) else _copy(sub)
            for name, sub in value.items()
        }
    return _copy(value)


def _repair(out: dict[str, Any], fixes: list[str]) -> None:
    """Rewrite one converted subschema (in place) into the 2020-12 form the API accepts."""
    items = out.get("items")
    if items.__class__ is list and "prefixItems" not in out:
        # Drafts 04-2019-09 spell a tuple `items: [...]` (+ `additionalItems` for the rest);
        # 2020-12 spells it `prefixItems` (+ `items`), and its meta-schema, which the API applies,
        # refuses a list in `items` ("[...] is not of type 'object', 'boolean'").
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
        fixes.append("tuple items became prefixItems")
    for bound in ("exclusiveMinimum", "exclusiveMaximum"):
        flag = out.get(bound)
        if flag.__class__ is bool:  # draft-04: a flag on minimum/maximum, a number since draft-06
            plain = "minimum" if bound == "exclusiveMinimum" else "maximum"
            limit = out.get(plain)
            del out[bound]
            if flag and limit.__class__ in (int, float):
                out[bound] = out.pop(plain)
            fixes.append(f"draft-04 {bound} became the 2020-12 form")
    kind = out.get("type")
    if (kind == "array" or (kind.__class__ is list and "array" in kind)) and "items" not in out:
        # The API refuses an array without items ("array schema missing items", sigoden/aichat#1049),
        # even one type of a type list (tidewave-ai/tidewave_phoenix#224). `items: {}` says what the
        # absent keyword meant, any items, and is taken without strict mode (can1357/oh-my-pi#211
        # sends it non-strict after strict mode refused it).
        out["items"] = {}
        fixes.append("an array without items got items: {}")


def _copy(value: Any, depth: int = 0, active: frozenset[int] = frozenset()) -> Any:
    """Copy a plain JSON value (enum lists, const, examples) without sharing containers."""
    if value.__class__ in _ATOMS:
        return value
    if depth > MAX_DEPTH or id(value) in active:
        return None
    if isinstance(value, list | tuple):
        if all(v.__class__ in _ATOMS for v in value):
            return list(value)
        inner = active | {id(value)}
        return [_copy(v, depth + 1, inner) for v in value]
    if _is_map(value):
        inner = active | {id(value)}
        return {k: _copy(v, depth + 1, inner) for k, v in value.items()}
    return value


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _with_default(description: Any, default: Any) -> str:
    try:
        shown = _ENCODE(default)
    except (TypeError, ValueError, RecursionError):
        shown = reprlib.repr(default)
    note = f"Default: {shown}."
    if isinstance(description, str) and description.strip():
        text = description.rstrip()
        return f"{text} {note}" if text.endswith((".", "!", "?", ":")) else f"{text}. {note}"
    return note


def describe_tool(
    peer: str,
    tool_name: str,
    description: str | None,
    title: str | None = None,
    *,
    limit: int | None = None,
) -> str:
    """The description the model reads: the peer's text (or a fallback), saying which peer serves it.

    With `limit`, the text is cut (marked with `…`) so the whole stays within `limit` characters.
    """
    text = (description or "").strip() or (title or "").strip() or f"Call the tool {tool_name!r}."
    return shorten(text, limit, f" (via {peer})")


def chat_tool(
    name: str, description: str, parameters: Mapping[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """Chat Completions form: `{"type": "function", "function": {...}}` (`strict` only when true)."""
    function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def responses_tool(
    name: str, description: str, parameters: Mapping[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """Responses API form: flat, with `strict` always present."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": parameters,
        "strict": strict,
    }


def legacy_function(
    name: str, description: str, parameters: Mapping[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """Legacy `functions` form: `{"name", "description", "parameters"}` (`strict` only when true)."""
    function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    if strict:
        function["strict"] = True
    return function


def validate_chat_tool(tool: Mapping[str, Any], *, peer: str, tool_name: str) -> None:
    """Check a converted Chat Completions tool; raise ToolConversionError naming the peer and tool."""

    def fail(problem: str) -> None:
        raise ToolConversionError(
            f"tool {tool_name!r} of peer {peer!r} cannot be offered to OpenAI: {problem}",
            peer=peer,
            tool=tool_name,
        )

    if tool.get("type") != "function":
        fail("its 'type' is not 'function'")
    function = tool.get("function")
    if not isinstance(function, Mapping):
        fail("it has no 'function' object")
        return
    name = function.get("name")
    if not isinstance(name, str) or not is_legal_name(name):
        fail(f"its name {name!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
    parameters = function.get("parameters")
    if not isinstance(parameters, Mapping):
        fail("its parameters are not a JSON object")
        return
    if parameters.get("type") != "object":
        fail(
            f"its input schema has type {parameters.get('type')!r}; OpenAI needs an object at the root "
            "(the peer must describe its arguments as a JSON object)"
        )
    properties = parameters.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        fail("its input schema's 'properties' is not an object")
