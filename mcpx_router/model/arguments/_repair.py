"""Repairing what a model evidently meant, before its arguments are checked again: nulls for optional
parameters it meant to leave out, and JSON strings where the schema wants an object or an array.
Any value may stand where a schema should be: odd schemas only mean fewer repairs (pure: no I/O).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ._arguments import flatten, json_type, loads, schema_types

__all__ = ["drop_optional_nulls", "repair_arguments"]

_MAX_DEPTH: Final = 64  # nesting levels that repair descends into


def drop_optional_nulls(args: Mapping[str, Any], schema: object) -> dict[str, Any]:
    """`args` without top-level nulls the schema does not take for properties it does not require.

    Models often send `null` for an optional parameter they mean to leave out; the peer would
    reject it, while leaving it out is what the model meant.
    """
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return dict(args)
    properties, required = schema["properties"], schema.get("required")
    if not isinstance(required, list):
        required = []  # an invalid `required` is the validator's to judge; repair just reads it as none
    return {
        key: value
        for key, value in args.items()
        if not (
            value is None and key not in required and key in properties and not _takes_null(properties[key])
        )
    }


def _takes_null(prop: Any, depth: int = 0) -> bool:
    if not isinstance(prop, Mapping) or depth > _MAX_DEPTH:
        return True  # unknown shape: leave the value to the validator
    kind = prop.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if isinstance(prop.get("enum"), list) and None in prop["enum"]:
        return True
    if "const" in prop and prop["const"] is None:
        return True
    unions = [prop[key] for key in ("anyOf", "oneOf") if isinstance(prop.get(key), list)]
    branches = [b for union in unions for b in union if isinstance(b, Mapping)]
    if branches:
        return any(_takes_null(b, depth + 1) for b in branches)
    return kind is None  # no type ($ref, {}, ...) may allow null: the validator says


def repair_arguments(args: Mapping[str, Any], schema: object) -> dict[str, Any]:
    """Decode strings that hold the JSON object or array the schema asks for.

    Models sometimes send `"options": "{\\"timeout\\": 5}"` where `options` is an object. Where
    the schema wants an object or an array (through `$ref`, `allOf`/`anyOf`/`oneOf`, properties,
    `patternProperties`, `additionalProperties`, `items` and `prefixItems`, at any depth) and does
    not also accept a string, a string holding JSON of a wanted type is decoded. Nothing else is
    coerced: `"5"` stays a string where an integer is wanted, because the validation error
    tells the model exactly what to fix, while guessing could turn a mistake into a wrong call.

    Args:
        args: Parsed arguments; never mutated.
        schema: The tool's input schema; odd or invalid schemas only mean fewer repairs.

    Returns:
        A new dict. Nested containers that needed no repair are shared with `args`.
    """
    repaired = _repair(args, [schema], schema, 0)
    return dict(repaired) if isinstance(repaired, Mapping) else dict(args)


def _repair(value: Any, schemas: list[object], root: object, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return value
    applicable = flatten(schemas, root)
    if not applicable:
        return value
    if isinstance(value, str):
        wanted = schema_types(applicable)
        if "string" in wanted or not wanted & {"object", "array"}:
            return value
        decoded = _decode_container(value)
        if decoded is None or json_type(decoded) not in wanted:
            return value
        return _repair(decoded, schemas, root, depth + 1)
    if isinstance(value, Mapping):
        items = {
            key: _repair(
                child, _property_schemas(applicable, key) if isinstance(key, str) else [], root, depth + 1
            )
            for key, child in value.items()
        }
        changed = any(items[key] is not child for key, child in value.items())
        return items if changed else value
    if isinstance(value, list):
        elements = [
            _repair(child, _item_schemas(applicable, index), root, depth + 1)
            for index, child in enumerate(value)
        ]
        changed = any(new is not old for new, old in zip(elements, value, strict=True))
        return elements if changed else value
    return value


def _decode_container(text: str) -> dict[str, Any] | list[Any] | None:
    text = text.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        decoded = loads(text)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict | list) else None


def _property_schemas(schemas: list[Mapping[str, Any]], key: str) -> list[object]:
    found: list[object] = []
    for schema in schemas:
        properties, patterns = schema.get("properties"), schema.get("patternProperties")
        matched = isinstance(properties, Mapping) and key in properties
        if matched:
            found.append(properties[key])  # type: ignore[index]
        if isinstance(patterns, Mapping):
            for pattern, subschema in patterns.items():
                if isinstance(pattern, str) and _search(pattern, key):
                    found.append(subschema)
                    matched = True
        additional = schema.get("additionalProperties")
        if not matched and isinstance(additional, Mapping):
            found.append(additional)
    return found


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except (re.error, OverflowError, RecursionError):  # a pattern Python cannot compile: no match
        return False


def _item_schemas(schemas: list[Mapping[str, Any]], index: int) -> list[object]:
    found: list[object] = []
    for schema in schemas:
        prefix, items = schema.get("prefixItems"), schema.get("items")
        if isinstance(prefix, list) and index < len(prefix):
            found.append(prefix[index])
        elif isinstance(items, list):  # the tuple form of drafts 4 to 2019-09
            additional = schema.get("additionalItems")
            extra = [additional] if isinstance(additional, Mapping) else []
            found.extend(items[index : index + 1] or extra)
        elif isinstance(items, Mapping):
            found.append(items)
    return found
