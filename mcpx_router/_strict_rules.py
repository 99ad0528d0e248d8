"""What OpenAI's strict mode accepts, a checker for it, and how `_strict` reads input schemas.

Pure functions, no I/O. `check_strict` is written from the documented rules alone, so that tests can
hold `make_strict`'s output against it; only the size limits and the reference-cycle check are
shared by both.

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
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["check_strict", "limit_problems", "object_depth", "pointer", "ref_cycles", "resolve_local_ref"]

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

MAX_PROPERTIES: Final = 5000
MAX_OBJECT_DEPTH: Final = 10
MAX_TOTAL_STRING: Final = 120_000
MAX_ENUM_VALUES: Final = 1000
LARGE_ENUM: Final = 250
MAX_LARGE_ENUM_CHARS: Final = 15_000

_MAX_WALK: Final = 200
"""Schemas nested deeper than this are reported, not walked (keeps the checker off the C stack)."""

FAMILIES: Final = {
    "string": STRING_KEYWORDS,
    "number": NUMBER_KEYWORDS,  # integer too
    "array": ARRAY_KEYWORDS,
    "object": OBJECT_KEYWORDS,
}
TYPED: Final = STRING_KEYWORDS | NUMBER_KEYWORDS | ARRAY_KEYWORDS | OBJECT_KEYWORDS


# Checking a schema against the documented rules. -------------------------------------------------


def pointer(parts: tuple[str, ...]) -> str:
    """JSON pointer fragment for a path, as used in messages and `$ref`: `#/properties/a~1b`."""
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_local_ref(root: Any, ref: str) -> tuple[tuple[str, ...], Any] | None:
    """Follow a same-document `$ref` (`#` or `#/json/pointer`); None when it does not resolve."""
    if ref == "#":
        return (), root
    if not ref.startswith("#/"):
        return None
    parts = tuple(p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/"))
    node = root
    for part in parts:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return parts, node


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
    if depth > _MAX_WALK:
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


# Whole-schema checks: reference cycles and the documented size limits. ---------------------------


def ref_cycles(schema: Mapping[str, Any]) -> list[str]:
    """Definitions that reach themselves through `$ref`/`anyOf` alone: they describe no finite value.

    Recursion is only meaningful through an object property or array items, which a value must
    actually contain; `{"$ref": "#/$defs/a"}` as the definition of `a` leads nowhere.
    """
    defs = schema.get("$defs")
    if not isinstance(defs, Mapping):
        return []
    direct: dict[str, set[str]] = {}
    for name, node in defs.items():
        targets: set[str] = set()
        stack: list[tuple[Any, int]] = [(node, 0)]
        while stack:
            sub, depth = stack.pop()
            if isinstance(sub, Mapping) and depth <= _MAX_WALK:
                ref = sub.get("$ref")
                found = resolve_local_ref(schema, ref) if isinstance(ref, str) else None
                if found and len(found[0]) == 2 and found[0][0] == "$defs":
                    targets.add(found[0][1])
                if isinstance(sub.get("anyOf"), list):
                    stack.extend((m, depth + 1) for m in sub["anyOf"])
        direct[name] = targets
    looping = []
    for name in direct:
        reached, todo = set(), list(direct[name])
        while todo:
            nxt = todo.pop()
            if nxt not in reached:
                reached.add(nxt)
                todo.extend(direct.get(nxt, ()))
        if name in reached:
            looping.append(f"{pointer(('$defs', str(name)))}: reaches itself through $ref/anyOf alone")
    return looping


def limit_problems(schema: Mapping[str, Any]) -> list[str]:
    """The documented size limits `schema` exceeds (property count, nesting, string length, enums)."""
    problems: list[str] = []
    n_props = n_enum = n_chars = 0
    for node in _nodes(schema):
        props = node.get("properties")
        if isinstance(props, Mapping):
            n_props += len(props)
            n_chars += sum(len(str(name)) for name in props)
        enum = node.get("enum")
        if isinstance(enum, list):
            n_enum += len(enum)
            n_chars += sum(_text_len(v) for v in enum)
            # Read conservatively: a null added to a large string enum does not lift the limit.
            enum_chars = sum(len(v) for v in enum if isinstance(v, str))
            if len(enum) > LARGE_ENUM and enum_chars > MAX_LARGE_ENUM_CHARS:
                problems.append(
                    f"#: an enum of {len(enum)} values holds {enum_chars} characters "
                    f"(at most {MAX_LARGE_ENUM_CHARS} past {LARGE_ENUM} values)"
                )
        if "const" in node:
            n_chars += _text_len(node["const"])
    defs = schema.get("$defs")
    if isinstance(defs, Mapping):
        n_chars += sum(len(str(name)) for name in defs)
    if n_props > MAX_PROPERTIES:
        problems.append(f"#: {n_props} object properties in total (at most {MAX_PROPERTIES})")
    if n_enum > MAX_ENUM_VALUES:
        problems.append(f"#: {n_enum} enum values in total (at most {MAX_ENUM_VALUES})")
    if n_chars > MAX_TOTAL_STRING:
        problems.append(f"#: {n_chars} characters of names and values (at most {MAX_TOTAL_STRING})")
    depth = object_depth(schema)
    if depth > MAX_OBJECT_DEPTH:
        problems.append(f"#: objects nest {depth} levels deep (at most {MAX_OBJECT_DEPTH})")
    return problems


def _text_len(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, default=str))


def _nodes(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every subschema reachable by structure (not through $ref), the root included."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Mapping) or depth > _MAX_WALK:
            continue
        yield node
        for key in ("properties", "$defs"):
            subs = node.get(key)
            if isinstance(subs, Mapping):
                stack.extend((sub, depth + 1) for sub in subs.values())
        if isinstance(node.get("anyOf"), list):
            stack.extend((sub, depth + 1) for sub in node["anyOf"])
        stack.append((node.get("items"), depth + 1))


def object_depth(schema: Mapping[str, Any]) -> int:
    """How many object schemas nest inside one another, the root counting as one.

    The guide does not say how its levels are counted; counting the root is the stricter reading.

    `$ref`s are followed; a reference back into a definition being measured adds nothing, since
    recursion is allowed and cannot be measured as a finite depth.
    """
    memo: dict[str, int] = {}
    active = {"#"}  # the root is being measured: a `#` inside it is recursion

    def depth_of(node: Any, level: int) -> int:
        if not isinstance(node, Mapping) or level > _MAX_WALK:
            return 0
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref not in memo and ref not in active:
                found = resolve_local_ref(schema, ref)
                active.add(ref)
                memo[ref] = depth_of(found[1], level + 1) if found else 0
                active.discard(ref)
            return memo.get(ref, 0)
        children: list[Any] = [node.get("items")]
        if isinstance(node.get("properties"), Mapping):
            children.extend(node["properties"].values())
        if isinstance(node.get("anyOf"), list):
            children.extend(node["anyOf"])
        below = max((depth_of(c, level + 1) for c in children), default=0)
        kind = node.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
        return below + (1 if is_object else 0)

    return depth_of(schema, 0)


# Conversion helpers: how `make_strict` reads an input schema. -----------------------------------

MAX_INPUT_DEPTH: Final = 64
"""Input schemas nested deeper than this (counting JSON containers) are refused before conversion."""
MAX_INPUT_NODES: Final = 100_000

ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "example", "deprecated", "readOnly", "writeOnly",
     "$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$defs", "definitions", "discriminator",
     "externalDocs", "xml", "contentMediaType", "contentEncoding", "nullable"}
)  # fmt: skip
# Validation keywords that mean nothing once the rest is converted (they only act on tuple arrays,
# or on keys a closed object cannot have).
MOOT: Final = frozenset({"additionalItems", "unevaluatedItems", "unevaluatedProperties", "propertyNames"})
REFUSED: Final = {
    "not": "a 'not' constraint",
    "if": "a conditional (if/then/else)",
    "dependentSchemas": "dependentSchemas",
    "patternProperties": "patternProperties (keys chosen by pattern)",
    "prefixItems": "tuple-style prefixItems",
    "contains": "a 'contains' constraint",
}


def input_problem(schema: Any) -> str | None:
    """Refuse absurd input up front, so that the recursive conversion stays shallow and finite."""
    if not isinstance(schema, Mapping):
        return "#: the input schema is not a JSON object"
    stack: list[tuple[Any, int]] = [(schema, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if depth > MAX_INPUT_DEPTH:
            return f"#: the schema nests more than {MAX_INPUT_DEPTH} levels deep"
        if seen > MAX_INPUT_NODES:
            return f"#: the schema has more than {MAX_INPUT_NODES} parts"
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((v, depth + 1) for v in node)
    return None


def with_sentences(text: str, extra: list[str]) -> str:
    """The description followed by the sentences it does not already hold."""
    text = text.strip()
    added = [s for s in extra if s and s not in text]
    if text and added and text[-1] not in ".!?":
        text += "."  # the added sentences must not run on from the author's last phrase
    return " ".join(([text] if text else []) + added)


_LOWER_BOUNDS: Final = frozenset({"minimum", "exclusiveMinimum", "minItems", "minLength", "minProperties"})
_UPPER_BOUNDS: Final = frozenset({"maximum", "exclusiveMaximum", "maxItems", "maxLength", "maxProperties"})
_INFER: Final = (
    (OBJECT_KEYWORDS | {"patternProperties", "propertyNames", "minProperties", "maxProperties"}, "object"),
    (ARRAY_KEYWORDS | {"prefixItems", "uniqueItems", "contains"}, "array"),
    (STRING_KEYWORDS | {"minLength", "maxLength"}, "string"),
    (NUMBER_KEYWORDS, "number"),
)
MAX_ALLOF_PARTS: Final = 64


def quoted(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _dependent(value: Any) -> str:
    if not isinstance(value, Mapping):
        return ""
    return " ".join(
        f"If {quoted(k)} is given, also give {', '.join(map(quoted, v))}."
        for k, v in value.items()
        if isinstance(v, list) and v
    )


# Keywords strict mode does not take whose meaning fits in a sentence of the description.
DESCRIBED: Final[Mapping[str, Callable[[Any], str]]] = {
    "minLength": lambda v: f"Minimum length: {quoted(v)}.",
    "maxLength": lambda v: f"Maximum length: {quoted(v)}.",
    "uniqueItems": lambda v: "Items must be unique." if v is True else "",
    "minProperties": lambda v: f"At least {quoted(v)} properties.",
    "maxProperties": lambda v: f"At most {quoted(v)} properties.",
    "dependentRequired": _dependent,
    "dependencies": _dependent,
    "examples": lambda v: f"Examples: {', '.join(map(quoted, v))}." if isinstance(v, list) and v else "",
    "example": lambda v: f"Example: {quoted(v)}.",
    "deprecated": lambda v: "Deprecated." if v is True else "",
    "contentEncoding": lambda v: f"Encoding: {quoted(v)}.",
    "contentMediaType": lambda v: f"Media type: {quoted(v)}.",
}


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def says_more(title: str, name: str) -> bool:
    """Whether a title adds anything to the property name (pydantic's "Repo Path" for repo_path does not)."""
    words = re.sub(r"[^a-z0-9]", "", title.lower())
    return bool(words) and words != re.sub(r"[^a-z0-9]", "", name.lower())


def type_set(kind: Any) -> list[str]:
    """The type names in a `type` value, in order; [] when there are none."""
    listed = kind if isinstance(kind, list) else [kind]
    return list(dict.fromkeys(t for t in listed if isinstance(t, str)))


def declared_types(node: Mapping[str, Any]) -> list[str] | None:
    """The node's `type` as a list ([] if absent), or None when it names something that is no JSON type."""
    if "type" not in node:
        return []
    listed = node["type"] if isinstance(node["type"], list) else [node["type"]]
    if not listed or not all(isinstance(t, str) and t in SUPPORTED_TYPES for t in listed):
        return None
    return list(dict.fromkeys(listed))


def _json_type(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else "boolean"
    if isinstance(value, int | float):
        return "integer" if isinstance(value, int) else "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def infer_types(node: Mapping[str, Any]) -> list[str]:
    """The type an untyped node must mean: from its enum/const values, else from its keywords."""
    if isinstance(node.get("enum"), list) and node["enum"]:
        return list(dict.fromkeys(_json_type(v) for v in node["enum"]))
    if "const" in node:
        return [_json_type(node["const"])]
    hits = [kind for keys, kind in _INFER if keys & node.keys()]
    return hits if len(hits) == 1 else []


def copy_json(value: Any) -> Any:
    """A copy of a JSON value that shares no container with the input."""
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [copy_json(v) for v in value]
    return value


def accepts_null(node: Any, root: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    """Whether `null` is a valid value for `node`, read the way `make_strict` reads schemas."""
    if node is True or node == {}:
        return True
    if not isinstance(node, Mapping):
        return False
    ref = node.get("$ref")
    if ref is not None:
        found = resolve_local_ref(root, ref) if isinstance(ref, str) and ref not in seen else None
        if found is None or len(seen) > 32 or not accepts_null(found[1], root, seen | {ref}):
            return False
    kinds = type_set(node["type"]) if "type" in node else None
    if kinds is None and not any(k in node for k in ("anyOf", "oneOf", "allOf", "$ref")):
        kinds = infer_types(node) or None
    if kinds is not None and "null" not in kinds and node.get("nullable") is not True:
        return False
    if "enum" in node and not (isinstance(node["enum"], list) and None in node["enum"]):
        return False
    if "const" in node and node["const"] is not None:
        return False
    for key in ("anyOf", "oneOf"):
        if key in node and node.get("nullable") is not True:
            members = node[key]
            if not (isinstance(members, list) and any(accepts_null(m, root, seen) for m in members)):
                return False
    members = node.get("allOf", [])
    return isinstance(members, list) and all(accepts_null(m, root, seen) for m in members)


def flatten(
    node: Mapping[str, Any], root: Mapping[str, Any], inlined: set[str]
) -> tuple[dict[str, Any] | None, str]:
    """Merge `allOf` members and a `$ref` with siblings into one schema: (merged, "") or (None, why).

    Only the top level is merged; nested subschemas that collide are combined into a nested `allOf`
    that gets merged when the converter reaches it. The `$ref`s followed are added to `inlined`.
    """
    parts: list[Mapping[str, Any]] = []
    why = _collect(node, root, parts, frozenset(), inlined)
    if why:
        return None, why
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key not in merged or merged[key] == value:
                merged[key] = value
                continue
            combined = _combine(key, merged[key], value)
            if combined is None:
                return None, f"allOf members disagree on {key!r}, which cannot be merged"
            merged[key] = combined
    return merged, ""


def _collect(
    node: Any,
    root: Mapping[str, Any],
    parts: list[Mapping[str, Any]],
    seen: frozenset[str],
    inlined: set[str],
) -> str:
    if node is True or node == {}:
        return ""
    if not isinstance(node, Mapping):
        return "an allOf member is not a schema"
    if len(parts) >= MAX_ALLOF_PARTS:
        return f"allOf expands into more than {MAX_ALLOF_PARTS} parts"
    own = {k: v for k, v in node.items() if k not in ("allOf", "$ref", "$defs", "definitions")}
    if own:
        parts.append(own)
    if "$ref" in node:
        ref = node["$ref"]
        found = resolve_local_ref(root, ref) if isinstance(ref, str) and ref not in seen else None
        if found is None:
            return f"$ref {quoted(ref)} does not resolve, or refers to itself through allOf"
        inlined.add(ref)
        why = _collect(found[1], root, parts, seen | {ref}, inlined)
        if why:
            return why
    members = node.get("allOf", [])
    if not isinstance(members, list):
        return "allOf must be a list"
    for member in members:
        why = _collect(member, root, parts, seen, inlined)
        if why:
            return why
    return ""


def _combine(key: str, old: Any, new: Any) -> Any:
    """Both values of one keyword met in allOf members as one value; None when they conflict."""
    if key == "properties" and isinstance(old, Mapping) and isinstance(new, Mapping):
        both = {**old, **new}
        for name in old.keys() & new.keys():
            if old[name] != new[name]:
                both[name] = {"allOf": [old[name], new[name]]}
        return both
    if key == "required" and isinstance(old, list) and isinstance(new, list):
        return [*old, *(n for n in new if n not in old)]
    if key == "type":
        a, b = type_set(old), type_set(new)
        if "number" in a and "integer" in b:
            a = [*a, "integer"]
        if "number" in b and "integer" in a:
            b = [*b, "integer"]
        common = [t for t in a if t in b]
        return common or None
    if key == "enum" and isinstance(old, list) and isinstance(new, list):
        return [v for v in old if v in new] or None
    if key == "description" and isinstance(old, str) and isinstance(new, str):
        return f"{old} {new}"
    if key in ("title", "default", "examples", "example", "$schema", "$id", "$comment"):
        return old
    if key in _LOWER_BOUNDS | _UPPER_BOUNDS and is_number(old) and is_number(new):
        return max(old, new) if key in _LOWER_BOUNDS else min(old, new)
    if key in ("additionalProperties", "unevaluatedProperties") and (old is False or new is False):
        return False
    if key == "items" and isinstance(old, Mapping) and isinstance(new, Mapping):
        return {"allOf": [old, new]}
    return None


def follow_refs(node: Any, at: str, root: Mapping[str, Any]) -> tuple[Any, str]:
    """`node` with its `$ref`s followed, and the pointer where it was found."""
    for _ in range(16):  # our own output never chains more than a few $refs; this only bounds the loop
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        found = resolve_local_ref(root, ref) if isinstance(ref, str) else None
        if found is None:
            break
        node, at = found[1], pointer(found[0])[1:]
    return node, at


def fits_member(value: Any, branch: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether `value` has the shape of this anyOf member (an object: exactly its property names)."""
    branch, _ = follow_refs(branch, "", root)
    if not isinstance(branch, Mapping) or depth > _MAX_WALK:
        return False
    if isinstance(branch.get("anyOf"), list):
        return any(fits_member(value, b, root, depth + 1) for b in branch["anyOf"])
    kinds = type_set(branch.get("type"))
    if isinstance(value, Mapping):
        props = branch.get("properties")
        return "object" in kinds and isinstance(props, Mapping) and set(props) == set(value)
    return isinstance(value, list) and "array" in kinds
