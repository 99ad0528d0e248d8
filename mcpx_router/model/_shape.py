"""The shape of a peer's schema tree: whether its conversion keeps every constraint, and whether it is
made of plain JSON containers (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["schema_shape", "survives_conversion"]


_CONVERSION_DEPTH: Final = 64  # `convert_parameters` cuts deeper nesting (and cycles) to `{}`


def survives_conversion(schema: object) -> bool:
    """Whether `convert_parameters(schema)` keeps every constraint of `schema`, so that arguments may be
    checked against the conversion instead: no nesting deeper than it keeps, no cycle (nor any
    container met twice, to keep the test simple)."""
    return schema_shape(schema)[0]


def schema_shape(schema: object) -> tuple[bool, bool]:
    """`survives_conversion(schema)`, and whether `schema` is made only of `dict`s, `list`s and `str`,
    `int`, `float`, `bool` or None (exactly those types: no subclasses, tuples or other mappings;
    the keys are not looked at). The second is False whenever the first is (the walk stops there)."""
    if schema.__class__ in _ATOMS:
        return True, True
    if not isinstance(schema, Mapping | list | tuple):
        return True, False
    try:
        return True, _plain_walk(schema, 0, set())
    except _MetTwice:
        return False, False


class _MetTwice(Exception):
    """A container met twice (or a cycle), or nesting deeper than the conversion keeps."""


def _plain_walk(node: Any, depth: int, seen: set[int]) -> bool:
    """Whether the containers under `node` (one) are plain; raises _MetTwice (see `schema_shape`)."""
    if depth > _CONVERSION_DEPTH or id(node) in seen:
        raise _MetTwice
    seen.add(id(node))
    kind = node.__class__
    plain = kind is dict or kind is list
    children = node.values() if kind is dict or (not plain and isinstance(node, Mapping)) else node
    depth += 1
    for child in children:
        kind = child.__class__
        if kind in _ATOMS:
            continue
        if kind is dict or kind is list or isinstance(child, Mapping | list | tuple):
            plain = _plain_walk(child, depth, seen) and plain
        else:
            plain = False
    return plain


_ATOMS: Final = frozenset({str, int, float, bool, type(None)})
