"""JSON-string parameter mode, for models that handle nested schemas badly.

Some models fill deeply nested parameters poorly but are good at writing one JSON string. In this
opt-in mode each top-level parameter that takes an object or an array is published as a string
holding that JSON, with an example in its description; `decode_stringified` turns the strings back
into values before the arguments are validated against the peer's original schema::

    published, plan = stringify_complex_parameters(tool.inputSchema)   # once per tool
    arguments = decode_stringified(parse_arguments(raw), plan)          # per call
    arguments = validator.prepare(arguments)                           # original schema
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from mcpx_router.model.arguments._arguments import (
    ArgumentsError,
    a_or_an,
    flatten,
    format_path,
    json_type,
    loads,
    schema_types,
    shorten,
    syntax_problem,
)

__all__ = ["StringifiedParameter", "StringifyPlan", "decode_stringified", "stringify_complex_parameters"]

_CONTAINERS: Final = ("object", "array")
_MAX_EXAMPLE_DEPTH: Final = 3  # nesting levels shown in an example
_MAX_EXAMPLE_PROPERTIES: Final = 4  # properties shown per object: required ones first
_MAX_EXAMPLE_CHARS: Final = 200  # longer examples are regenerated with less depth
_STRING_SAMPLES: Final = {
    "date": "2024-01-31",
    "date-time": "2024-01-31T12:00:00Z",
    "time": "12:00:00",
    "email": "user@example.com",
    "uri": "https://example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}


@dataclass(frozen=True, slots=True)
class StringifiedParameter:
    """One top-level parameter published as a JSON string.

    Attributes:
        types: The JSON types its decoded value may have (e.g. {"object", "null"}).
        kind: How the description names them, e.g. "object" or "object or null".
        example: The example shown in the description, as JSON text.
    """

    types: frozenset[str]
    kind: str
    example: str


@dataclass(frozen=True, slots=True)
class StringifyPlan:
    """What `stringify_complex_parameters` changed, for `decode_stringified` to undo."""

    parameters: Mapping[str, StringifiedParameter] = field(default_factory=dict)


def stringify_complex_parameters(schema: Mapping[str, Any]) -> tuple[dict[str, Any], StringifyPlan]:
    """Publish every top-level object or array parameter as a JSON string.

    A property whose schema (through `$ref` and unions) takes an object or an array becomes
    `{"type": "string", "description": "<description> JSON-encoded <kind>, e.g. <example>"}`.
    Properties that also accept a plain string are left alone: a string value there would be
    ambiguous.

    Args:
        schema: The tool's original input schema; not mutated.

    Returns:
        The schema to publish (a new top-level dict and `properties`, the rest shared with
        `schema`) and the plan for `decode_stringified`.
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return dict(schema), StringifyPlan()
    published = dict(properties)
    plan: dict[str, StringifiedParameter] = {}
    for name, prop in properties.items():
        types = schema_types(flatten([prop], schema))
        if "string" in types or not types & set(_CONTAINERS):
            continue
        kinds = [t for t in _CONTAINERS if t in types] + sorted(types - set(_CONTAINERS))
        example = _example_text(prop, schema)
        plan[name] = StringifiedParameter(frozenset(types), " or ".join(kinds), example)
        description = prop.get("description") if isinstance(prop, Mapping) else None
        text = description.strip() if isinstance(description, str) else ""
        if text and not text.endswith((".", "!", "?")):
            text += "."
        published[name] = {
            "type": "string",
            "description": f"{text} JSON-encoded {plan[name].kind}, e.g. {example}".lstrip(),
        }
    return {**schema, "properties": published}, StringifyPlan(plan)


def decode_stringified(args: Mapping[str, Any], plan: StringifyPlan) -> dict[str, Any]:
    """Decode the parameters `plan` published as JSON strings.

    A value that is not a string is kept as sent (the model sent the value itself; validation
    against the original schema judges it). A string encoded twice is decoded twice.

    Args:
        args: Parsed arguments; not mutated.
        plan: The plan returned with the published schema.

    Returns:
        A new dict with the decoded values.

    Raises:
        ArgumentsError: A string is not JSON or not of the wanted type; lists every such parameter.
    """
    decoded = dict(args)
    problems: list[str] = []
    for name, param in plan.parameters.items():
        value = decoded.get(name)
        if not isinstance(value, str):
            continue
        wanted = f"at {format_path([name])}: expected a JSON-encoded {param.kind}, e.g. {param.example}"
        try:
            result = loads(value)
            if isinstance(result, str) and not _matches(result, param.types):
                result = loads(result)  # encoded twice: decode once more, as parse_arguments does
        except json.JSONDecodeError as exc:
            problems.append(f"{wanted}, but the string is not valid JSON: {syntax_problem(exc)}")
            continue
        except ValueError as exc:
            problems.append(f"{wanted}, but the string is not valid JSON: {exc}")
            continue
        if not _matches(result, param.types):
            problems.append(f"{wanted}, but the string holds {a_or_an(json_type(result))}")
            continue
        decoded[name] = result
    if problems:
        lines = ["Some arguments must be strings holding JSON:", *(f"- {p}" for p in problems)]
        raise ArgumentsError("\n".join([*lines, "Fix these problems and call the tool again."]))
    return decoded


def _matches(value: object, types: frozenset[str]) -> bool:
    kind = json_type(value)
    if kind in types:
        return True
    if kind == "integer":
        return "number" in types
    # JSON Schema counts 2.0 as an integer.
    return kind == "number" and "integer" in types and float(value).is_integer()  # type: ignore[arg-type]


def _example_text(schema: object, root: Mapping[str, Any]) -> str:
    # Shallower examples until one fits; the shallowest is cut if even that one does not.
    for depth in range(_MAX_EXAMPLE_DEPTH, 0, -1):
        text = json.dumps(_example(schema, root, depth), ensure_ascii=False, default=str)
        if len(text) <= _MAX_EXAMPLE_CHARS:
            return text
    return shorten(json.dumps(_example(schema, root, 0), ensure_ascii=False, default=str), _MAX_EXAMPLE_CHARS)


def _example(schema: object, root: Mapping[str, Any], depth: int) -> Any:
    """Return a sample value for `schema`, descending at most `depth` containers."""
    subschemas = flatten([schema], root)
    for sub in subschemas:  # values the schema itself names are the best examples
        if "const" in sub:
            return sub["const"]
        for keyword in ("enum", "examples"):
            values = sub.get(keyword)
            if isinstance(values, list) and values:
                return values[0]
    types = schema_types(subschemas)
    for kind in ("object", "array", "string", "integer", "number", "boolean"):
        if kind in types:
            break
    else:
        return None
    if kind == "object":
        return _object_example(subschemas, root, depth)
    if kind == "array":
        if depth <= 0:
            return []
        items = [s.get("items") for s in subschemas if isinstance(s.get("items"), Mapping)]
        return [_example(items[0], root, depth - 1)] if items else []
    if kind == "string":
        formats = [s["format"] for s in subschemas if s.get("format") in _STRING_SAMPLES]
        return _STRING_SAMPLES[formats[0]] if formats else "text"
    if kind == "boolean":
        return True
    return _number_example(subschemas, integer=kind == "integer")


def _object_example(subschemas: list[Mapping[str, Any]], root: Mapping[str, Any], depth: int) -> Any:
    if depth <= 0:
        return {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for sub in subschemas:
        if isinstance(sub.get("properties"), Mapping):
            properties.update({k: v for k, v in sub["properties"].items() if k not in properties})
        if isinstance(sub.get("required"), list):
            required += [r for r in sub["required"] if isinstance(r, str) and r in properties]
    names = list(dict.fromkeys(required + list(properties)))[:_MAX_EXAMPLE_PROPERTIES]
    return {name: _example(properties[name], root, depth - 1) for name in names}


def _number_example(subschemas: list[Mapping[str, Any]], *, integer: bool) -> int | float:
    # The first bound found, nudged inside when exclusive (2019+ drafts spell those as numbers).
    for keyword, step in (("minimum", 0), ("exclusiveMinimum", 1), ("maximum", 0), ("exclusiveMaximum", -1)):
        for sub in subschemas:
            bound = sub.get(keyword)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and math.isfinite(bound):
                sample = bound + step
                if not integer:
                    return sample
                return math.ceil(sample) if keyword.endswith("inimum") else math.floor(sample)
    return 1 if integer else 1.5
