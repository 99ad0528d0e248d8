"""Property tests of argument checking: a check that cannot be completed never passes, numbers JSON
cannot carry are refused, and no schema (JSON Schema or not) makes the argument functions raise
anything but `ArgumentsError`."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators

from mcpx_router.model._schema import convert_parameters
from mcpx_router.model._shape import survives_conversion
from mcpx_router.model.arguments._arguments import (
    ArgumentsError,
    flatten,
    parse_arguments,
    resolve_local_ref,
    schema_types,
)
from mcpx_router.model.arguments._jsonstring import decode_stringified, stringify_complex_parameters
from mcpx_router.model.arguments._repair import _takes_null, drop_optional_nulls, repair_arguments
from mcpx_router.model.arguments._validation import ArgumentValidator, prepare_arguments, quick_check
from mcpx_router.model.strict._strict import make_strict, strip_added_nulls

# --- strategies --------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "a", "ab", "x1", "{}", "[1]", '{"a": 1}', "null"])
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(NAMES, JSON_VALUES, max_size=3)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])
DRAFTS = st.sampled_from(
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ]
)
NUMBERS = st.integers(-3, 3) | st.sampled_from([0.5, 2.5, 1e300, -1e300])
# Keywords with values that are not valid JSON Schema, each met by real peers or easy to get wrong.
BROKEN: list[dict[str, Any]] = [
    {"type": 7},
    {"type": "any"},
    {"type": ["string", 5]},
    {"properties": 5},
    {"properties": {"a": 5}},
    {"required": "a"},
    {"required": True},
    {"required": [5, ["a"]]},
    {"minimum": "5"},
    {"maxLength": -1},
    {"enum": 3},
    {"anyOf": []},
    {"anyOf": 5},
    {"items": 4},
    {"pattern": "("},
    {"pattern": 5},
    {"additionalProperties": "no"},
    {"multipleOf": 0},
    {"$ref": "#/$defs/missing"},
    {"$ref": "#"},
    {"$ref": "#/required"},
    {"$ref": 5},
    {"dependentRequired": {"a": 5}},
    {"const": {"a": [1, 2]}},
]
LEAVES = (
    st.booleans()
    | st.fixed_dictionaries({}, optional={"type": TYPES | st.lists(TYPES, min_size=1, max_size=3)})
    | st.fixed_dictionaries({"enum": st.lists(SCALARS, min_size=1, max_size=3)})
    | st.fixed_dictionaries({"const": SCALARS})
    | st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": NUMBERS,
            "exclusiveMaximum": NUMBERS,
            "multipleOf": st.sampled_from([2, 0.5, 0.1]),
        },
    )
    | st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"minLength": st.integers(0, 2), "pattern": st.sampled_from(["^a", "b$", "[0-9]"])},
    )
    | st.sampled_from([{"$ref": "#/$defs/d"}, {"$ref": "#/properties/a"}])
    | st.sampled_from(BROKEN)
)


UNIONS = st.sampled_from(["anyOf", "oneOf", "allOf"])


def _merged(a: Any, b: Any) -> Any:
    return {**a, **b} if isinstance(a, dict) and isinstance(b, dict) else a


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": inner,
            },
        )
        | st.fixed_dictionaries(
            {"type": st.just("array")},
            optional={
                "items": inner,
                "prefixItems": st.lists(inner, max_size=2),
                "minItems": st.integers(0, 2),
            },
        )
        | st.builds(lambda k, v: {k: v}, UNIONS, st.lists(inner, min_size=1, max_size=3))
        | st.builds(lambda v: {"not": v}, inner)
        | st.builds(lambda i, t: {"if": i, "then": t}, inner, inner)
        | st.builds(_merged, inner, inner)
    )


SUBSCHEMAS = st.recursive(LEAVES, _compound, max_leaves=10)


@st.composite
def root_schemas(draw: st.DrawFn) -> Any:
    """A tool's input schema: mostly an object with properties, sometimes anything a schema can be."""
    body = draw(SUBSCHEMAS)
    if not isinstance(body, dict):
        return body
    schema: dict[str, Any] = {"type": "object", **body} if draw(st.booleans()) else dict(body)
    if draw(st.booleans()):
        schema["properties"] = draw(st.dictionaries(NAMES, SUBSCHEMAS, min_size=1, max_size=3))
    if draw(st.booleans()):
        schema["$defs"] = {"d": draw(SUBSCHEMAS)}
    if draw(st.booleans()):
        schema["$schema"] = draw(DRAFTS)
    return schema


def reference_errors(schema: Any, args: Any) -> list[Any] | None:
    """jsonschema's own verdict for the schema's declared draft; None when it cannot give one."""
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    cls = Draft202012Validator
    if isinstance(declared, str):  # a draft jsonschema does not know is read as 2020-12, as we do
        cls = validators.validator_for({"$schema": declared}, default=Draft202012Validator)
    try:
        return list(cls(schema).iter_errors(args))
    except Exception:
        return None
    except BaseException as exc:  # pyo3's PanicException, when recursion runs out inside `referencing`
        if type(exc).__name__ != "PanicException":
            raise
        return None


def verdict(validator: ArgumentValidator, args: Any) -> list[str] | None:
    """Our verdict: the problems found, or None when the check refused."""
    try:
        return validator.errors(args)
    except ArgumentsError as exc:
        assert "could not be checked" in str(exc)
        return None


# --- 1. a check that fails never passes --------------------------------------------------------


@settings(max_examples=800, deadline=None)
@given(root_schemas(), ARGUMENTS)
def test_valid_only_when_jsonschema_says_valid_for_the_original_schema(schema: Any, args: Any) -> None:
    validator = ArgumentValidator(schema)
    ours = verdict(validator, args)
    expected = reference_errors(schema, args)
    event("refused" if ours is None else "valid" if ours == [] else "invalid")
    # Refused exactly when jsonschema cannot decide; otherwise the same verdict.
    assert (ours is None) == (expected is None)
    if ours is not None and expected is not None:
        assert (ours == []) == (expected == [])
    quick = quick_check(schema)
    if quick is not None and validator.problem is None and quick(args):
        assert expected == []


@settings(max_examples=300, deadline=None)
@given(root_schemas(), ARGUMENTS)
def test_repairs_never_make_invalid_arguments_pass(schema: Any, args: dict[str, Any]) -> None:
    # What prepare returns is what the peer gets: jsonschema must accept it as it stands.
    try:
        prepared = prepare_arguments(json.dumps(args), schema)
    except ArgumentsError:
        return
    assert reference_errors(schema, prepared) == []


def _nest(depth: int, leaf: Any, wrap: str) -> tuple[dict[str, Any], Any, Any]:
    """A schema `depth` levels deep ending in an integer, a valid instance and an invalid one."""
    schema: dict[str, Any] = {"type": "integer"}
    good, bad = 1, "x"
    for level in range(depth):
        kind = wrap if wrap != "mixed" else ("object", "array", "anyOf")[level % 3]
        if kind == "object":
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
            good, bad = {"a": good}, {"a": bad}
        elif kind == "array":
            schema = {"type": "array", "items": schema}
            good, bad = [good], [bad]
        else:
            schema = {"anyOf": [{"type": "null"}, schema]}
    return {"type": "object", "properties": {"v": schema}, "required": ["v"]}, {"v": good}, {"v": bad}


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 700), st.sampled_from(["object", "array", "anyOf", "mixed"]))
def test_deep_schemas_are_checked_or_refused(depth: int, wrap: str) -> None:
    schema, good, bad = _nest(depth, 1, wrap)
    validator = ArgumentValidator(schema)
    assert verdict(validator, bad) != []  # invalid arguments never pass, however deep the schema
    assert verdict(validator, good) in ([], None)
    if depth <= 100:  # deeper than the schema conversion keeps, well within what jsonschema follows
        assert verdict(validator, bad)
        assert verdict(validator, good) == []


def test_a_very_deep_schema_is_refused_with_a_reason() -> None:
    schema, good, _ = _nest(1500, 1, "object")
    with pytest.raises(ArgumentsError) as caught:
        ArgumentValidator(schema).errors(good)
    assert str(caught.value).startswith(
        "These arguments could not be checked against the peer's schema for this tool: following them "
        "through the schema nests too deeply"
    )


# --- 2. numbers that overflow ------------------------------------------------------------------

NUMBER_TEXTS = st.from_regex(r"-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True)


@st.composite
def json_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """JSON text whose numbers are written as a model may write them, overflowing ones included."""
    choice = draw(st.integers(0, 4 if depth < 4 else 1))
    if choice == 0:
        return draw(NUMBER_TEXTS)
    if choice == 1:
        return draw(st.sampled_from(["null", "true", '"s"', "NaN", "Infinity", "-Infinity", "1e999"]))
    if choice == 2:
        return "[" + ", ".join(draw(st.lists(json_texts(depth + 1), max_size=3))) + "]"
    items = draw(st.lists(st.tuples(NAMES, json_texts(depth + 1)), max_size=3))
    return "{" + ", ".join(f'"{k}": {v}' for k, v in items) + "}"


def _literals(text: str) -> list[str]:
    import re

    return re.findall(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|NaN|-?Infinity", text)


def _numbers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


@settings(max_examples=400)
@given(json_texts())
def test_numbers_that_are_not_finite_are_refused_at_any_depth(body: str) -> None:
    text = '{"v": ' + body + "}"
    unusable = any(
        lit.endswith(("NaN", "Infinity")) or not math.isfinite(float(lit)) for lit in _literals(text)
    )
    try:
        args = parse_arguments(text)
    except ArgumentsError as exc:
        assert unusable
        message = str(exc)
        assert message.startswith("The arguments cannot be sent: the number ") or (
            message.startswith("The arguments are not valid JSON: ")
            and "is not a valid JSON value" in message
        )
        return
    assert not unusable
    assert all(math.isfinite(n) for n in _numbers(args))
    json.dumps(args, allow_nan=False)  # what the peer receives is JSON


@settings(max_examples=300)
@given(JSON_VALUES, st.sampled_from([math.inf, -math.inf, math.nan]), st.lists(NAMES, min_size=1, max_size=4))
def test_arguments_given_as_mappings_must_be_json(value: Any, bad: float, path: list[str]) -> None:
    args: Any = bad
    for name in path:
        args = {name: [args]} if name == "c" else {name: args}
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(args)
    assert "The arguments must hold only JSON values: at $." in str(caught.value)
    assert "is not a finite number" in str(caught.value)
    assert parse_arguments({"v": value}) == {"v": value}


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"a": {1: "x"}}, "at $.a: the key 1 is not a string"),
        ({"a": [{1, 2}]}, "at $.a[0]: a Python set is not a JSON value"),
        ({"a": b"x"}, "at $.a: a Python bytes is not a JSON value"),
        ({"a": float("nan")}, "at $.a: nan is not a finite number"),
    ],
)
def test_arguments_given_as_mappings_name_what_is_not_json(args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(args)
    assert str(caught.value).startswith(f"The arguments must hold only JSON values: {problem}.\n")


def test_arguments_that_contain_themselves_are_refused() -> None:
    args: dict[str, Any] = {"a": 1}
    args["self"] = args
    with pytest.raises(ArgumentsError, match=r"at \$\.self\.self\.self.*nests more than 256 levels deep"):
        parse_arguments(args)


@pytest.mark.parametrize("text", ['{"n": 1e999}', '{"n": [-2E+400]}', '{"o": {"p": 1e309}}'])
def test_an_overflowing_number_is_named(text: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(text)
    number = text.split(": ")[-1].strip("[]}")
    assert str(caught.value).startswith(
        f"The arguments cannot be sent: the number {number} is out of range "
        "(a double holds at most about 1.8e308)."
    )


# --- 3. any value where a schema should be -----------------------------------------------------

KEYWORDS = st.sampled_from(
    ["type", "properties", "required", "items", "prefixItems", "anyOf", "oneOf", "allOf", "not", "$ref",
     "$defs", "enum", "const", "additionalProperties", "patternProperties", "minimum", "pattern", "default",
     "description", "nullable", "if", "then", "else", "$schema", "a", "b"]
)  # fmt: skip
REFS = st.sampled_from(
    ["#", "#/$defs/a", "#/properties/a", "#/properties", "#/required", "#/type", "#/0", "#/²", "#/%zz",
     "#/items/0", "other.json", "#a"]
) | st.text(max_size=5)  # fmt: skip
ANY_SCALARS = SCALARS | st.floats() | REFS
ANY_VALUES = st.recursive(
    ANY_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYWORDS | NAMES, inner, max_size=4),
    max_leaves=12,
)
RAW_ARGUMENTS = (
    st.none()
    | ARGUMENTS
    | st.dictionaries(NAMES, ANY_VALUES, max_size=3)
    | ARGUMENTS.map(json.dumps)
    | st.text(max_size=20)
    | st.sampled_from(
        ['{"a": 1e999}', '{"a": NaN}', "[1]", '"{\\"a\\": null}"', "", "{", '{"a": null, "b": "{}"}']
    )
)


def _only_arguments_errors(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ArgumentsError:
        return None


@settings(max_examples=1000, deadline=None)
@given(ANY_VALUES, RAW_ARGUMENTS)
def test_no_schema_makes_the_argument_functions_raise(schema: Any, raw: Any) -> None:
    args = _only_arguments_errors(parse_arguments, raw)
    if args is None:
        return
    assert isinstance(drop_optional_nulls(args, schema), dict)
    assert isinstance(repair_arguments(args, schema), dict)
    subschemas = flatten([schema], schema)
    schema_types(subschemas)
    for sub in [schema, *subschemas]:
        _takes_null(sub)
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str):
            resolve_local_ref(schema, sub["$ref"])
    validator = ArgumentValidator(schema)
    _only_arguments_errors(validator.errors, args)
    _only_arguments_errors(validator.prepare, raw)
    _only_arguments_errors(prepare_arguments, raw, schema)  # through the cache of compiled schemas
    if isinstance(schema, dict):
        _, plan = stringify_complex_parameters(schema)
        _only_arguments_errors(decode_stringified, args, plan)
        outcome = make_strict(schema)
        assert isinstance(strip_added_nulls(args, outcome), dict)


def test_odd_references_resolve_to_nothing_rather_than_raise() -> None:
    root = {"a": [1, 2], "b": {"c": 3}}
    assert resolve_local_ref(root, "#/a/²") is None  # a digit to str.isdigit, not to int()
    assert resolve_local_ref(root, "#/a/1") == 2
    assert resolve_local_ref(root, "#/b/c") == 3
    assert resolve_local_ref(root, "#/a/9") is None


def test_optional_nulls_are_read_from_any_shape_of_schema() -> None:
    args = {"a": None, "b": None}
    assert drop_optional_nulls(args, {"properties": {"a": {"type": "string"}}, "required": 7}) == {"b": None}
    assert drop_optional_nulls(args, {"properties": {"a": {"anyOf": 5}, "b": {"type": "null"}}}) == args
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        deep = {"anyOf": [deep]}
    assert drop_optional_nulls(args, {"properties": {"a": deep}}) == args  # too deep to tell: kept


@settings(max_examples=200)
@given(JSON_VALUES, st.integers(0, 80))
def test_a_conversion_is_checked_against_only_when_it_lost_nothing(value: Any, depth: int) -> None:
    schema: Any = {"type": "object", "properties": {"v": {"const": value}}}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    converted = convert_parameters(schema)
    if survives_conversion(schema):
        assert converted == schema  # nothing cut: checking the conversion is checking the schema
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    assert not survives_conversion(cyclic)


TREE: dict[str, Any] = {
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["name"],
        }
    },
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/Node"}},
}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 450), st.booleans())
def test_deep_arguments_under_a_recursive_schema_are_checked_or_refused(depth: int, valid: bool) -> None:
    node: dict[str, Any] = {"name": "leaf" if valid else 1}
    for _ in range(depth):
        node = {"name": "n", "children": [node]}
    args = parse_arguments(json.dumps({"root": node}))
    found = verdict(ArgumentValidator(TREE), args)
    if valid:
        assert found in ([], None)
    else:
        assert found != []  # a wrong leaf, however deep, is never let through
    if depth <= 100:
        assert (found == []) == valid


@pytest.mark.parametrize("bound", [math.inf, -math.inf, math.nan])
def test_json_string_examples_skip_bounds_that_are_not_numbers(bound: float) -> None:
    # A peer's schema can carry Infinity (pydantic reads it from JSON); the example stays finite.
    schema = {
        "type": "object",
        "properties": {"o": {"type": "object", "properties": {"n": {"type": "integer", "minimum": bound}}}},
    }
    published, plan = stringify_complex_parameters(schema)
    assert plan.parameters["o"].example == '{"n": 1}'
    assert published["properties"]["o"]["description"] == 'JSON-encoded object, e.g. {"n": 1}'
