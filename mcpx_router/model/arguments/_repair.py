"""Repairing what a model evidently meant, before its arguments are checked again: nulls for optional
parameters it meant to leave out, JSON strings where the schema wants an object or an array, and
numbers or booleans written as strings where the schema takes no string. Any value may stand where
a schema should be: odd schemas only mean fewer repairs (pure: no I/O).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from ._arguments import flatten, json_type, loads, resolve_local_ref, schema_types

__all__ = ["drop_optional_nulls", "repair_arguments"]

_MAX_DEPTH: Final = 64  # nesting levels that repair descends into
_INTEGER = re.compile(r"-?[0-9]{1,300}\Z")
"""A string that is an integer and nothing else: no space, no `+`, no fraction (as JSON writes it)."""
_DECIMAL = re.compile(r"-?[0-9]{1,300}(?:\.[0-9]{1,300})?(?:[eE][-+]?[0-9]{1,3})?\Z")
_BOOLEANS: Final = {"true": True, "false": False}


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
    """Decode strings that hold the JSON object or array, the number or the boolean the schema asks for.

    Models sometimes send `"options": "{\\"timeout\\": 5}"` where `options` is an object, or
    `"note_id": "2"` where it is an integer. Where the schema (through `$ref`,
    `allOf`/`anyOf`/`oneOf`, properties, `patternProperties`, `additionalProperties`, `items` and
    `prefixItems`, at any depth) cannot take a string at all, a string is read as what it
    evidently is, as pydantic's lax mode reads it:

    - JSON holding an object or array of a wanted type: decoded;
    - an integer written plainly (`"2"`, `"-17"`) where an integer or a number is wanted: that
      number; a decimal (`"2.5"`, `"1e3"`) where a number is wanted: that number;
    - `"true"` or `"false"` (in any case) where a boolean is wanted: that boolean.

    Where the schema could take the string (a type list or union with `string`, an `enum` or
    `const` holding a string, a branch with no type), nothing is coerced: the string may be
    meant. Nothing else is guessed (`"2.5"` for an integer, `"yes"` for a boolean, `"1"` for a
    boolean): the validation error then tells the model what to fix.

    Args:
        args: Parsed arguments; never mutated.
        schema: The tool's input schema; odd or invalid schemas only mean fewer repairs.

    Returns:
        A new dict. Nested containers that needed no repair are shared with `args`.
    """
    repaired = _repair(args, [schema], schema, 0, True)
    return dict(repaired) if isinstance(repaired, Mapping) else dict(args)


def _repair(value: Any, schemas: list[object], root: object, depth: int, certain: bool) -> Any:
    """`value` repaired; `certain`: the `schemas` are surely those that apply to it (no union
    above it left a choice), so that a string may be read as a number or a boolean."""
    if depth > _MAX_DEPTH:
        return value
    applicable = flatten(schemas, root)
    if not applicable:
        return value
    if isinstance(value, str):
        wanted = schema_types(applicable)
        if "string" in wanted:
            return value
        if not wanted & {"object", "array"}:
            if certain and any(_refuses(schema, root, "string") for schema in schemas):
                return _scalar(value, wanted)
            return value
        decoded = _decode_container(value)
        if decoded is None or json_type(decoded) not in wanted:
            return value
        return _repair(decoded, schemas, root, depth + 1, certain)
    if isinstance(value, Mapping):
        certain = certain and _unambiguous(schemas, root, "object")
        items = {
            key: _repair(
                child,
                _property_schemas(applicable, key) if isinstance(key, str) else [],
                root,
                depth + 1,
                certain,
            )
            for key, child in value.items()
        }
        changed = any(items[key] is not child for key, child in value.items())
        return items if changed else value
    if isinstance(value, list):
        certain = certain and _unambiguous(schemas, root, "array")
        elements = [
            _repair(child, _item_schemas(applicable, index), root, depth + 1, certain)
            for index, child in enumerate(value)
        ]
        changed = any(new is not old for new, old in zip(elements, value, strict=True))
        return elements if changed else value
    return value


def _scalar(text: str, wanted: set[str]) -> Any:
    """`text` as the one integer, number or boolean of a `wanted` type it spells; else as it is."""
    if "boolean" in wanted and text.casefold() in _BOOLEANS:
        return _BOOLEANS[text.casefold()]
    if wanted & {"integer", "number"} and _INTEGER.match(text):
        return int(text)
    if "number" in wanted and _DECIMAL.match(text):
        number = float(text)
        return number if math.isfinite(number) else text
    return text


def _refuses(
    schema: object, root: object, kind: str, depth: int = 0, seen: frozenset[int] = frozenset()
) -> bool:
    """Whether `schema` refuses every value of the JSON type `kind`; False when unsure (an odd
    shape, no type, a schema too deep or looping)."""
    if schema is False:
        return True
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH or id(schema) in seen:
        return False
    seen = seen | {id(schema)}
    declared = schema.get("type")
    declared = [declared] if isinstance(declared, str) else declared
    if isinstance(declared, list) and declared and all(isinstance(t, str) for t in declared):
        if not any(t == kind or (t == "number" and kind == "integer") for t in declared):
            return True
    for key in ("enum", "const"):
        values = schema.get(key) if key == "enum" else [schema.get(key)]
        if key in schema and isinstance(values, list) and not any(_kind_of(v, kind) for v in values):
            return True
    every = schema.get("allOf")
    if isinstance(every, list) and any(_refuses(s, root, kind, depth + 1, seen) for s in every):
        return True
    for key in ("anyOf", "oneOf"):
        union = schema.get(key)
        if isinstance(union, list) and union and all(_refuses(s, root, kind, depth + 1, seen) for s in union):
            return True
    ref = schema.get("$ref")
    target = resolve_local_ref(root, ref) if isinstance(ref, str) else None
    return target is not None and _refuses(target, root, kind, depth + 1, seen)


def _kind_of(value: object, kind: str) -> bool:
    found = json_type(value)
    return found == kind or (kind == "number" and found == "integer")


def _unambiguous(schemas: list[object], root: object, kind: str) -> bool:
    """Whether the subschemas that apply to the parts of a value of type `kind` are certain: each
    `anyOf`/`oneOf` on the way leaves at most one branch that takes such a value, and no
    condition (`if`, `not`, `dependentSchemas`) may change them. Only then is a string inside it
    read as a number or a boolean."""
    stack, seen = list(schemas), set[int]()
    while stack:
        schema = stack.pop()
        if not isinstance(schema, Mapping) or id(schema) in seen:
            continue
        if len(seen) > 256 or {"if", "not", "dependentSchemas", "dependencies"} & schema.keys():
            return False
        seen.add(id(schema))
        for key in ("anyOf", "oneOf"):
            union = schema.get(key)
            if isinstance(union, list):
                kept = [branch for branch in union if not _refuses(branch, root, kind)]
                if len(kept) > 1:
                    return False
                stack.extend(kept)
        every = schema.get("allOf")
        if isinstance(every, list):
            stack.extend(every)
        ref = schema.get("$ref")
        target = resolve_local_ref(root, ref) if isinstance(ref, str) else None
        if target is not None:
            stack.append(target)
    return True


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
