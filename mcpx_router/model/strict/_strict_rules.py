"""What OpenAI's strict mode accepts, and `check_strict`, a checker for it (pure functions, no I/O).

`check_strict` is written from the documented rules alone, so that tests can hold `make_strict`'s
output against it; only the size limits and the reference-cycle check (`_strict_limits`) are shared
by both.

The facts below restate OpenAI's Structured Outputs guide ("Supported schemas"), which also governs
function parameters sent with `strict: true`:

* Value types: string, number, integer, boolean, object, array, plus `enum` and `anyOf`. `null` is
  usable in a union to emulate an optional value; a `type` list such as `["string", "null"]` is fine.
* Constraints beyond the type are a closed list: `pattern` and `format` (nine named formats) for
  strings; `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` for numbers;
  `minItems`, `maxItems` for arrays. `minLength`/`maxLength` are not on that list.
* The root is an object, never an `anyOf`.
* Every object sets `additionalProperties: false` and lists every property in `required`.
* `allOf`, `not`, `if`/`then`/`else`, `dependentRequired` and `dependentSchemas` are rejected.
* Each `anyOf` member must itself be a schema of this subset.
* Definitions (`$defs`) referenced with `$ref` are supported, recursion included (`#` or
  `#/$defs/...`).
* Limits: at most 5000 object properties in total and 10 levels of object nesting; at most 120,000
  characters over all property names, definition names, enum values and const values; at most 1000
  enum values in total; a string enum of more than 250 values may hold at most 15,000 characters.

The guide only ever shows `$ref` standing alone, and the official SDK's strict helper inlines a `$ref`
that has sibling keywords, so a `$ref` with siblings is reported as well.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ._strict_limits import MAX_WALK, limit_problems, pointer, ref_cycles, resolve_local_ref

__all__ = ["check_strict"]

SUPPORTED_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
SUPPORTED_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
STRING_KEYWORDS: Final = frozenset({"pattern", "format"})
NUMBER_KEYWORDS: Final = frozenset(
    {"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
)
ARRAY_KEYWORDS: Final = frozenset({"items", "minItems", "maxItems"})
OBJECT_KEYWORDS: Final = frozenset({"properties", "required", "additionalProperties"})
COMMON_KEYWORDS: Final = frozenset({"type", "description", "enum", "const", "anyOf", "$ref"})
REJECTED_COMPOSITION: Final = frozenset(
    {"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas"}
)

FAMILIES: Final = {
    "string": STRING_KEYWORDS,
    "number": NUMBER_KEYWORDS,  # integer too
    "array": ARRAY_KEYWORDS,
    "object": OBJECT_KEYWORDS,
}
TYPED: Final = STRING_KEYWORDS | NUMBER_KEYWORDS | ARRAY_KEYWORDS | OBJECT_KEYWORDS


# Checking a schema against the documented rules. -------------------------------------------------


def check_strict(schema: Any) -> list[str]:
    """Every way `schema` breaks the documented strict-mode rules, each with its path; [] if none.

    Args:
        schema: A function's `parameters` as it would be sent with `strict: true`.

    Returns:
        Human-readable violations such as `"#/properties/a: an object must set additionalProperties: false"`.
    """
    if not isinstance(schema, Mapping):
        return ["#: the root must be a JSON object schema"]
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append('#: the root must have "type": "object"')
    if "anyOf" in schema:
        problems.append("#: the root must not be an anyOf")
    defs = schema.get("$defs", {})
    if not isinstance(defs, Mapping):
        problems.append("#/$defs: must map names to schemas")
        defs = {}
    for name, sub in defs.items():
        _check(schema, sub, ("$defs", name), 0, problems)
    _check(schema, schema, (), 0, problems)
    problems.extend(ref_cycles(schema) + limit_problems(schema))
    return problems


def _check(root: Mapping[str, Any], node: Any, path: tuple[str, ...], depth: int, out: list[str]) -> None:
    at = pointer(path)
    if depth > MAX_WALK:
        out.append(f"{at}: nested too deeply to check")
        return
    if not isinstance(node, Mapping):
        out.append(f"{at}: a subschema must be a JSON object, not {json.dumps(node)[:40]}")
        return
    for key in node:
        if key in REJECTED_COMPOSITION:
            out.append(f"{at}: strict mode rejects {key!r}")
        elif key == "$defs" and path:
            out.append(f"{at}: $defs may only appear at the root")
        elif key != "$defs" and key not in COMMON_KEYWORDS | TYPED:
            out.append(f"{at}: {key!r} is not a keyword of the strict subset")
    if "$ref" in node:
        _check_ref(root, node, at, out)
        return
    types = _types(node, at, out)
    if not types and not any(k in node for k in ("enum", "const", "anyOf")):
        out.append(f"{at}: says nothing about the value (no type, enum, const, anyOf or $ref)")
    for owner, family in FAMILIES.items():
        for key in family & node.keys():
            if owner not in types and not (owner == "number" and "integer" in types):
                out.append(f"{at}: {key!r} needs type {owner}{' or integer' * (owner == 'number')}")
    _check_values(node, at, out)
    if "enum" in node and not (isinstance(node["enum"], list) and node["enum"]):
        out.append(f"{at}: enum must be a non-empty list")
    if "anyOf" in node:
        branches = node["anyOf"]
        if not isinstance(branches, list) or not branches:
            out.append(f"{at}: anyOf must be a non-empty list")
        else:
            for i, sub in enumerate(branches):
                _check(root, sub, (*path, "anyOf", str(i)), depth + 1, out)
    if "object" in types:
        _check_object(root, node, path, depth, out)
    if "array" in types:
        if not isinstance(node.get("items"), Mapping):
            out.append(f"{at}: an array needs one items schema")
        else:
            _check(root, node["items"], (*path, "items"), depth + 1, out)


def _check_ref(root: Mapping[str, Any], node: Mapping[str, Any], at: str, out: list[str]) -> None:
    ref = node["$ref"]
    if len(node) > 1:
        out.append(f"{at}: $ref must stand alone (found {sorted(k for k in node if k != '$ref')})")
    if not isinstance(ref, str):
        out.append(f"{at}: $ref must be a string")
        return
    found = resolve_local_ref(root, ref)
    if found is None or not (found[0] == () or (len(found[0]) == 2 and found[0][0] == "$defs")):
        out.append(f"{at}: $ref {ref!r} must point at the root or at an entry of $defs")


def _types(node: Mapping[str, Any], at: str, out: list[str]) -> frozenset[str]:
    if "type" not in node:
        return frozenset()
    raw = node["type"]
    listed = raw if isinstance(raw, list) else [raw]
    if not listed or not all(isinstance(t, str) for t in listed) or len(set(listed)) != len(listed):
        out.append(f"{at}: type must be a type name or a list of distinct type names")
        return frozenset()
    unknown = sorted(set(listed) - SUPPORTED_TYPES)
    if unknown:
        out.append(f"{at}: unsupported type(s) {unknown}")
    return frozenset(listed)


def _check_values(node: Mapping[str, Any], at: str, out: list[str]) -> None:
    if "format" in node and not (isinstance(node["format"], str) and node["format"] in SUPPORTED_FORMATS):
        out.append(f"{at}: format {node['format']!r} is not one of the supported formats")
    if "pattern" in node and not isinstance(node["pattern"], str):
        out.append(f"{at}: pattern must be a string")
    if "description" in node and not isinstance(node["description"], str):
        out.append(f"{at}: description must be a string")
    for key in NUMBER_KEYWORDS & node.keys():
        value = node[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            out.append(f"{at}: {key} must be a number")
    for key in ("minItems", "maxItems"):
        value = node.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            out.append(f"{at}: {key} must be a non-negative integer")


def _check_object(
    root: Mapping[str, Any], node: Mapping[str, Any], path: tuple[str, ...], depth: int, out: list[str]
) -> None:
    at = pointer(path)
    if node.get("additionalProperties", True) is not False:
        out.append(f"{at}: an object must set additionalProperties: false")
    props = node.get("properties")
    if not isinstance(props, Mapping):
        out.append(f"{at}: an object must list its properties")
        return
    required = node.get("required")
    if (
        not isinstance(required, list)
        or sorted(map(str, required)) != sorted(props)
        or len(required) != len(props)
    ):
        out.append(f"{at}: required must list every property exactly once")
    for name, sub in props.items():
        _check(root, sub, (*path, "properties", name), depth + 1, out)
