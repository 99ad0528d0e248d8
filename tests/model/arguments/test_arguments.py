"""Tests of what happens to the model's arguments before a tool call: parse, repair, validate,
prepare, and the JSON-string parameter mode."""

from __future__ import annotations

import copy
import json
import urllib.request
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpx_router.model.arguments._arguments import ArgumentsError, parse_arguments
from mcpx_router.model.arguments._jsonstring import (
    StringifyPlan,
    decode_stringified,
    stringify_complex_parameters,
)
from mcpx_router.model.arguments._repair import drop_optional_nulls, repair_arguments
from mcpx_router.model.arguments._validation import ArgumentValidator, prepare_arguments, validate_arguments

HINT = "Send the arguments as one JSON object whose keys are the tool's parameter names."
FIX = "Fix these problems and call the tool again."

# --- real-world-like schemas -------------------------------------------------------------------

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
        "options": {
            "type": "object",
            "description": "Request options",
            "properties": {"timeout": {"type": "number"}, "retries": {"type": "integer", "minimum": 0}},
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
    "additionalProperties": False,
}

# What pydantic produces for models with an Optional sub-model, a list of models and a dict field.
PEOPLE: dict[str, Any] = {
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["street"],
            "title": "Address",
        },
        "Person": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "home": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
                "others": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
            },
            "required": ["name"],
        },
    },
    "type": "object",
    "properties": {
        "person": {"$ref": "#/$defs/Person", "description": "Who"},
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
    },
    "required": ["person"],
}

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
    "required": ["root"],
}

DRAFT7: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "definitions": {
        "Range": {"type": "object", "properties": {"lo": {"type": "number"}, "hi": {"type": "number"}}}
    },
    "type": "object",
    "properties": {
        "range": {"$ref": "#/definitions/Range"},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "object"}]},
    },
}

REAL_SCHEMAS = {"weather": WEATHER, "people": PEOPLE, "tree": TREE, "draft7": DRAFT7}


# --- parse_arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, {}),
        ("", {}),
        ("   \n\t ", {}),
        ("\ufeff", {}),
        ("{}", {}),
        ('{"a": 1}', {"a": 1}),
        ('  {"a": [1, {"b": null}]}  \n', {"a": [1, {"b": None}]}),
        ('\ufeff{"a": 1}', {"a": 1}),
        ('{"città": "Zürich 東京 🌍"}', {"città": "Zürich 東京 🌍"}),
        ('{"s": "\\u00e9\\ud83c\\udf0d"}', {"s": "é🌍"}),
        (json.dumps(json.dumps({"a": 1, "b": [2]})), {"a": 1, "b": [2]}),
        (json.dumps('  {"a": 1}  '), {"a": 1}),
        ({"a": 1}, {"a": 1}),
        ({}, {}),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_parse_accepts(raw: Any, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw) == expected


def test_parse_copies_a_mapping() -> None:
    given_args = {"a": 1}
    parsed = parse_arguments(given_args)
    assert parsed == given_args
    assert parsed is not given_args


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            '{"a": 1 "b": 2}',
            "The arguments are not valid JSON: Expecting ',' delimiter at line 1, column 9: "
            '{"a": 1 <HERE>"b": 2}',
        ),
        (
            "{'a': 1}",
            "The arguments are not valid JSON: Expecting property name enclosed in double quotes "
            "at line 1, column 2: {<HERE>'a': 1}",
        ),
        ('{"a": ', 'The arguments are not valid JSON: Expecting value at line 1, column 7: {"a": <HERE>'),
        (
            '{"a":1}{"b":2}',
            'The arguments are not valid JSON: Extra data at line 1, column 8: {"a":1}<HERE>{"b":2}',
        ),
        ("hello", "The arguments are not valid JSON: Expecting value at line 1, column 1: <HERE>hello"),
        (
            '{\n  "a": 1,\n  "b": \n}',
            "The arguments are not valid JSON: Expecting value at line 4, column 1: "
            '{\\n  "a": 1,\\n  "b": \\n<HERE>}',
        ),
        ('{"a": NaN}', "The arguments are not valid JSON: NaN is not a valid JSON value."),
        ('{"a": -Infinity}', "The arguments are not valid JSON: -Infinity is not a valid JSON value."),
        ('{"a": ' + "9" * 5000 + "}", "The arguments are not valid JSON: a number has too many digits."),
        ("[" * 100_000, "The arguments are not valid JSON: the JSON is nested too deeply."),
        (
            json.dumps('{"a": }'),
            "The arguments are a JSON string, and its content is not valid JSON: "
            'Expecting value at line 1, column 7: {"a": <HERE>}',
        ),
        ("[1, 2]", "The arguments must be a JSON object, but an array was received: [1, 2]"),
        ("42", "The arguments must be a JSON object, but an integer was received: 42"),
        ("4.5", "The arguments must be a JSON object, but a number was received: 4.5"),
        ("true", "The arguments must be a JSON object, but a boolean was received: true"),
        ("null", "The arguments must be a JSON object, but null was received: null"),
        ('""', 'The arguments must be a JSON object, but a string was received: ""'),
        (
            '"weather in Paris"',
            'The arguments must be a JSON object, but a string was received: "weather in Paris"',
        ),
        (
            json.dumps(json.dumps(json.dumps({"a": 1}))),  # encoded three times: decoded once only
            'The arguments must be a JSON object, but a string was received: "\\"{\\\\\\"a\\\\\\": 1}\\""',
        ),
        (json.dumps("[1]"), 'The arguments must be a JSON object, but a string was received: "[1]"'),
        ([1, 2], "The arguments must be a JSON object, but an array was received: [1, 2]"),
        (7, "The arguments must be a JSON object, but an integer was received: 7"),
        (b"{}", "The arguments must be a JSON object, but a Python bytes was received: b'{}'"),
        ({1: "a"}, "The keys of the arguments object must be strings."),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_parse_rejects_with_a_message_for_the_model(raw: Any, message: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(raw)
    assert str(caught.value) == f"{message}\n{HINT}"


def test_parse_trailing_comma() -> None:
    # Python 3.13 words this error differently and points at the comma itself.
    with pytest.raises(
        ArgumentsError,
        match=r"^The arguments are not valid JSON: .* at line 1, column [89]: "
        r'\{"a": 1(<HERE>,|,<HERE>)\}\n',
    ):
        parse_arguments('{"a": 1,}')


@pytest.mark.parametrize(
    "raw",
    [
        '{"text": "' + "x" * 1_000_000 + '" "oops": 1}',  # the error is far from the start
        "[" + "1," * 300_000 + "1]",  # valid JSON, but a huge array
        '{"a": "' + "é" * 500_000,  # unterminated huge string
        "\x00\x01" * 100_000,
    ],
    ids=["far-error", "huge-array", "unterminated", "control-chars"],
)
def test_parse_keeps_messages_short_for_huge_inputs(raw: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(raw)
    message = str(caught.value)
    assert len(message) < 500
    assert "…" in message
    assert "\x00" not in message


def test_parse_excerpt_marks_the_spot_in_a_huge_text() -> None:
    raw = '{"text": "' + "x" * 1000 + '" "oops": 1}'
    with pytest.raises(ArgumentsError) as caught:
        parse_arguments(raw)
    first_line = str(caught.value).splitlines()[0]
    assert first_line == (
        "The arguments are not valid JSON: Expecting ',' delimiter at line 1, column 1013: "
        f'…{"x" * 38}" <HERE>"oops": 1}}'
    )


# Any text at all: typed text, JSON documents, and JSON documents cut or double-encoded.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)
texts = st.one_of(
    st.text(),
    json_values.map(json.dumps),
    json_values.map(json.dumps).map(json.dumps),
    st.tuples(json_values.map(json.dumps), st.integers(0, 50)).map(lambda t: t[0][: t[1]]),
    st.text(alphabet='{}[]",:0123456789.eE+-ntrufalse \\', max_size=40),
)


@given(texts)
def test_parse_raises_only_arguments_error(text: str) -> None:
    try:
        result = parse_arguments(text)
    except ArgumentsError as exc:
        assert str(exc).endswith(HINT)
    else:
        assert isinstance(result, dict)


@given(json_objects)
def test_parse_decodes_objects_encoded_once_or_twice(obj: dict[str, Any]) -> None:
    assert parse_arguments(json.dumps(obj)) == obj
    assert parse_arguments(json.dumps(json.dumps(obj))) == obj
    assert parse_arguments(json.dumps(obj, ensure_ascii=False, indent=2)) == obj


# --- repair_arguments --------------------------------------------------------------------------

OPTIONS = {"type": "object", "properties": {"options": {"type": "object"}, "tags": {"type": "array"}}}


@pytest.mark.parametrize(
    ("schema", "args", "expected"),
    [
        pytest.param(OPTIONS, {"options": '{"timeout": 5}'}, {"options": {"timeout": 5}}, id="object"),
        pytest.param(OPTIONS, {"tags": ' ["a", "b"] '}, {"tags": ["a", "b"]}, id="array"),
        pytest.param(
            OPTIONS,
            {"options": "[1]", "tags": '{"a": 1}'},
            {"options": "[1]", "tags": '{"a": 1}'},
            id="wrong-container-kept",
        ),
        pytest.param(OPTIONS, {"options": "{not json"}, {"options": "{not json"}, id="not-json-kept"),
        pytest.param(OPTIONS, {"options": '{"a": NaN}'}, {"options": '{"a": NaN}'}, id="nan-kept"),
        pytest.param(OPTIONS, {"other": '{"a": 1}'}, {"other": '{"a": 1}'}, id="unknown-property-kept"),
        pytest.param(
            WEATHER, {"city": '{"name": "Paris"}'}, {"city": '{"name": "Paris"}'}, id="string-wanted"
        ),
        pytest.param(WEATHER, {"days": "3"}, {"days": 3}, id="integer-from-digits"),
        pytest.param(WEATHER, {"days": "3.5"}, {"days": "3.5"}, id="no-fraction-for-an-integer"),
        pytest.param(WEATHER, {"days": " 3"}, {"days": " 3"}, id="no-spaces"),
        pytest.param(
            {"properties": {"on": {"type": "boolean"}}},
            {"on": "true"},
            {"on": True},
            id="boolean-from-true",
        ),
        pytest.param(
            {"properties": {"on": {"type": "boolean"}}},
            {"on": "1"},
            {"on": "1"},
            id="no-boolean-from-1",
        ),
        pytest.param(
            {"properties": {"on": {"type": ["boolean", "string"]}}},
            {"on": "false"},
            {"on": "false"},
            id="no-boolean-where-a-string-is-taken",
        ),
        pytest.param(
            {"properties": {"n": {"enum": ["2", 2]}}},
            {"n": "2"},
            {"n": "2"},
            id="no-number-where-an-enum-holds-the-string",
        ),
        pytest.param(
            {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}},
            {"n": "2"},
            {"n": "2"},
            id="no-number-where-a-union-takes-a-string",
        ),
        pytest.param(
            {"properties": {"n": {"anyOf": [{"type": "integer"}, {}]}}},
            {"n": "2"},
            {"n": "2"},
            id="no-number-where-a-branch-has-no-type",
        ),
        pytest.param(
            {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
            {"n": "2"},
            {"n": 2},
            id="optional-integer",
        ),
        pytest.param(
            {"properties": {"x": {"type": "number"}, "y": {"type": "number"}}},
            {"x": "-2.5", "y": "1e3"},
            {"x": -2.5, "y": 1000.0},
            id="number-from-decimal",
        ),
        pytest.param(
            {"properties": {"xs": {"type": "array", "items": {"properties": {"id": {"type": "integer"}}}}}},
            {"xs": [{"id": "1"}, {"id": "a"}]},
            {"xs": [{"id": 1}, {"id": "a"}]},
            id="nested",
        ),
        pytest.param({"properties": {"x": {}}}, {"x": '{"a": 1}'}, {"x": '{"a": 1}'}, id="untyped-kept"),
        pytest.param(
            {"properties": {"x": {"type": ["object", "string"]}}},
            {"x": '{"a": 1}'},
            {"x": '{"a": 1}'},
            id="type-list-with-string",
        ),
        pytest.param(
            {"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "object"}]}}},
            {"x": '{"a": 1}'},
            {"x": '{"a": 1}'},
            id="anyOf-with-string",
        ),
        pytest.param(
            {"properties": {"x": {"anyOf": [{"enum": ["auto"]}, {"type": "object"}]}}},
            {"x": '{"a": 1}'},
            {"x": '{"a": 1}'},
            id="anyOf-with-string-enum",
        ),
        pytest.param(
            WEATHER,
            {"options": '{"timeout": 2.5}', "tags": '["x"]'},
            {"options": {"timeout": 2.5}, "tags": ["x"]},
            id="weather",
        ),
        pytest.param(
            {"properties": {"f": {"type": "object", "properties": {"range": {"type": "object"}}}}},
            {"f": {"range": '{"lo": 1}', "keep": "[1]"}},
            {"f": {"range": {"lo": 1}, "keep": "[1]"}},
            id="nested-property",
        ),
        pytest.param(
            {"properties": {"f": {"type": "object", "properties": {"range": {"type": "object"}}}}},
            {"f": '{"range": "{\\"lo\\": 1}"}'},
            {"f": {"range": {"lo": 1}}},
            id="string-inside-decoded-string",
        ),
        pytest.param(
            {"properties": {"rows": {"type": "array", "items": {"type": "object"}}}},
            {"rows": ['{"a": 1}', {"a": 2}, "x"]},
            {"rows": [{"a": 1}, {"a": 2}, "x"]},
            id="array-of-objects",
        ),
        pytest.param(
            PEOPLE,
            {"person": '{"name": "Ada", "home": "{\\"street\\": \\"Main\\"}"}'},
            {"person": {"name": "Ada", "home": {"street": "Main"}}},
            id="defs-ref-optional-model",
        ),
        pytest.param(
            PEOPLE,
            {"person": {"name": "Ada", "others": ['{"street": "A"}']}},
            {"person": {"name": "Ada", "others": [{"street": "A"}]}},
            id="array-of-refs",
        ),
        pytest.param(
            PEOPLE,
            {"person": {"name": "Ada", "age": "41"}},
            {"person": {"name": "Ada", "age": 41}},
            id="optional-integer-through-an-optional-model",
        ),
        pytest.param(
            PEOPLE,
            {"scores": '{"a": 1}', "matrix": "[[1, 2], [3]]"},
            {"scores": {"a": 1}, "matrix": [[1, 2], [3]]},
            id="map-and-matrix",
        ),
        pytest.param(PEOPLE, {"matrix": ["[1, 2]", [3]]}, {"matrix": [[1, 2], [3]]}, id="inner-array"),
        pytest.param(
            {"properties": {"m": {"type": "object", "additionalProperties": {"type": "array"}}}},
            {"m": {"k1": "[1]", "k2": "x"}},
            {"m": {"k1": [1], "k2": "x"}},
            id="additionalProperties-map",
        ),
        pytest.param(
            {
                "properties": {
                    "m": {
                        "type": "object",
                        "properties": {"s": {"type": "string"}},
                        "patternProperties": {"^o_": {"type": "object"}},
                        "additionalProperties": {"type": "array"},
                    }
                }
            },
            {"m": {"s": "[1]", "o_x": '{"a": 1}', "z": "[2]", "o_y": "[3]"}},
            {"m": {"s": "[1]", "o_x": {"a": 1}, "z": [2], "o_y": "[3]"}},
            id="patternProperties",
        ),
        pytest.param(
            {"properties": {"m": {"type": "object", "patternProperties": {"(": {"type": "object"}}}}},
            {"m": {"(": '{"a": 1}'}},
            {"m": {"(": '{"a": 1}'}},
            id="invalid-pattern-ignored",
        ),
        pytest.param(
            {
                "properties": {
                    "p": {
                        "type": "array",
                        "prefixItems": [{"type": "string"}, {"type": "object"}],
                        "items": {"type": "array"},
                    }
                }
            },
            {"p": ["[1]", '{"a": 1}', "[2]"]},
            {"p": ["[1]", {"a": 1}, [2]]},
            id="prefixItems",
        ),
        pytest.param(
            DRAFT7,
            {"range": '{"lo": 1}', "pair": ["{}", "{}"]},
            {"range": {"lo": 1}, "pair": ["{}", {}]},
            id="draft7-definitions-tuple-items",
        ),
        pytest.param(
            {
                "properties": {
                    "p": {
                        "type": "array",
                        "items": [{"type": "string"}],
                        "additionalItems": {"type": "object"},
                    }
                }
            },
            {"p": ["{}", "{}"]},
            {"p": ["{}", {}]},
            id="additionalItems",
        ),
        pytest.param(
            TREE,
            {"root": {"name": "a", "children": ['{"name": "b", "children": "[{\\"name\\": \\"c\\"}]"}']}},
            {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}},
            id="recursive-ref",
        ),
        pytest.param(
            {"allOf": [{"$ref": "#/$defs/O"}], "$defs": {"O": {"properties": {"o": {"type": "object"}}}}},
            {"o": "{}"},
            {"o": {}},
            id="allOf-ref",
        ),
        pytest.param(
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "properties": {"x": {"$ref": "#/$defs/a"}},
            },
            {"x": "{}"},
            {"x": "{}"},
            id="ref-cycle",
        ),
        pytest.param(
            {
                "$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "object"}]}},
                "properties": {"x": {"$ref": "#/$defs/n"}},
            },
            {"x": "{}"},
            {"x": {}},
            id="self-referencing-union",
        ),
        pytest.param(
            {"properties": {"x": {"$ref": "#/$defs/missing"}}}, {"x": "{}"}, {"x": "{}"}, id="ref-to-nowhere"
        ),
        pytest.param(
            {"properties": {"x": {"$ref": "https://example.com/s.json"}}},
            {"x": "{}"},
            {"x": "{}"},
            id="remote-ref-not-followed",
        ),
        pytest.param(
            {
                "properties": {"a/b": {"type": "object"}},
                "$defs": {},
                "allOf": [{"$ref": "#/properties/a~1b"}],
            },
            {"a/b": "{}"},
            {"a/b": {}},
            id="escaped-pointer",
        ),
        pytest.param(True, {"x": "{}"}, {"x": "{}"}, id="schema-true"),
        pytest.param(None, {"x": "{}"}, {"x": "{}"}, id="schema-none"),
        pytest.param({"properties": "oops"}, {"x": "{}"}, {"x": "{}"}, id="properties-not-a-mapping"),
        pytest.param({"properties": {"x": 5}}, {"x": "{}"}, {"x": "{}"}, id="property-not-a-schema"),
        pytest.param({"properties": {"x": {"type": 5}}}, {"x": "{}"}, {"x": "{}"}, id="odd-type"),
        pytest.param(
            OPTIONS, {"options": '{"città": "Zürich"}'}, {"options": {"città": "Zürich"}}, id="non-ascii"
        ),
    ],
)
def test_repair(schema: Any, args: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(args)
    repaired = repair_arguments(args, schema)
    assert repaired == expected
    assert repaired is not args
    assert args == before


def test_repair_shares_untouched_containers() -> None:
    args = {"options": '{"a": 1}', "tags": ["x"], "big": {"deep": [1, 2]}}
    repaired = repair_arguments(args, OPTIONS)
    assert repaired["tags"] is args["tags"]
    assert repaired["big"] is args["big"]


def test_repair_survives_very_deep_values() -> None:
    node: dict[str, Any] = {"name": "leaf", "children": '[{"name": "x"}]'}
    for _ in range(500):
        node = {"name": "n", "children": [node]}
    repaired = repair_arguments({"root": node}, TREE)
    depth, cursor = 0, repaired["root"]
    while cursor["name"] == "n":
        cursor, depth = cursor["children"][0], depth + 1
    assert depth == 500
    assert cursor["children"] == '[{"name": "x"}]'  # beyond the depth limit nothing is repaired


@pytest.mark.parametrize("schema", [*REAL_SCHEMAS.values(), OPTIONS], ids=[*REAL_SCHEMAS, "options"])
@given(args=json_objects)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_repair_never_mutates_its_input(schema: dict[str, Any], args: dict[str, Any]) -> None:
    # Put JSON strings where the schemas want containers, so that repairs do happen.
    args = {
        **args,
        "options": json.dumps(args),
        "person": json.dumps({"name": "n", "home": json.dumps(args)}),
    }
    before = copy.deepcopy(args)
    repaired = repair_arguments(args, schema)
    assert args == before
    assert isinstance(repaired, dict)


# --- validate_arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "args", "expected"),
    [
        pytest.param(WEATHER, {"city": "Paris"}, [], id="valid"),
        pytest.param(WEATHER, {}, ["at $.city: 'city' is a required property"], id="required"),
        pytest.param(
            WEATHER,
            {"days": "x", "options": {"timeout": "abc"}},
            [
                "at $.city: 'city' is a required property",
                "at $.days: 'x' is not of type 'integer'",
                "at $.options.timeout: 'abc' is not of type 'number'",
            ],
            id="all-errors-sorted",
        ),
        pytest.param(
            WEATHER,
            {"city": "Paris", "days": 0, "units": "kelvin", "tags": ["a", 1, None], "extra": 1},
            [
                "at $: Additional properties are not allowed ('extra' was unexpected)",
                "at $.days: 0 is less than the minimum of 1",
                "at $.tags[1]: 1 is not of type 'string'",
                "at $.tags[2]: null is not of type 'string'",
                "at $.units: 'kelvin' is not one of ['metric', 'imperial']",
            ],
            id="many-kinds",
        ),
        pytest.param(
            {"properties": {"odd key": {"type": "integer"}, "é": {"type": "integer"}}},
            {"odd key": "1", "é": "2"},
            ["at $[\"odd key\"]: '1' is not of type 'integer'", "at $[\"é\"]: '2' is not of type 'integer'"],
            id="quoted-path",
        ),
        pytest.param(
            PEOPLE,
            {"person": {"name": "Ada", "home": {"zip": 75001}}},
            [
                "at $.person.home.street: 'street' is a required property",
                "at $.person.home.zip: 75001 is not of type 'string'",
            ],
            id="optional-model-reports-the-branch-errors",
        ),
        pytest.param(
            PEOPLE,
            {"person": {"name": "Ada", "age": "41"}},
            ["at $.person.age: '41' is not valid under any of the given schemas"],
            id="scalar-union",
        ),
        pytest.param(
            PEOPLE,
            {"person": {"name": "Ada"}, "scores": {"a": 1, "b": "2"}},
            ["at $.scores.b: '2' is not of type 'integer'"],
            id="additionalProperties-map",
        ),
        pytest.param(
            TREE,
            {"root": {"name": "a", "children": [{"name": "b", "children": [{"children": []}]}]}},
            ["at $.root.children[0].children[0].name: 'name' is a required property"],
            id="recursive-ref",
        ),
        pytest.param(
            DRAFT7,
            {"range": {"lo": "1"}, "pair": [1, {}]},
            ["at $.pair[0]: 1 is not of type 'string'", "at $.range.lo: '1' is not of type 'number'"],
            id="draft7",
        ),
        pytest.param(
            {**DRAFT7, "$schema": "https://json-schema.org/draft-07/schema"},
            {"pair": [1]},
            ["at $.pair[0]: 1 is not of type 'string'"],
            id="draft7-https-uri",
        ),
        pytest.param(
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
            },
            {"n": 0},
            ["at $.n: 0 is less than or equal to the minimum of 0"],
            id="draft4",
        ),
        pytest.param(
            {"properties": {"e": {"type": "string", "format": "email"}}},
            {"e": "nope"},
            [],
            id="formats-not-enforced",
        ),
        pytest.param(False, {}, ["at $: False schema does not allow {}"], id="false-schema"),
        pytest.param(True, {"x": 1}, [], id="true-schema"),
        pytest.param({}, {"x": 1}, [], id="empty-schema"),
    ],
)
def test_validate(schema: Any, args: dict[str, Any], expected: list[str]) -> None:
    assert validate_arguments(args, schema) == expected


UNCHECKABLE = "The peer's schema for this tool could not be checked against these arguments: "
NOT_SENT = ". The call was not sent; this tool cannot be used this way until its peer fixes the schema."
TOO_DEEP = (
    "These arguments could not be checked against the peer's schema for this tool: following them "
    "through the schema nests too deeply (a schema nested a few hundred levels, a $ref that loops, "
    "or arguments nested that deep). The call was not sent; send less deeply nested arguments, or "
    "use another tool."
)


@pytest.mark.parametrize(
    ("schema", "args", "expected"),
    [
        # Invalid schemas are applied as written: what jsonschema can check is checked...
        pytest.param(
            {"properties": {"a": {"type": "string", "required": True}}},
            {"a": 1},
            ["at $.a: 1 is not of type 'string'"],
            id="draft3-required-type-checked",
        ),
        pytest.param(
            {"properties": {"a": {"type": "string", "required": True}}},
            {"a": "x"},
            [],
            id="draft3-required-valid",
        ),
        pytest.param(
            {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            {"a": 1},
            ["at $: {'a': 1} is not of type 'number'"],
            id="draft4-keyword-in-2020",
        ),
        pytest.param({"required": "x"}, {}, ["at $: 'x' is a required property"], id="required-a-string"),
        pytest.param({"properties": {"a": {"pattern": "("}}}, {"a": 1}, [], id="invalid-regex-not-reached"),
        pytest.param(
            {"properties": {"a": {"enum": {1, 2}}}},
            {"a": 3},
            ["at $.a: 3 is not one of {1, 2}"],
            id="enum-a-set",
        ),
        # ... and a check that fails is a refusal, never a pass.
        pytest.param(
            {"type": "any"},
            {"a": 1},
            "'any' is not a JSON Schema type; the schema is not valid JSON Schema: "
            "at #/type: 'any' is not valid under any of the given schemas",
            id="draft3-any",
        ),
        pytest.param(
            {"properties": {"a": {"type": "object", "required": True}}},
            {"a": {}},
            "TypeError: 'bool' object is not iterable; the schema is not valid JSON Schema: "
            "at #/properties/a/required: True is not of type 'array'",
            id="draft3-required-on-an-object",
        ),
        pytest.param(
            {"properties": {"a": {"type": 5}}},
            {"a": 1},
            "TypeError: 'int' object is not iterable; the schema is not valid JSON Schema: "
            "at #/properties/a/type: 5 is not valid under any of the given schemas",
            id="type-not-a-string",
        ),
        pytest.param(
            {"properties": {"a": {"pattern": "("}}},
            {"a": "x"},
            "the pattern '(' is not a regular expression Python can use; "
            "the schema is not valid JSON Schema: at #/properties/a/pattern: '(' is not a 'regex'",
            id="invalid-regex",
        ),
        pytest.param(
            {"$schema": ["not", "a", "uri"], "type": "object", "required": 1},
            {},
            "TypeError: 'int' object is not iterable; the schema is not valid JSON Schema: "
            "at #/$schema: ['not', 'a', 'uri'] is not of type 'string'",
            id="odd-$schema",
        ),
        pytest.param(
            {"properties": 5},
            {"a": 1},
            "AttributeError: 'int' object has no attribute 'items'; the schema is not valid JSON Schema: "
            "at #/properties: 5 is not of type 'object'",
            id="properties-a-number",
        ),
        pytest.param(
            {"properties": {"a": {"$ref": "#/$defs/missing"}}},
            {"a": 1},
            "the $ref '/$defs/missing' does not resolve (only the schema's own parts are followed)",
            id="ref-to-nowhere",
        ),
        pytest.param({"$ref": "#"}, {}, None, id="ref-loop"),
        pytest.param("not a schema", {"a": 1}, "it is a string, not a JSON object", id="string"),
        pytest.param(None, {"a": 1}, "it is null, not a JSON object", id="none"),
        pytest.param([{"type": "object"}], {"a": 1}, "it is an array, not a JSON object", id="list"),
    ],
)
def test_validate_never_passes_what_it_could_not_check(schema: Any, args: Any, expected: Any) -> None:
    validator = ArgumentValidator(schema)
    if isinstance(expected, list):
        assert validator.problem is not None
        assert validator.errors(args) == expected
        assert validate_arguments(args, schema) == expected
        return
    for check in (validator.errors, lambda a: validate_arguments(a, schema)):
        with pytest.raises(ArgumentsError) as caught:
            check(args)
        assert str(caught.value) == (TOO_DEEP if expected is None else UNCHECKABLE + expected + NOT_SENT)
    with pytest.raises(ArgumentsError, match="could not be checked"):
        validator.prepare(json.dumps(args))


def test_a_false_branch_does_not_hide_the_errors_of_the_others() -> None:
    # jsonschema gives a `false` branch's error no schema path; that once made validation pass.
    schema = {"properties": {"a": {"anyOf": [False, {"properties": {"b": {"type": "integer"}}}]}}}
    assert validate_arguments({"a": {"b": "x"}}, schema) == ["at $.a.b: 'x' is not of type 'integer'"]
    assert validate_arguments({"a": 1}, {"properties": {"a": {"anyOf": [False, False]}}}) == [
        "at $.a: 1 is not valid under any of the given schemas"
    ]


def test_validate_never_fetches_remote_refs(monkeypatch: pytest.MonkeyPatch) -> None:
    fetched: list[object] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: fetched.append(a) or None)
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "https://example.com/a.json"}, "b": {"type": "integer"}},
    }
    # What does not need the other document is checked; what does is refused, not waved through.
    assert validate_arguments({"b": "x"}, schema) == ["at $.b: 'x' is not of type 'integer'"]
    with pytest.raises(ArgumentsError) as caught:
        validate_arguments({"a": {"anything": 1}}, schema)
    assert str(caught.value) == (
        UNCHECKABLE + "the $ref 'https://example.com/a.json' does not resolve "
        "(only the schema's own parts are followed)" + NOT_SENT
    )
    with pytest.raises(ArgumentsError, match=r"the \$ref 'other.json' does not resolve"):
        validate_arguments({"a": 1}, {"$id": "https://example.com/t.json", "$ref": "other.json"})
    # The metaschemas ship with jsonschema: a parameter that takes a schema is checked offline.
    takes_a_schema = {"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    assert validate_arguments({"s": {"type": "string"}}, takes_a_schema) == []
    assert validate_arguments({"s": {"type": 5}}, takes_a_schema) == [
        "at $.s.type: 5 is not valid under any of the given schemas"
    ]
    assert fetched == []


def test_validate_keeps_messages_short() -> None:
    errors = validate_arguments({"x": {"k" * 5000: "v" * 5000}}, {"properties": {"x": {"type": "string"}}})
    assert len(errors) == 1
    assert errors[0].startswith("at $.x: {'kkkk")
    assert errors[0].endswith("…")
    assert len(errors[0]) < 230


def test_validate_order_does_not_depend_on_key_order() -> None:
    args = {"days": "x", "options": {"timeout": "abc", "retries": -1}, "tags": [1, 2]}
    reordered = dict(reversed(list(args.items())))
    assert validate_arguments(args, WEATHER) == validate_arguments(reordered, WEATHER)
    assert validate_arguments(args, WEATHER)[0] == "at $.city: 'city' is a required property"


def test_validate_compiles_equal_schemas_once_and_copes_with_unusual_ones() -> None:
    reordered = dict(reversed(list(WEATHER.items())))
    assert validate_arguments({}, reordered) == ["at $.city: 'city' is a required property"]
    assert validate_arguments({}, WEATHER) == ["at $.city: 'city' is a required property"]
    # A set is not JSON: no cache key, compiled directly, and applied as written.
    assert validate_arguments({"a": 3}, {"properties": {"a": {"enum": {1, 2}}}}) == [
        "at $.a: 3 is not one of {1, 2}"
    ]
    assert prepare_arguments('{"a": 2}', {"properties": {"a": {"enum": {1, 2}}}}) == {"a": 2}


# --- prepare_arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}, id="valid"),
        pytest.param({"city": "Paris"}, {"city": "Paris"}, id="mapping"),
        pytest.param(json.dumps(json.dumps({"city": "Köln"})), {"city": "Köln"}, id="double-encoded"),
        pytest.param(
            '{"city": "Paris", "options": "{\\"timeout\\": 5}"}',
            {"city": "Paris", "options": {"timeout": 5}},
            id="repaired",
        ),
    ],
)
def test_prepare_returns_arguments_for_the_peer(raw: Any, expected: dict[str, Any]) -> None:
    assert prepare_arguments(raw, WEATHER) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            '{"days": "x"}',
            "The arguments do not match the tool's schema:\n"
            "- at $.city: 'city' is a required property\n"
            "- at $.days: 'x' is not of type 'integer'\n" + FIX,
            id="listed",
        ),
        pytest.param(
            '{"city": "P", "options": "{\\"timeout\\": \\"abc\\"}"}',
            "The arguments do not match the tool's schema:\n"
            "- at $.options.timeout: 'abc' is not of type 'number'\n" + FIX,
            id="errors-after-repair",
        ),
        pytest.param(
            '{"city": "P", "options": "{\\"timeout\\": "}',
            "The arguments do not match the tool's schema:\n"
            "- at $.options: '{\"timeout\": ' is not of type 'object'\n" + FIX,
            id="unrepairable",
        ),
        pytest.param(
            "",
            "The arguments do not match the tool's schema:\n- at $.city: 'city' is a required property\n"
            + FIX,
            id="empty",
        ),
        pytest.param(
            "[1]",
            f"The arguments must be a JSON object, but an array was received: [1]\n{HINT}",
            id="parse-error",
        ),
    ],
)
def test_prepare_explains_every_problem(raw: str, message: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        prepare_arguments(raw, WEATHER)
    assert str(caught.value) == message


def test_prepare_lists_at_most_twenty_problems() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "array", "items": {"type": "integer"}}}}
    with pytest.raises(ArgumentsError) as caught:
        prepare_arguments(json.dumps({"v": ["x"] * 25}), schema)
    lines = str(caught.value).splitlines()
    assert lines[1] == "- at $.v[0]: 'x' is not of type 'integer'"
    assert lines[-2:] == ["- ... and 5 more", FIX]
    assert len(lines) == 23


def test_prepare_does_not_repair_arguments_that_are_already_valid() -> None:
    # The string is valid under the second branch; repair alone would decode it.
    schema = {"properties": {"p": {"anyOf": [{"type": "object"}, {"maxLength": 100}]}}}
    assert repair_arguments({"p": "{}"}, schema) == {"p": {}}
    assert prepare_arguments('{"p": "{}"}', schema) == {"p": "{}"}


def test_prepare_repairs_under_a_schema_that_is_not_valid_json_schema() -> None:
    schema = {"type": "object", "title": 5, "properties": {"o": {"type": "object"}}}
    assert ArgumentValidator(schema).problem == "at #/title: 5 is not of type 'string'"
    assert prepare_arguments('{"o": "{\\"a\\": 1}", "x": 1}', schema) == {"o": {"a": 1}, "x": 1}


def test_validator_is_reusable() -> None:
    validator = ArgumentValidator(WEATHER)
    assert validator.problem is None
    for _ in range(3):
        assert validator.prepare('{"city": "Paris"}') == {"city": "Paris"}
        assert validator.errors({}) == ["at $.city: 'city' is a required property"]


def _resolve(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def instances(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values valid against the subset of JSON Schema used by the schemas of these tests."""
    if "$ref" in schema:
        return instances(_resolve(root, schema["$ref"]), root, depth + 1)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([instances(branch, root, depth) for branch in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        required = {
            k: instances(v, root, depth + 1) for k, v in properties.items() if k in schema.get("required", [])
        }
        optional = {k: instances(v, root, depth + 1) for k, v in properties.items() if k not in required}
        if depth > 4:  # keep recursive schemas finite
            optional = {k: v for k, v in optional.items() if "$ref" not in json.dumps(properties[k])}
        fixed = st.fixed_dictionaries(required, optional=optional)
        extra = schema.get("additionalProperties", True)
        if isinstance(extra, dict):
            more = st.dictionaries(
                st.text(max_size=6).filter(lambda k: k not in properties),
                instances(extra, root, depth + 1),
                max_size=3,
            )
            return st.tuples(fixed, more).map(lambda t: {**t[1], **t[0]})
        return fixed
    if kind == "array":
        items = schema.get("items", {})
        if isinstance(items, list):
            return st.tuples(*(instances(item, root, depth + 1) for item in items)).map(list)
        if depth > 4:
            return st.just([])
        return st.lists(instances(items, root, depth + 1), max_size=3)
    if kind == "string":
        # JSON-looking strings check that nothing is decoded where a string is wanted.
        return st.text(max_size=12) | json_values.map(json.dumps)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers()
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return json_values


VALIDATORS = {name: ArgumentValidator(schema) for name, schema in REAL_SCHEMAS.items()}


@pytest.mark.parametrize("name", list(REAL_SCHEMAS))
@given(data=st.data())
def test_prepare_returns_valid_arguments_unchanged(name: str, data: st.DataObject) -> None:
    schema, validator = REAL_SCHEMAS[name], VALIDATORS[name]
    args = data.draw(instances(schema, schema))
    assert validator.errors(args) == []  # the generator is right about validity
    assert validator.prepare(json.dumps(args)) == args
    assert validator.prepare(json.dumps(args, ensure_ascii=False)) == args


# --- JSON-string parameter mode ----------------------------------------------------------------


def test_stringify_weather() -> None:
    published, plan = stringify_complex_parameters(WEATHER)
    assert published["properties"]["options"] == {
        "type": "string",
        "description": 'Request options. JSON-encoded object, e.g. {"timeout": 1.5, "retries": 0}',
    }
    assert published["properties"]["tags"] == {
        "type": "string",
        "description": 'JSON-encoded array, e.g. ["text"]',
    }
    for name in ("city", "days", "units"):
        assert published["properties"][name] is WEATHER["properties"][name]
    assert set(plan.parameters) == {"options", "tags"}
    assert published["required"] == ["city"]
    assert WEATHER["properties"]["options"]["type"] == "object"  # the original is untouched


@pytest.mark.parametrize(
    ("prop", "kind", "example"),
    [
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1},
                    "units": {"enum": ["metric", "imperial"]},
                },
                "required": ["units"],
            },
            "object",
            '{"units": "metric", "city": "text", "days": 1}',
            id="required-first",
        ),
        pytest.param(
            {"anyOf": [{"type": "object", "properties": {"a": {"type": "boolean"}}}, {"type": "null"}]},
            "object or null",
            '{"a": true}',
            id="optional-object",
        ),
        pytest.param(
            {"type": ["array", "null"], "items": {"type": "number", "exclusiveMinimum": 0}},
            "array or null",
            "[1]",
            id="type-list",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "integer", "exclusiveMaximum": -3}},
            "array",
            "[-4]",
            id="exclusive-maximum",
        ),
        pytest.param(
            {"anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "string"}}]},
            "object or array",
            "{}",
            id="object-or-array",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "uuid"},
                    "c": {"const": "x"},
                    "e": {"examples": [7]},
                },
            },
            "object",
            '{"when": "2024-01-31T12:00:00Z", "id": "123e4567-e89b-12d3-a456-426614174000", '
            '"c": "x", "e": 7}',
            id="formats-const-examples",
        ),
        pytest.param(
            {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(9)}},
            "object",
            '{"p0": 1, "p1": 1, "p2": 1, "p3": 1}',
            id="at-most-four-properties",
        ),
        pytest.param(
            {"$ref": "#/$defs/Node"},
            "object",
            '{"name": "text", "children": [{"name": "text", "children": []}]}',
            id="recursive-bounded",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "x": {
                        "type": "object",
                        "properties": {
                            "y": {
                                "type": "object",
                                "properties": {"z": {"type": "array", "items": {"type": "object"}}},
                            }
                        },
                    }
                },
            },
            "object",
            '{"x": {"y": {"z": []}}}',
            id="depth-bounded",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "big": {"type": "object", "properties": {f"k{i}": {"enum": ["v" * 40]} for i in range(4)}}
                },
            },
            "object",
            '{"big": {}}',
            id="long-example-shortened",
        ),
    ],
)
def test_stringify_examples(prop: dict[str, Any], kind: str, example: str) -> None:
    schema = {"type": "object", "properties": {"p": prop}, "$defs": TREE["$defs"]}
    published, plan = stringify_complex_parameters(schema)
    assert plan.parameters["p"].kind == kind
    assert plan.parameters["p"].example == example
    assert published["properties"]["p"] == {
        "type": "string",
        "description": f"JSON-encoded {kind}, e.g. {example}",
    }
    json.loads(example)


@pytest.mark.parametrize(
    "prop",
    [
        pytest.param({"type": "string"}, id="string"),
        pytest.param({"type": "integer"}, id="integer"),
        pytest.param({}, id="untyped"),
        pytest.param({"anyOf": [{"type": "string"}, {"type": "object"}]}, id="union-with-string"),
        pytest.param({"type": ["object", "string"]}, id="type-list-with-string"),
        pytest.param({"$ref": "#/$defs/missing"}, id="ref-to-nowhere"),
        pytest.param("oops", id="not-a-schema"),
    ],
)
def test_stringify_leaves_other_parameters(prop: Any) -> None:
    schema = {"type": "object", "properties": {"p": prop}}
    published, plan = stringify_complex_parameters(schema)
    assert published == schema
    assert plan.parameters == {}


@pytest.mark.parametrize("schema", [{"type": "object"}, {"properties": "oops"}, {}], ids=repr)
def test_stringify_without_properties(schema: dict[str, Any]) -> None:
    published, plan = stringify_complex_parameters(schema)
    assert published == schema
    assert plan == StringifyPlan()


def test_stringify_keeps_the_description_and_follows_refs() -> None:
    published, plan = stringify_complex_parameters(PEOPLE)
    assert published["properties"]["person"]["description"] == (
        'Who. JSON-encoded object, e.g. {"name": "text", "age": 1, '
        '"home": {"street": "text", "zip": "text"}, "others": [{"street": "text", "zip": "text"}]}'
    )
    assert plan.parameters["scores"].example == "{}"
    assert plan.parameters["matrix"].example == "[[1.5]]"
    assert published["$defs"] is PEOPLE["$defs"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"options": '{"timeout": 5}', "tags": '["a"]', "city": "[1]"},
            {"options": {"timeout": 5}, "tags": ["a"], "city": "[1]"},
            id="decoded",
        ),
        pytest.param({"options": {"timeout": 5}}, {"options": {"timeout": 5}}, id="value-sent-itself"),
        pytest.param(
            {"options": json.dumps(json.dumps({"a": 1}))}, {"options": {"a": 1}}, id="double-encoded"
        ),
        pytest.param({"city": "x"}, {"city": "x"}, id="absent"),
        pytest.param({"opt": "null", "opt2": None}, {"opt": None, "opt2": None}, id="null-allowed"),
        pytest.param({"num": "[1, 2.0, 3.5]"}, {"num": [1, 2.0, 3.5]}, id="numbers"),
    ],
)
def test_decode_stringified(args: dict[str, Any], expected: dict[str, Any]) -> None:
    schema = {
        **WEATHER,
        "properties": {
            **WEATHER["properties"],
            "opt": {"type": ["object", "null"]},
            "opt2": {"type": ["object", "null"]},
            "num": {"type": "array", "items": {"type": "number"}},
        },
    }
    _, plan = stringify_complex_parameters(schema)
    before = copy.deepcopy(args)
    assert decode_stringified(args, plan) == expected
    assert args == before


def test_decode_stringified_explains_every_problem() -> None:
    _, plan = stringify_complex_parameters(WEATHER)
    with pytest.raises(ArgumentsError) as caught:
        decode_stringified({"options": "{timeout: 5}", "tags": '{"a": 1}'}, plan)
    assert str(caught.value) == (
        "Some arguments must be strings holding JSON:\n"
        '- at $.options: expected a JSON-encoded object, e.g. {"timeout": 1.5, "retries": 0}, '
        "but the string is not valid JSON: "
        "Expecting property name enclosed in double quotes at line 1, column 2: {<HERE>timeout: 5}\n"
        '- at $.tags: expected a JSON-encoded array, e.g. ["text"], but the string holds an object\n' + FIX
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "the string is not valid JSON: Expecting value at line 1, column 1: <HERE>"),
        ("NaN", "the string is not valid JSON: NaN is not a valid JSON value"),
        ('"[1]"', "the string holds an array"),
        (json.dumps(json.dumps(json.dumps([1]))), "the string holds a string"),
        ("1", "the string holds an integer"),
    ],
)
def test_decode_stringified_rejects(value: str, problem: str) -> None:
    _, plan = stringify_complex_parameters(WEATHER)
    with pytest.raises(ArgumentsError) as caught:
        decode_stringified({"options": value}, plan)
    assert str(caught.value).splitlines()[1].endswith(f", but {problem}")


@pytest.mark.parametrize("name", list(REAL_SCHEMAS))
@given(data=st.data())
def test_stringify_then_decode_round_trips(name: str, data: st.DataObject) -> None:
    schema = REAL_SCHEMAS[name]
    published, plan = stringify_complex_parameters(schema)
    assert plan.parameters  # every one of these schemas has a complex parameter
    args = data.draw(instances(schema, schema))
    sent = {k: json.dumps(v) if k in plan.parameters else v for k, v in args.items()}
    assert validate_arguments(sent, published) == []  # what the model sees accepts the strings
    assert decode_stringified(sent, plan) == args
    assert VALIDATORS[name].prepare(decode_stringified(json.loads(json.dumps(sent)), plan)) == args


@pytest.mark.parametrize("name", list(REAL_SCHEMAS))
def test_stringify_examples_are_valid(name: str) -> None:
    schema = REAL_SCHEMAS[name]
    _, plan = stringify_complex_parameters(schema)
    validator = ArgumentValidator(schema)
    for param, stringified in plan.parameters.items():
        example = json.loads(stringified.example)
        required = (
            {"city": "x"} if name == "weather" else {"person": {"name": "x"}} if name == "people" else {}
        )
        assert validator.errors({**required, param: example}) == [], param


# --- the quick check never accepts what full validation rejects ---------------------------------

_SCALAR_TYPES = ["string", "integer", "number", "boolean", "null"]
_quick_property = st.fixed_dictionaries(
    {
        "type": st.one_of(
            st.sampled_from(_SCALAR_TYPES), st.lists(st.sampled_from(_SCALAR_TYPES), min_size=1, unique=True)
        )
    },
    optional={"enum": st.lists(st.text(max_size=3), min_size=1, max_size=3), "default": st.integers()},
)
_quick_schema = st.builds(
    lambda props, required, extra: {
        "type": "object",
        "properties": props,
        "required": [name for name in required if name in props],
        "additionalProperties": extra,
    },
    st.dictionaries(st.sampled_from("abcd"), _quick_property, max_size=4),
    st.lists(st.sampled_from("abcd"), max_size=4, unique=True),
    st.booleans(),
)
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)
)


@given(_quick_schema, st.dictionaries(st.sampled_from("abcde"), _json_scalars, max_size=5))
def test_quick_check_agrees_with_full_validation(schema: dict[str, Any], args: dict[str, Any]) -> None:
    from mcpx_router.model.arguments._validation import quick_check

    quick = quick_check(schema)
    assert quick is not None
    full = jsonschema.Draft202012Validator(schema)
    valid = list(full.iter_errors(args)) == []
    if quick(args):
        assert valid
    assert (ArgumentValidator(schema).errors(args) == []) == valid


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"city": "Oslo", "days": None}, {"city": "Oslo"}),  # optional, not nullable: dropped
        ({"city": None}, {"city": None}),  # required: the validator must say so
        ({"city": "Oslo", "note": None}, {"city": "Oslo", "note": None}),  # nullable: kept
        ({"city": "Oslo", "tag": None}, {"city": "Oslo", "tag": None}),  # anyOf with null: kept
        ({"city": "Oslo", "free": None}, {"city": "Oslo", "free": None}),  # untyped: kept
        ({"city": "Oslo", "extra": None}, {"city": "Oslo", "extra": None}),  # unknown: kept
    ],
)
def test_drop_optional_nulls(args: dict[str, Any], expected: dict[str, Any]) -> None:

    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "note": {"type": ["string", "null"]},
            "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "free": {"description": "anything"},
        },
        "required": ["city"],
    }
    before = copy.deepcopy(args)
    assert drop_optional_nulls(args, schema) == expected
    assert args == before


def test_a_parse_message_that_ends_in_at_is_not_doubled() -> None:
    with pytest.raises(ArgumentsError) as info:
        parse_arguments('{"query": "install')
    assert "Unterminated string starting at line 1, column 11" in str(info.value)
    assert "at at" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "at $.n: null is not of type 'integer'"),
        (True, "at $.n: true is not of type 'integer'"),
        (False, "at $.n: false is not of type 'integer'"),
        ("3", "at $.n: '3' is not of type 'integer'"),
    ],
)
def test_error_lines_write_json_literals_as_the_model_wrote_them(value: Any, expected: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert validate_arguments({"n": value}, schema) == [expected]
