"""What a strict conversion produced, and the nulls it makes the model send taken out again.

`make_strict` (in `_strict`) turns optional properties into required ones that accept `null`;
`strip_added_nulls` removes exactly those nulls from a call's arguments before the peer sees
them. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _strict_input as reading
from ._strict_limits import pointer

__all__ = ["StrictOutcome", "strip_added_nulls"]


@dataclass(frozen=True)
class StrictOutcome:
    """What `make_strict` made of a schema.

    Attributes:
        schema: The strict parameters, or None when the schema cannot be made strict.
        reasons: Why it cannot (empty when `schema` is set), each starting with the input's path.
        notes: What was changed on the way: moved keywords, widened properties, closed objects.
        nullable_paths: JSON pointers into `schema` of the properties widened to accept null because
            they were optional; `strip_added_nulls` drops the nulls found there.
    """

    schema: dict[str, Any] | None
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    nullable_paths: frozenset[str] = frozenset()


def strip_added_nulls(arguments: Mapping[str, Any], outcome: StrictOutcome) -> dict[str, Any]:
    """The arguments without the nulls the model sent for properties strict mode made required.

    Only properties in `outcome.nullable_paths` lose a null; a property that accepted null before
    the conversion keeps it. Objects in arrays, `anyOf` members and `$ref`s are followed.

    Args:
        arguments: The decoded arguments of a tool call made against `outcome.schema`.
        outcome: What `make_strict` returned for the tool's schema.

    Returns:
        A new dict (the arguments are not modified), ready for the peer.
    """
    if outcome.schema is None or not outcome.nullable_paths:
        return dict(arguments)
    stripped = _strip(arguments, outcome.schema, "", outcome.schema, outcome.nullable_paths, 0)
    return stripped if isinstance(stripped, dict) else dict(arguments)


def _strip(value: Any, node: Any, at: str, root: Mapping[str, Any], paths: frozenset[str], depth: int) -> Any:
    node, at = reading.follow_refs(node, at, root)
    if not isinstance(node, Mapping) or depth > 4 * reading.MAX_INPUT_DEPTH:
        return value
    if isinstance(node.get("anyOf"), list):
        for i, branch in enumerate(node["anyOf"]):
            if reading.fits_member(value, branch, root):
                return _strip(value, branch, f"{at}/anyOf/{i}", root, paths, depth + 1)
        return value
    if isinstance(value, Mapping) and isinstance(node.get("properties"), Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            slot = f"{at}/properties/{pointer((key,))[2:]}"
            if item is None and slot in paths:
                continue
            sub = node["properties"].get(key)
            out[key] = item if sub is None else _strip(item, sub, slot, root, paths, depth + 1)
        return out
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [_strip(item, node["items"], f"{at}/items", root, paths, depth + 1) for item in value]
    return value
