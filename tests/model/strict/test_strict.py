"""Strict-mode conversion: real servers' schemas, one table per rule, and properties over random schemas."""

from __future__ import annotations

import copy
import doctest
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpx_router.model.strict._strict as strict_module
from mcpx_router.model._outbound_rules import check_parameters
from mcpx_router.model.strict._strict import StrictOutcome, check_strict, make_strict, strip_added_nulls
from mcpx_router.model.strict._strict_limits import resolve_local_ref

FIXTURES = Path(__file__).parents[2] / "support" / "fixtures" / "tool_schemas"


def _real_schemas() -> list[Any]:
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        listing = json.loads(path.read_text())
        for tool in listing["tools"]:
            for key in ("inputSchema", "outputSchema"):
                if key in tool:
                    cases.append(pytest.param(tool[key], id=f"{path.stem}:{tool['name']}:{key}"))
    return cases


def _tool(server: str, name: str, key: str = "inputSchema") -> dict[str, Any]:
    listing = json.loads((FIXTURES / f"{server}.json").read_text())
    return next(t[key] for t in listing["tools"] if t["name"] == name)


def _convert(schema: dict[str, Any]) -> StrictOutcome:
    """make_strict, with the invariants every call must keep checked on the spot."""
    before = copy.deepcopy(schema)
    outcome = make_strict(schema)
    assert schema == before, "make_strict changed its input"
    if outcome.schema is not None:
        assert check_strict(outcome.schema) == [], outcome.schema
        assert check_parameters(outcome.schema) == (), outcome.schema
        jsonschema.Draft202012Validator.check_schema(outcome.schema)
        json.dumps(outcome.schema)
        assert outcome.reasons == ()
    else:
        assert outcome.reasons and all(r.startswith("#") for r in outcome.reasons)
    return outcome


def _sample(node: Any, root: dict[str, Any], nullable: frozenset[str], at: str = "") -> Any:
    """A value the strict schema accepts, with null wherever a widened property may be left out."""
    if "$ref" in node:
        parts, target = resolve_local_ref(root, node["$ref"])  # type: ignore[misc]
        return _sample(target, root, nullable, "/" + "/".join(parts) if parts else "")
    if "anyOf" in node:
        return _sample(node["anyOf"][0], root, nullable, f"{at}/anyOf/0")
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kind = node["type"] if isinstance(node["type"], str) else node["type"][0]
    if kind == "object":
        return {
            name: None
            if f"{at}/properties/{name}" in nullable
            else _sample(sub, root, nullable, f"{at}/properties/{name}")
            for name, sub in node["properties"].items()
        }
    if kind == "array":
        return [_sample(node["items"], root, nullable, f"{at}/items")] * node.get("minItems", 1)
    return {"string": "x", "boolean": True, "null": None}.get(kind, node.get("minimum", 1))


# --- Real servers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", _real_schemas())
def test_real_tool_schemas_become_strict_and_calls_round_trip(schema: dict[str, Any]) -> None:
    outcome = _convert(schema)
    assert outcome.schema is not None, outcome.reasons
    # The model's side: every property present, null for those it leaves out...
    call = _sample(outcome.schema, outcome.schema, outcome.nullable_paths)
    jsonschema.validate(call, outcome.schema)
    # ...and the peer's side: those nulls gone again, which the peer's own schema accepts.
    jsonschema.validate(strip_added_nulls(call, outcome), schema)


def test_fetch_tool_in_full() -> None:
    outcome = _convert(_tool("mcp-server-fetch", "fetch"))
    optional = "Optional: null means not given."
    assert outcome.schema == {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "URL to fetch. Format: uri. Minimum length: 1."},
            "max_length": {
                "type": ["integer", "null"],
                "maximum": 999999,
                "minimum": 1,
                "description": f"Maximum number of characters to return. Default: 5000. {optional}",
            },
            "start_index": {
                "type": ["integer", "null"],
                "minimum": 0,
                "description": "On return output starting at this character index, useful if a previous "
                f"fetch was truncated and more context is required. Default: 0. {optional}",
            },
            "raw": {
                "type": ["boolean", "null"],
                "description": "Get the actual HTML content of the requested page, without simplification."
                f" Default: false. {optional}",
            },
        },
        "required": ["url", "max_length", "start_index", "raw"],
        "additionalProperties": False,
    }
    assert outcome.nullable_paths == {"/properties/max_length", "/properties/start_index", "/properties/raw"}
    call = {"url": "https://example.com", "max_length": None, "start_index": 10, "raw": None}
    assert strip_added_nulls(call, outcome) == {"url": "https://example.com", "start_index": 10}


def test_git_log_keeps_the_null_its_author_allowed() -> None:
    outcome = _convert(_tool("mcp-server-git", "git_log"))
    assert outcome.schema is not None
    assert outcome.nullable_paths == {"/properties/max_count"}
    start = outcome.schema["properties"]["start_timestamp"]
    assert start["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert start["description"].endswith("Default: null.")
    call = {"repo_path": "/r", "max_count": None, "start_timestamp": None, "end_timestamp": "yesterday"}
    assert strip_added_nulls(call, outcome) == {
        "repo_path": "/r",
        "start_timestamp": None,
        "end_timestamp": "yesterday",
    }


def test_pydantic_titles_that_repeat_the_name_are_dropped() -> None:
    outcome = _convert(_tool("mcp-server-git", "git_diff"))
    assert outcome.schema is not None
    assert outcome.schema["properties"]["repo_path"] == {"type": "string"}
    assert "title" not in json.dumps(outcome.schema)


def test_time_output_schema_keeps_its_definition_as_a_ref() -> None:
    outcome = _convert(_tool("mcp-server-time", "convert_time", "outputSchema"))
    assert outcome.schema is not None
    assert outcome.schema["properties"]["source"] == {"$ref": "#/$defs/TimeResult"}
    assert outcome.schema["$defs"]["TimeResult"]["required"] == [
        "timezone",
        "datetime",
        "day_of_week",
        "is_dst",
    ]


def test_filesystem_union_inside_array_strips_the_right_member() -> None:
    outcome = _convert(_tool("server-filesystem", "read_media_file", "outputSchema"))
    assert outcome.nullable_paths == {
        "/properties/content/items/anyOf/1/properties/resource/properties/mimeType"
    }
    content = [
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a", "mimeType": None, "blob": "AA=="}},
    ]
    assert strip_added_nulls({"content": content}, outcome) == {
        "content": [content[0], {"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}}]
    }


def test_tools_without_arguments_become_an_empty_closed_object() -> None:
    outcome = _convert(_tool("server-everything", "get-tiny-image"))
    assert outcome.schema == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_memory_arrays_of_objects_are_closed_all_the_way_down() -> None:
    outcome = _convert(_tool("server-memory", "create_entities"))
    assert outcome.schema is not None
    item = outcome.schema["properties"]["entities"]["items"]
    assert item["additionalProperties"] is False
    assert item["required"] == ["name", "entityType", "observations"]


# --- One table per rule ---------------------------------------------------------------------------


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required is not None:
        out["required"] = required
    return out


OPT = "Optional: null means not given."

# (input property schema, optional?, expected output property schema)
PROPERTY_CASES = [
    pytest.param({"type": "string"}, False, {"type": "string"}, id="required-untouched"),
    pytest.param(
        {"type": "string"}, True, {"type": ["string", "null"], "description": OPT}, id="optional-scalar"
    ),
    pytest.param(
        {"type": "string", "enum": ["a", "b"], "description": "Pick"},
        True,
        {"type": ["string", "null"], "enum": ["a", "b", None], "description": f"Pick. {OPT}"},
        id="optional-enum-gets-null-value",
    ),
    pytest.param(
        {"type": ["string", "integer"]},
        True,
        {"type": ["string", "integer", "null"], "description": OPT},
        id="optional-type-list",
    ),
    pytest.param(
        {"const": "v"},
        True,
        {"anyOf": [{"type": "string", "const": "v"}, {"type": "null"}], "description": OPT},
        id="optional-const-uses-anyOf",
    ),
    pytest.param(
        {"type": "array", "items": {"type": "integer"}},
        True,
        {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}], "description": OPT},
        id="optional-array-uses-anyOf",
    ),
    pytest.param(
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        True,
        {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}], "description": OPT},
        id="optional-union-gains-null-member",
    ),
    pytest.param(
        {"type": ["string", "null"]}, True, {"type": ["string", "null"]}, id="optional-already-nullable-list"
    ),
    pytest.param(
        {"type": "string", "nullable": True}, True, {"type": ["string", "null"]}, id="openapi-nullable-flag"
    ),
    pytest.param(
        {"enum": ["a", None]}, True, {"type": ["string", "null"], "enum": ["a", None]}, id="enum-with-null"
    ),
    pytest.param(
        {"type": "integer", "default": 30, "description": "Timeout"},
        True,
        {"type": ["integer", "null"], "description": f"Timeout. Default: 30. {OPT}"},
        id="default-moved",
    ),
    pytest.param(
        {"type": "string", "minLength": 1, "maxLength": 9},
        False,
        {"type": "string", "description": "Minimum length: 1. Maximum length: 9."},
        id="length-bounds-moved",
    ),
    pytest.param(
        {"type": "string", "format": "uri", "pattern": "^h"},
        False,
        {"type": "string", "pattern": "^h", "description": "Format: uri."},
        id="unsupported-format-moved-pattern-kept",
    ),
    pytest.param(
        {"type": "string", "format": "email"},
        False,
        {"type": "string", "format": "email"},
        id="supported-format",
    ),
    pytest.param(
        {"type": "number", "minimum": 0, "exclusiveMaximum": 5, "multipleOf": 0.5},
        False,
        {"type": "number", "minimum": 0, "exclusiveMaximum": 5, "multipleOf": 0.5},
        id="number-bounds-kept",
    ),
    pytest.param(
        {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        False,
        {"type": "number", "exclusiveMinimum": 0},
        id="draft4-exclusive-flag",
    ),
    pytest.param(
        {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3, "uniqueItems": True},
        False,
        {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 3,
            "description": "Items must be unique.",
        },
        id="array-bounds-kept-unique-moved",
    ),
    pytest.param(
        {"type": "string", "title": "Zone name", "examples": ["UTC"], "$comment": "c", "x-ui": 1},
        False,
        {"type": "string", "description": 'Zone name. Examples: "UTC".'},
        id="annotations",
    ),
    pytest.param(
        {"type": "string", "title": "Prop"}, False, {"type": "string"}, id="title-repeating-the-name-dropped"
    ),
    pytest.param(
        {"type": "string", "minimum": 3}, False, {"type": "string"}, id="keyword-of-another-type-dropped"
    ),
    pytest.param(
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        False,
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        id="oneOf-becomes-anyOf",
    ),
    pytest.param({"enum": [1, 2]}, False, {"type": "integer", "enum": [1, 2]}, id="untyped-enum"),
    pytest.param(
        {"type": ["object", "null"], "properties": {"a": {"type": "string"}}, "required": ["a"]},
        False,
        {"anyOf": [_obj({"a": {"type": "string"}}, ["a"], additionalProperties=False), {"type": "null"}]},
        id="object-in-type-list-split",
    ),
    pytest.param(
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        False,
        _obj({"a": {"type": "string"}}, ["a"], additionalProperties=False),
        id="untyped-object",
    ),
    pytest.param(
        _obj({"a": {"type": "string"}}, ["a"], additionalProperties=True),
        False,
        _obj({"a": {"type": "string"}}, ["a"], additionalProperties=False),
        id="open-object-closed",
    ),
    pytest.param(
        {"allOf": [_obj({"a": {"type": "string"}}, ["a"]), _obj({"b": {"type": "integer"}})]},
        False,
        _obj(
            {"a": {"type": "string"}, "b": {"type": ["integer", "null"], "description": OPT}},
            ["a", "b"],
            additionalProperties=False,
        ),
        id="allOf-merged",
    ),
    pytest.param(
        {"allOf": [{"type": "number", "minimum": 1}, {"type": "integer", "minimum": 3, "maximum": 9}]},
        False,
        {"type": "integer", "minimum": 3, "maximum": 9},
        id="allOf-bounds-tightened",
    ),
    pytest.param(
        {"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["d", "c", "b"]}]},
        False,
        {"type": "string", "enum": ["b", "c"]},
        id="allOf-enums-intersected",
    ),
    pytest.param(
        {
            "type": "object",
            "anyOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["b"]}],
            "properties": {"b": {"type": "integer"}},
        },
        False,
        {
            "anyOf": [
                _obj(
                    {
                        "a": {"type": ["string", "null"], "description": OPT},
                        "b": {"type": ["integer", "null"], "description": OPT},
                    },
                    ["b", "a"],
                    additionalProperties=False,
                ),
                _obj({"b": {"type": "integer"}}, ["b"], additionalProperties=False),
            ]
        },
        id="keywords-beside-anyOf-folded-in",
    ),
    pytest.param(
        {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
        True,
        {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        id="nullable-union-not-widened-twice",
    ),
    pytest.param(
        {"type": "integer", "minimum": 1, "exclusiveMinimum": False},
        False,
        {"type": "integer", "minimum": 1},
        id="draft4-exclusive-false",
    ),
    pytest.param(
        {"type": ["string", "array"], "items": {"type": "string"}, "description": "One or many"},
        False,
        {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            "description": "One or many",
        },
        id="array-in-type-list-split",
    ),
    pytest.param(
        _obj({"a": {"type": "string"}, "b": {"type": "string"}}, dependentRequired={"a": ["b"]}),
        False,
        _obj(
            {
                "a": {"type": ["string", "null"], "description": OPT},
                "b": {"type": ["string", "null"], "description": OPT},
            },
            ["a", "b"],
            additionalProperties=False,
            description='If "a" is given, also give "b".',
        ),
        id="dependentRequired-described",
    ),
    pytest.param(
        {
            "allOf": [
                {
                    "type": "object",
                    "description": "Left.",
                    "title": "L",
                    "properties": {"x": {"type": "integer", "minimum": 0}},
                    "required": ["x"],
                    "additionalProperties": False,
                },
                {
                    "description": "Right.",
                    "title": "R",
                    "properties": {
                        "x": {"type": "number", "maximum": 5},
                        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    },
                    "required": ["tags"],
                },
                {"properties": {"tags": {"type": "array", "items": {"maxLength": 3}}}},
            ]
        },
        False,
        _obj(
            {
                "x": {"type": "integer", "minimum": 0, "maximum": 5},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "description": "Minimum length: 1. Maximum length: 3."},
                },
            },
            ["x", "tags"],
            additionalProperties=False,
            description="Left. Right.",
        ),
        id="allOf-merged-deeply",
    ),
]


@pytest.mark.parametrize(("prop", "optional", "expected"), PROPERTY_CASES)
def test_property_rules(prop: dict[str, Any], optional: bool, expected: dict[str, Any]) -> None:
    outcome = _convert(_obj({"prop": prop}, [] if optional else ["prop"]))
    assert outcome.schema is not None, outcome.reasons
    assert outcome.schema["properties"]["prop"] == expected
    assert outcome.schema["required"] == ["prop"]
    assert outcome.schema["additionalProperties"] is False
    widened = "/properties/prop" in outcome.nullable_paths
    assert widened == (expected.get("description", "").endswith(OPT))


# (input schema, text expected in one of the reasons)
FALLBACK_CASES = [
    pytest.param(
        _obj({"env": {"type": "object", "additionalProperties": {"type": "string"}}}), "is a map", id="map"
    ),
    pytest.param(_obj({"meta": {"type": "object"}}), "free-form object", id="nested-free-form"),
    pytest.param(
        _obj({"meta": {"type": "object", "properties": {}, "additionalProperties": True}}),
        "free-form object",
        id="nested-empty-open",
    ),
    pytest.param({"type": "object", "additionalProperties": True}, "free-form object", id="root-free-form"),
    pytest.param(_obj({"v": {}}), "accepts any value", id="empty-schema"),
    pytest.param(_obj({"v": True}), "accepts any value", id="true-schema"),
    pytest.param(_obj({"v": False}), "accepts no value", id="false-schema"),
    pytest.param(_obj({"v": {"description": "anything"}}), "accepts any value", id="untyped-annotated"),
    pytest.param(_obj({"v": {"type": "array"}}), "items are not described", id="array-without-items"),
    pytest.param(
        _obj({"v": {"type": "array", "items": [{"type": "string"}]}}), "tuple-style", id="tuple-items"
    ),
    pytest.param(
        _obj({"v": {"type": "array", "prefixItems": [{"type": "string"}]}}), "prefixItems", id="prefixItems"
    ),
    pytest.param(
        _obj({"v": {"type": "array", "items": {"type": "string"}, "contains": {}}}), "contains", id="contains"
    ),
    pytest.param(
        _obj({"v": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}),
        "patternProperties",
        id="patternProperties",
    ),
    pytest.param(_obj({"v": {"type": "string", "not": {"const": "x"}}}), "'not'", id="not"),
    pytest.param(
        _obj({"v": {"type": "string", "if": {"const": "a"}, "then": {"minLength": 2}}}),
        "conditional",
        id="if-then",
    ),
    pytest.param(
        _obj({"a": {"type": "string"}}, dependentSchemas={"a": {"required": ["b"]}}),
        "dependentSchemas",
        id="depsch",
    ),
    pytest.param(
        _obj({"a": {"type": "string"}}, dependencies={"a": {"required": ["a"]}}), "schema dep", id="deps"
    ),
    pytest.param(_obj({"v": {"$ref": "#/$defs/missing"}}), "does not resolve", id="dangling-ref"),
    pytest.param(_obj({"v": {"$ref": "https://example.com/s.json"}}), "does not resolve", id="remote-ref"),
    pytest.param(
        {"anyOf": [_obj({"a": {"type": "string"}}), _obj({"b": {"type": "string"}})]},
        "root is a union",
        id="root-anyOf",
    ),
    pytest.param({"oneOf": [_obj({}), _obj({})]}, "root is a union", id="root-oneOf"),
    pytest.param({"type": "string"}, "needs an object", id="root-string"),
    pytest.param(_obj({"a": {"type": "string"}}, ["a", "b"]), 'requires ["b"]', id="required-undeclared"),
    pytest.param(_obj({"v": {"type": "text"}}), "not a JSON type", id="bad-type-name"),
    pytest.param(_obj({"v": {"type": "string", "enum": []}}), "non-empty", id="empty-enum"),
    pytest.param(
        _obj({"v": {"allOf": [{"type": "string"}, {"type": "integer"}]}}),
        "disagree on 'type'",
        id="allOf-conflict",
    ),
    pytest.param(
        _obj({"v": {"allOf": [{"const": 1}, {"const": 2}]}}), "disagree on 'const'", id="allOf-const-conflict"
    ),
    pytest.param(
        {
            **_obj({"v": {"$ref": "#/$defs/loop"}}),
            "$defs": {"loop": {"allOf": [{"$ref": "#/$defs/loop"}, {}]}},
        },
        "refers to itself",
        id="allOf-self-inline",
    ),
    pytest.param(
        {**_obj({"v": {"$ref": "#/$defs/loop"}}), "$defs": {"loop": {"allOf": [{"$ref": "#/$defs/loop"}]}}},
        "reaches itself",
        id="allOf-self-loop",
    ),
    pytest.param(
        {
            **_obj({"n": {"$ref": "#/$defs/n"}}),
            "$defs": {"n": _obj({"k": {"allOf": [{"$ref": "#/$defs/n"}, {}]}})},
        },
        "recursive $ref inside allOf",
        id="allOf-recursive-inline",
    ),
    pytest.param(
        _obj({"v": {"allOf": [{"minimum": i} for i in range(65)]}}), "more than 64 parts", id="allOf-huge"
    ),
    pytest.param(_obj({"v": {"allOf": {"type": "string"}}}), "allOf must be a list", id="allOf-not-list"),
    pytest.param(
        {"type": "object", "properties": ["a"]}, "properties must be an object", id="properties-list"
    ),
    pytest.param(
        _obj({"v": {"type": "string", "enum": list(range(100_001))}}), "100000 parts", id="huge-input"
    ),
    pytest.param(_obj({"v": 5}), "is not a schema", id="number-as-schema"),
    pytest.param(
        _obj({"v": {"oneOf": [{"type": "string"}], "anyOf": [{"type": "string"}]}}), "combines", id="1+any"
    ),
    pytest.param("not a schema", "not a JSON object", id="not-a-mapping"),
]


@pytest.mark.parametrize(("schema", "reason"), FALLBACK_CASES)
def test_fallbacks_say_why(schema: Any, reason: str) -> None:
    outcome = _convert(schema) if isinstance(schema, dict) else make_strict(schema)
    assert outcome.schema is None
    assert any(reason in r for r in outcome.reasons), outcome.reasons


def _nested_objects(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = _obj({"x": node}, ["x"])
    return node


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        pytest.param(_nested_objects(11), "nest 11 levels", id="object-depth"),
        pytest.param(
            _obj({f"p{i}": {"type": "string"} for i in range(5001)}), "5001 object properties", id="props"
        ),
        pytest.param(
            _obj({f"p{i}": {"enum": list(range(11))} for i in range(91)}, [f"p{i}" for i in range(91)]),
            "1001 enum values",
            id="enum-values",
        ),
        pytest.param(
            _obj({"e": {"enum": [f"{i:03}" + "x" * 57 for i in range(251)]}}), "15000", id="large-enum"
        ),
        pytest.param(
            _obj({"c": {"anyOf": [{"const": "y" * 60_000}, {"const": "z" * 60_001}]}}),
            "120000",
            id="total-string",
        ),
        pytest.param(_nested_objects(40), "nests more than 64 levels", id="absurd-input-depth"),
    ],
)
def test_documented_limits(schema: dict[str, Any], reason: str) -> None:
    outcome = _convert(schema)
    assert outcome.schema is None
    assert any(reason in r for r in outcome.reasons), outcome.reasons


def test_limits_are_reached_not_undershot() -> None:
    # Exactly at each limit is still fine.
    assert _convert(_nested_objects(10)).schema is not None
    assert _convert(_obj({f"p{i}": {"type": "string"} for i in range(5000)})).schema is not None
    enums = _obj({f"p{i}": {"enum": list(range(10))} for i in range(100)}, [f"p{i}" for i in range(100)])
    assert _convert(enums).schema is not None
    # Widening adds null to an optional enum, and that value counts too.
    assert "1100 enum values" in _convert({**enums, "required": []}).reasons[0]


def test_a_schema_that_contains_itself_in_memory_is_refused_not_followed() -> None:
    schema: dict[str, Any] = _obj({})
    schema["properties"]["self"] = schema
    outcome = make_strict(schema)
    assert outcome.schema is None
    assert "nests more than" in outcome.reasons[0]


# --- $ref and $defs -------------------------------------------------------------------------------


def test_defs_are_converted_once_and_kept_as_refs() -> None:
    step = _obj({"explanation": {"type": "string"}, "output": {"type": "string"}}, ["explanation"])
    schema = {
        **_obj(
            {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}}, "last": {"$ref": "#/$defs/step"}}
        ),
        "$defs": {"step": step, "unused": {"type": "object"}},
    }
    outcome = _convert(schema)
    assert outcome.schema is not None
    assert outcome.schema["properties"]["steps"]["anyOf"][0]["items"] == {"$ref": "#/$defs/step"}
    assert outcome.schema["properties"]["last"]["anyOf"][0] == {"$ref": "#/$defs/step"}
    assert list(outcome.schema["$defs"]) == ["step"]
    assert outcome.schema["$defs"]["step"]["properties"]["output"]["type"] == ["string", "null"]
    assert "/$defs/step/properties/output" in outcome.nullable_paths


def test_recursive_definition_terminates_and_strips_at_every_level() -> None:
    node = _obj(
        {"value": {"type": "number"}, "next": {"$ref": "#/definitions/node"}, "tag": {"type": "string"}}
    )
    node["required"] = ["value"]
    outcome = _convert(
        {**_obj({"head": {"$ref": "#/definitions/node"}}, ["head"]), "definitions": {"node": node}}
    )
    assert outcome.schema is not None
    assert outcome.schema["properties"]["head"] == {"$ref": "#/$defs/node"}
    assert outcome.schema["$defs"]["node"]["properties"]["next"]["anyOf"] == [
        {"$ref": "#/$defs/node"},
        {"type": "null"},
    ]
    call = {"head": {"value": 1, "tag": None, "next": {"value": 2, "tag": "t", "next": None}}}
    jsonschema.validate(call, outcome.schema)
    assert strip_added_nulls(call, outcome) == {"head": {"value": 1, "next": {"value": 2, "tag": "t"}}}


def test_root_recursion_keeps_hash_ref() -> None:
    ui = _obj(
        {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}, ["children"]
    )
    outcome = _convert(ui)
    assert outcome.schema is not None
    assert outcome.schema["properties"]["children"]["items"] == {"$ref": "#"}
    call = {"label": None, "children": [{"label": "a", "children": [{"label": None, "children": []}]}]}
    assert strip_added_nulls(call, outcome) == {"children": [{"label": "a", "children": [{"children": []}]}]}


def test_refs_into_properties_become_definitions() -> None:
    # zod-to-json-schema writes a repeated subschema as a $ref to its first place
    addr = _obj({"city": {"type": "string"}}, ["city"])
    schema = _obj({"home": addr, "work": {"$ref": "#/properties/home"}}, ["home", "work"])
    outcome = _convert(schema)
    assert outcome.schema is not None
    assert outcome.schema["properties"]["work"] == {"$ref": "#/$defs/properties_home"}
    assert outcome.schema["$defs"]["properties_home"] == outcome.schema["properties"]["home"]
    assert any("became the definition 'properties_home'" in n for n in outcome.notes)


def test_root_ref_and_clashing_definition_names() -> None:
    schema = {
        "$ref": "#/$defs/Args",
        "$defs": {
            "Args": _obj({"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/definitions/A"}}, ["a", "b"]),
            "A": {"type": "string"},
        },
        "definitions": {"A": {"type": "integer"}},
    }
    outcome = _convert(schema)
    assert outcome.schema is not None
    assert outcome.schema["properties"] == {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/A_2"}}
    assert outcome.schema["$defs"] == {"A": {"type": "string"}, "A_2": {"type": "integer"}}


def test_pydantic_v1_described_ref_stays_a_ref_so_recursion_works() -> None:
    node = _obj(
        {
            "name": {"type": "string"},
            "child": {"allOf": [{"$ref": "#/definitions/Node"}], "description": "Kid"},
        }
    )
    outcome = _convert(
        {**_obj({"root": {"$ref": "#/definitions/Node"}}, ["root"]), "definitions": {"Node": node}}
    )
    assert outcome.schema is not None, outcome.reasons
    assert outcome.schema["$defs"]["Node"]["properties"]["child"] == {
        "description": f"Kid. {OPT}",
        "anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}],
    }
    call = {"root": {"name": None, "child": {"name": "b", "child": None}}}
    assert strip_added_nulls(call, outcome) == {"root": {"child": {"name": "b"}}}


def test_optional_ref_to_a_nullable_definition_is_not_widened() -> None:
    schema = {**_obj({"when": {"$ref": "#/$defs/maybe"}}), "$defs": {"maybe": {"type": ["string", "null"]}}}
    outcome = _convert(schema)
    assert outcome.schema is not None
    assert outcome.schema["properties"]["when"] == {"$ref": "#/$defs/maybe"}
    assert outcome.nullable_paths == frozenset()


def test_output_shares_nothing_with_the_input() -> None:
    def fresh() -> dict[str, Any]:
        inner = _obj({"e": {"enum": ["a", "b"]}}, ["e"])
        return {**_obj({"e": {"enum": ["a"]}, "d": {"$ref": "#/$defs/d"}}, ["e", "d"]), "$defs": {"d": inner}}

    schema = fresh()
    outcome = _convert(schema)
    assert outcome.schema is not None
    outcome.schema["properties"]["e"]["enum"].append("x")
    outcome.schema["$defs"]["d"]["properties"]["e"]["enum"].append("x")
    outcome.schema["$defs"]["d"]["required"].append("x")
    assert schema == fresh()


def test_ref_with_description_is_wrapped_because_a_ref_must_stand_alone() -> None:
    schema = {
        **_obj({"a": {"$ref": "#/$defs/s", "description": "The s"}}, ["a"]),
        "$defs": {"s": {"type": "string"}},
    }
    outcome = _convert(schema)
    assert outcome.schema is not None
    assert outcome.schema["properties"]["a"] == {"description": "The s", "anyOf": [{"$ref": "#/$defs/s"}]}


def test_pointer_escapes_in_names() -> None:
    outcome = _convert(_obj({"a/b": {"type": "string"}, "t~": {"type": "string"}}))
    assert outcome.nullable_paths == {"/properties/a~1b", "/properties/t~0"}
    assert strip_added_nulls({"a/b": None, "t~": None}, outcome) == {}


# --- strip_added_nulls ----------------------------------------------------------------------------


def test_strip_keeps_nulls_it_did_not_add_and_does_not_mutate() -> None:
    schema = _obj(
        {
            "req": {"type": ["string", "null"]},
            "opt": {"type": "string"},
            "rows": {
                "type": "array",
                "items": _obj({"k": {"type": "string"}, "v": {"type": "integer"}}, ["k"]),
            },
        },
        ["req", "rows"],
    )
    outcome = _convert(schema)
    call = {"req": None, "opt": None, "rows": [{"k": "a", "v": None}, {"k": "b", "v": 2}]}
    before = copy.deepcopy(call)
    assert strip_added_nulls(call, outcome) == {"req": None, "rows": [{"k": "a"}, {"k": "b", "v": 2}]}
    assert call == before


def test_strip_with_nothing_widened_or_no_schema_returns_a_copy() -> None:
    call = {"a": None}
    for outcome in (StrictOutcome(None, ("#: no",)), _convert(_obj({"a": {"type": "string"}}, ["a"]))):
        result = strip_added_nulls(call, outcome)
        assert result == call and result is not call


# --- check_strict on its own, from the documented examples ----------------------------------------

WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "The location"},
        "unit": {"type": ["string", "null"], "enum": ["F", "C", None]},
    },
    "additionalProperties": False,
    "required": ["location", "unit"],
}
LINKED_LIST = {
    "type": "object",
    "properties": {"linked_list": {"$ref": "#/$defs/node"}},
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
            },
            "additionalProperties": False,
            "required": ["next", "value"],
        }
    },
    "additionalProperties": False,
    "required": ["linked_list"],
}


@pytest.mark.parametrize("schema", [WEATHER, LINKED_LIST], ids=["weather", "linked-list"])
def test_documented_examples_pass_the_checker(schema: dict[str, Any]) -> None:
    assert check_strict(schema) == []


def _weather(**changes: Any) -> dict[str, Any]:
    schema = copy.deepcopy(WEATHER)
    for key, value in changes.items():
        if value is None:
            schema.pop(key)
        else:
            schema[key] = value
    return schema


@pytest.mark.parametrize(
    ("schema", "violation"),
    [
        pytest.param(_weather(additionalProperties=None), "additionalProperties: false", id="open"),
        pytest.param(_weather(required=["location"]), "every property", id="not-all-required"),
        pytest.param(_weather(type="array"), '"type": "object"', id="root-type"),
        pytest.param({"anyOf": [WEATHER]}, "root must not be an anyOf", id="root-anyOf"),
        pytest.param(_weather(allOf=[{"type": "object"}]), "rejects 'allOf'", id="allOf"),
        pytest.param(
            _weather(properties={"a": {"type": "string", "minLength": 1}}), "'minLength'", id="minLength"
        ),
        pytest.param(
            _weather(properties={"a": {"type": "string", "format": "uri"}}), "format 'uri'", id="format"
        ),
        pytest.param(_weather(properties={"a": {}}), "says nothing", id="any"),
        pytest.param(_weather(properties={"a": {"type": "array"}}), "one items schema", id="no-items"),
        pytest.param(
            _weather(properties={"a": {"type": "string", "maxItems": 2}}), "needs type array", id="misplaced"
        ),
        pytest.param(_weather(properties={"a": {"$ref": "#/$defs/x"}}), "must point at", id="dangling-ref"),
        pytest.param(
            {
                **_weather(properties={"a": {"$ref": "#/$defs/x", "description": "d"}}),
                "$defs": {"x": WEATHER},
            },
            "must stand alone",
            id="ref-siblings",
        ),
        pytest.param(_weather(properties={"a": {"type": "decimal"}}), "unsupported type", id="type-name"),
        pytest.param(
            _weather(properties={"a": {"type": "string", "enum": []}}), "non-empty", id="empty-enum"
        ),
        pytest.param(
            _weather(properties={"a": {"type": "integer", "minimum": "1"}}), "must be a number", id="min-str"
        ),
        pytest.param(_weather(properties={"a": True}), "must be a JSON object", id="bool-schema"),
        pytest.param(_weather(title="t"), "'title'", id="title"),
        pytest.param(_nested_objects(11), "nest 11 levels", id="depth"),
        pytest.param(
            {**WEATHER, "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}},
            "#/$defs/a: reaches itself",
            id="ref-cycle",
        ),
        pytest.param(["not", "an", "object"], "root must be a JSON object", id="root-list"),
        pytest.param(_weather(**{"$defs": []}), "#/$defs: must map", id="defs-list"),
        pytest.param(
            _weather(properties={"a": {"type": "string", "$defs": {}}}), "only appear at the root", id="nd"
        ),
        pytest.param(
            _weather(properties={"a": {"anyOf": []}}), "anyOf must be a non-empty", id="empty-anyOf"
        ),
        pytest.param(_weather(properties={"a": {"$ref": 3}}), "$ref must be a string", id="ref-int"),
        pytest.param(
            _weather(properties={"a": {"type": ["string", "string"]}}), "distinct type", id="dup-type"
        ),
        pytest.param(
            _weather(properties={"a": {"type": "string", "pattern": 1}}), "pattern must", id="pattern"
        ),
        pytest.param(
            _weather(properties={"a": {"type": "string", "description": 1}}), "description must", id="d"
        ),
        pytest.param(
            _weather(properties={"a": {"type": "array", "items": {"type": "string"}, "minItems": -1}}),
            "minItems must be a non-negative integer",
            id="minItems",
        ),
        pytest.param(
            _weather(properties={"a": {"type": "object", "additionalProperties": False}}),
            "must list its properties",
            id="object-without-properties",
        ),
    ],
)
def test_checker_finds_each_violation(schema: dict[str, Any], violation: str) -> None:
    problems = check_strict(schema)
    assert any(violation in p for p in problems), problems


# --- Properties over random schemas ---------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c/d", "e~f", "g"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2), st.text(max_size=3))
REFS = [
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/definitions/a",
    "#/properties/a",
    "#/properties/a/items",
    "#/x",
    "http://x",
]
TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def _keyword_values(children: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    bounds = st.one_of(st.integers(-2, 5), st.floats(-2, 5), st.booleans(), st.just("1"))
    return {
        "type": st.one_of(
            st.sampled_from([*TYPES, "text"]), st.lists(st.sampled_from(TYPES), max_size=3), bounds
        ),
        "properties": st.dictionaries(NAMES, children, max_size=3),
        "required": st.lists(NAMES, max_size=3),
        "additionalProperties": st.one_of(st.booleans(), children),
        "items": st.one_of(children, st.lists(children, max_size=2)),
        "anyOf": st.lists(children, max_size=3),
        "oneOf": st.lists(children, max_size=3),
        "allOf": st.lists(children, max_size=3),
        "enum": st.lists(SCALARS, max_size=3),
        "const": SCALARS,
        "$ref": st.sampled_from(REFS),
        "$defs": st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2),
        "definitions": st.dictionaries(st.just("a"), children, max_size=1),
        "default": SCALARS,
        "examples": st.lists(SCALARS, max_size=2),
        "description": st.one_of(st.text(max_size=4), st.integers()),
        "title": st.text(max_size=4),
        "nullable": st.booleans(),
        "minLength": bounds,
        "minimum": bounds,
        "exclusiveMinimum": bounds,
        "multipleOf": bounds,
        "minItems": bounds,
        "format": st.sampled_from(["email", "uri", "date-time", 3]),
        "pattern": st.sampled_from(["^a", 5]),
        "uniqueItems": st.booleans(),
        "dependentRequired": st.dictionaries(NAMES, st.lists(NAMES, max_size=2), max_size=1),
        "not": children,
        "patternProperties": st.dictionaries(st.just("^x"), children, max_size=1),
        "x-vendor": SCALARS,
    }


def _wild(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    values = _keyword_values(children)
    keys = st.lists(st.sampled_from(sorted(values)), unique=True, max_size=5)
    return keys.flatmap(lambda ks: st.fixed_dictionaries({k: values[k] for k in ks}))


LEAF_SCHEMAS = [{"type": "string"}, {"type": "integer", "minimum": 1}, {"enum": ["a", None]}, {}, True, False]
WILD = st.recursive(st.sampled_from(LEAF_SCHEMAS), _wild, max_leaves=15)
WILD_ROOTS = st.one_of(
    _wild(WILD),
    st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(NAMES, WILD, max_size=4)},
        optional={"required": st.lists(NAMES, max_size=4), "$defs": st.dictionaries(NAMES, WILD, max_size=2)},
    ),
)


@settings(max_examples=400, deadline=None)
@given(WILD_ROOTS)
def test_random_schemas_never_raise_and_any_output_is_strict(schema: dict[str, Any]) -> None:
    assert all(isinstance(p, str) for p in check_strict(schema))  # the checker copes with junk too
    outcome = _convert(schema)  # checks: input untouched, output passes check_strict, or reasons given
    if outcome.schema is not None:
        for path in outcome.nullable_paths:
            found = resolve_local_ref(outcome.schema, "#" + path)
            assert found is not None, path
            kinds = found[1].get("type", [])
            assert "null" in kinds or {"type": "null"} in found[1].get("anyOf", []), path
        strip_added_nulls({}, outcome)


# Schemas with values built alongside: each draw is (schema, strategy of (peer value, model value)).
# The peer value is what the peer's own schema accepts; the model value is what strict mode makes
# the model send instead: every property present, null where an optional one was left out.
Pair = tuple[Any, Any]
LEAVES: list[tuple[dict[str, Any], bool, st.SearchStrategy[Any]]] = [
    ({"type": "string"}, False, st.text(max_size=4)),
    ({"type": "integer", "minimum": 0, "default": 1}, False, st.integers(0, 9)),
    ({"type": "boolean", "title": "Flag"}, False, st.booleans()),
    ({"enum": ["x", "y"]}, False, st.sampled_from(["x", "y"])),
    ({"const": 7}, False, st.just(7)),
    ({"type": "string", "format": "uri", "minLength": 1}, False, st.just("https://a")),
    ({"type": ["string", "null"]}, True, st.one_of(st.none(), st.text(max_size=2))),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, True, st.one_of(st.none(), st.integers())),
    (
        {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
        False,
        st.one_of(st.text(max_size=2), st.booleans()),
    ),
]


def _same(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Pair]:
    return values.map(lambda v: (v, v))


@st.composite
def _object_pairs(draw: st.DrawFn, fields: list[tuple[str, bool, bool, st.SearchStrategy[Pair]]]) -> Pair:
    peer: dict[str, Any] = {}
    model: dict[str, Any] = {}
    for name, required, nullable, sub in fields:
        if required or nullable or draw(st.booleans()):
            peer[name], model[name] = draw(sub)
        else:
            model[name] = None
    return peer, model


@st.composite
def _typed(
    draw: st.DrawFn, depth: int, defs: dict[str, Any]
) -> tuple[dict[str, Any], bool, st.SearchStrategy[Pair]]:
    kind = draw(st.sampled_from(["leaf", "object", "array", "union"] if depth < 3 else ["leaf"]))
    if kind == "leaf":
        schema, nullable, values = draw(st.sampled_from(LEAVES))
        return schema, nullable, _same(values)
    if kind == "array":
        item, _, pairs = draw(_typed(depth + 1, defs))
        lists = st.lists(pairs, max_size=3).map(lambda ps: ([p for p, _ in ps], [m for _, m in ps]))
        return {"type": "array", "items": item}, False, lists
    if kind == "union":
        obj, _, obj_pairs = draw(_typed_object(depth + 1, defs))
        return {"anyOf": [obj, {"type": "string"}]}, False, st.one_of(obj_pairs, _same(st.text(max_size=2)))
    return draw(_typed_object(depth + 1, defs))


@st.composite
def _typed_object(
    draw: st.DrawFn, depth: int, defs: dict[str, Any]
) -> tuple[dict[str, Any], bool, st.SearchStrategy[Pair]]:
    names = draw(st.lists(NAMES, min_size=1 if depth else 0, max_size=4, unique=True))
    fields, props, required = [], {}, []
    for name in names:
        sub, nullable, pairs = draw(_typed(depth, defs))
        is_required = draw(st.booleans())
        props[name] = sub
        required += [name] if is_required else []
        fields.append((name, is_required, nullable, pairs))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    if draw(st.booleans()):  # an open object without properties is free-form, which strict mode refuses
        schema["additionalProperties"] = draw(st.sampled_from([False, True] if props else [False]))
    if depth and draw(st.booleans()):  # some objects are reached through $defs, some through allOf
        name = f"d{len(defs)}"
        defs[name] = schema
        schema = {"$ref": f"#/$defs/{name}"}
    elif depth and len(props) > 1 and draw(st.booleans()):
        first = next(iter(props))
        rest = {k: v for k, v in props.items() if k != first}
        req = schema.get("required", [])
        schema = {
            "allOf": [
                {
                    "type": "object",
                    "properties": {first: props[first]},
                    "required": [r for r in req if r == first],
                },
                {"properties": rest, "required": [r for r in req if r != first]},
            ]
        }
    return schema, False, _object_pairs(fields)


@st.composite
def _typed_root(draw: st.DrawFn) -> tuple[dict[str, Any], st.SearchStrategy[Pair]]:
    defs: dict[str, Any] = {}
    schema, _, pairs = draw(_typed_object(0, defs))
    return ({**schema, "$defs": defs} if defs else schema), pairs


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_widening_then_stripping_gives_back_what_the_peer_accepts(data: st.DataObject) -> None:
    schema, pairs = data.draw(_typed_root())
    peer, model = data.draw(pairs)
    outcome = _convert(schema)
    assert outcome.schema is not None, outcome.reasons
    jsonschema.validate(peer, schema)
    # _convert checked outcome.schema against the metaschema already: validate the value only
    jsonschema.validators.validator_for(outcome.schema)(outcome.schema).validate(model)
    before = copy.deepcopy(model)
    assert strip_added_nulls(model, outcome) == peer
    assert model == before


def test_docstring_examples() -> None:
    assert doctest.testmod(strict_module, raise_on_error=True).attempted > 0
