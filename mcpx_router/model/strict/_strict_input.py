"""How `make_strict` reads an MCP input schema: size checks up front, type inference, null
acceptance, `allOf`/`$ref` merging, and the description sentences for keywords strict mode drops.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._strict_limits import MAX_WALK, pointer, resolve_local_ref
from ._strict_rules import ARRAY_KEYWORDS, NUMBER_KEYWORDS, OBJECT_KEYWORDS, STRING_KEYWORDS, SUPPORTED_TYPES

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
    if not isinstance(branch, Mapping) or depth > MAX_WALK:
        return False
    if isinstance(branch.get("anyOf"), list):
        return any(fits_member(value, b, root, depth + 1) for b in branch["anyOf"])
    kinds = type_set(branch.get("type"))
    if isinstance(value, Mapping):
        props = branch.get("properties")
        return "object" in kinds and isinstance(props, Mapping) and set(props) == set(value)
    return isinstance(value, list) and "array" in kinds
