"""The documented size limits of OpenAI's strict mode and the whole-schema checks shared by
`check_strict` and `make_strict` (size limits, reference cycles, object depth), with the JSON pointer
helpers they rest on; pure functions, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["limit_problems", "object_depth", "pointer", "ref_cycles", "resolve_local_ref"]

MAX_PROPERTIES: Final = 5000
MAX_OBJECT_DEPTH: Final = 10
MAX_TOTAL_STRING: Final = 120_000
MAX_ENUM_VALUES: Final = 1000
LARGE_ENUM: Final = 250
MAX_LARGE_ENUM_CHARS: Final = 15_000

MAX_WALK: Final = 200
"""Schemas nested deeper than this are reported, not walked (keeps the checker off the C stack)."""


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
            if isinstance(sub, Mapping) and depth <= MAX_WALK:
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
        if not isinstance(node, Mapping) or depth > MAX_WALK:
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
        if not isinstance(node, Mapping) or level > MAX_WALK:
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
