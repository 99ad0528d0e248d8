"""MCP tool definitions → OpenAI tool definitions.

The first group reproduces the unit cases and examples of the conversion specification
(MCP to OpenAI Tool Conversion, "Testing Requirements"), through `convert_parameters` and
`chat_tool`, and through the catalogue and the adapter. One deliberate difference from the
specification's literal outputs: a removed `default` is written into the description
("Default: X."), as the specification's own rationale asks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import mcp
import mcp_types as mt
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from mcpx_router import OpenAIPeerToolAdapter, PeerUnavailableError, ToolConversionError, convert_parameters
from mcpx_router._catalogue import Catalogue
from mcpx_router.model._schema import (
    chat_tool,
    describe_tool,
    legacy_function,
    responses_tool,
    validate_chat_tool,
)

# -- helpers -------------------------------------------------------------------------------


def convert_tool(mcp_tool: dict[str, Any]) -> dict[str, Any]:
    """The specification's `convert_tool`, built from this package's functions."""
    return chat_tool(mcp_tool["name"], mcp_tool["description"], convert_parameters(mcp_tool["inputSchema"]))


def convert_all_tools(mcp_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The specification's `convert_all_tools`, through the catalogue (the package's own convert-all)."""
    catalogue = Catalogue()
    catalogue.set_peer(
        "p",
        [
            mt.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
            for t in mcp_tools
        ],
    )
    return list(catalogue.view("chat"))


def containers(value: Any) -> Iterator[Any]:
    """Every dict and list inside a JSON-like value (including itself)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))
            yield item
            stack.extend(item.values() if isinstance(item, dict) else item)


SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SUBSCHEMA_ONE = (
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
)
SUBSCHEMA_MAPS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)


def assert_no_defaults(schema: Any) -> None:
    """No `default` keyword in any schema position (a property *named* default is fine)."""
    if not isinstance(schema, dict):
        return
    assert "default" not in schema, schema
    for key in SUBSCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            assert_no_defaults(sub)
    for key in SUBSCHEMA_ONE:
        assert_no_defaults(schema.get(key))
    for key in SUBSCHEMA_LISTS:
        for sub in schema.get(key) or []:
            assert_no_defaults(sub)
    items = schema.get("items")
    for sub in items if isinstance(items, list) else [items]:
        assert_no_defaults(sub)


def depth_of(value: Any) -> int:
    depth = 0
    level = [value]
    while level:
        depth += 1
        nxt: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                nxt.extend(item.values())
            elif isinstance(item, list):
                nxt.extend(item)
        level = nxt
    return depth


# -- the specification's unit tests --------------------------------------------------------


def test_convert_basic_tool() -> None:
    mcp_tool = {
        "name": "test_tool",
        "description": "A test tool",
        "inputSchema": {"type": "object", "properties": {"param1": {"type": "string"}}},
    }

    result = convert_tool(mcp_tool)

    assert result["type"] == "function"
    assert result["function"]["name"] == "test_tool"
    assert result["function"]["parameters"]["properties"]["param1"]["type"] == "string"
    assert result == {
        "type": "function",
        "function": {
            "name": "test_tool",
            "description": "A test tool",
            "parameters": {"type": "object", "properties": {"param1": {"type": "string"}}},
        },
    }


def test_removes_default_values() -> None:
    mcp_tool = {
        "name": "test_tool",
        "description": "Test",
        "inputSchema": {
            "type": "object",
            "properties": {"param1": {"type": "string", "default": "value"}},
        },
    }

    result = convert_tool(mcp_tool)

    assert "default" not in result["function"]["parameters"]["properties"]["param1"]
    assert result["function"]["parameters"]["properties"]["param1"] == {
        "type": "string",
        "description": 'Default: "value".',
    }


def test_preserves_enum() -> None:
    mcp_tool = {
        "name": "test_tool",
        "description": "Test",
        "inputSchema": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": ["a", "b", "c"]}},
        },
    }

    result = convert_tool(mcp_tool)

    assert result["function"]["parameters"]["properties"]["choice"]["enum"] == ["a", "b", "c"]


def test_deep_copy() -> None:
    mcp_tool = {
        "name": "test_tool",
        "description": "Test",
        "inputSchema": {
            "type": "object",
            "properties": {"param1": {"type": "string", "default": "value"}},
        },
    }

    result = convert_tool(mcp_tool)

    # Original should still have default
    assert "default" in mcp_tool["inputSchema"]["properties"]["param1"]
    # Converted should not have default
    assert "default" not in result["function"]["parameters"]["properties"]["param1"]


def test_convert_all_tools() -> None:
    mcp_tools = [
        {"name": "tool1", "description": "First tool", "inputSchema": {"type": "object", "properties": {}}},
        {"name": "tool2", "description": "Second tool", "inputSchema": {"type": "object", "properties": {}}},
    ]

    result = convert_all_tools(mcp_tools)

    assert len(result) == 2
    # The catalogue publishes each tool under its peer-prefixed name.
    assert result[0]["function"]["name"] == "p__tool1"
    assert result[1]["function"]["name"] == "p__tool2"
    assert all(tool["type"] == "function" for tool in result)
    assert result[0]["function"]["description"] == "First tool (via p)"
    assert result[0]["function"]["parameters"] == {"type": "object", "properties": {}}


def test_nested_objects() -> None:
    mcp_tool = {
        "name": "test_tool",
        "description": "Test",
        "inputSchema": {
            "type": "object",
            "properties": {
                "options": {
                    "type": "object",
                    "properties": {"nested_param": {"type": "string", "default": "nested_value"}},
                }
            },
        },
    }

    result = convert_tool(mcp_tool)

    # Nested default should be removed
    nested = result["function"]["parameters"]["properties"]["options"]["properties"]["nested_param"]
    assert "default" not in nested
    assert nested["description"] == 'Default: "nested_value".'


# -- the specification's examples and edge cases -------------------------------------------


def test_schema_comparison_example() -> None:
    mcp_tool = {
        "name": "build_model",
        "description": "Build a metabolic model from genome annotation",
        "inputSchema": {
            "type": "object",
            "properties": {
                "model_id": {"type": "string", "description": "Unique identifier with .gf suffix"},
                "template": {"type": "string", "description": "Template name", "default": "auto"},
            },
            "required": ["model_id"],
        },
    }
    assert convert_tool(mcp_tool) == {
        "type": "function",
        "function": {
            "name": "build_model",
            "description": "Build a metabolic model from genome annotation",
            "parameters": {
                "type": "object",
                "properties": {
                    "model_id": {"type": "string", "description": "Unique identifier with .gf suffix"},
                    "template": {"type": "string", "description": 'Template name. Default: "auto".'},
                },
                "required": ["model_id"],
            },
        },
    }


def test_convert_tool_docstring_example() -> None:
    mcp_tool = {
        "name": "build_model",
        "description": "Build a model",
        "inputSchema": {
            "type": "object",
            "properties": {"model_id": {"type": "string"}},
            "required": ["model_id"],
        },
    }
    openai_tool = convert_tool(mcp_tool)
    assert openai_tool["type"] == "function"
    assert openai_tool["function"]["name"] == "build_model"
    assert openai_tool["function"]["parameters"] == mcp_tool["inputSchema"]


def test_remove_defaults_docstring_example() -> None:
    schema = {"type": "object", "properties": {"param1": {"type": "string", "default": "value"}}}
    converted = convert_parameters(schema)
    assert "default" not in converted["properties"]["param1"]
    assert "default" in schema["properties"]["param1"]


def test_rule_2_default_value_removal() -> None:
    schema = {
        "properties": {"param": {"type": "string", "description": "A parameter", "default": "default_value"}}
    }
    assert convert_parameters(schema)["properties"] == {
        "param": {"type": "string", "description": 'A parameter. Default: "default_value".'}
    }


def test_empty_tools_list() -> None:
    assert convert_all_tools([]) == []


def test_tool_with_no_parameters() -> None:
    mcp_tool = {
        "name": "list_models",
        "description": "List all models",
        "inputSchema": {"type": "object", "properties": {}},
    }
    assert convert_tool(mcp_tool) == {
        "type": "function",
        "function": {
            "name": "list_models",
            "description": "List all models",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def test_tool_with_enum() -> None:
    schema = {
        "properties": {
            "genome_source": {
                "type": "string",
                "enum": ["rast_id", "fasta_file", "annotation_dict"],
                "description": "Source type",
            }
        }
    }
    assert convert_parameters(schema)["properties"] == schema["properties"]


def test_nested_objects_with_defaults() -> None:
    schema = {
        "properties": {
            "options": {
                "type": "object",
                "properties": {"timeout": {"type": "number", "default": 30}},
            }
        }
    }
    assert convert_parameters(schema)["properties"] == {
        "options": {
            "type": "object",
            "properties": {"timeout": {"type": "number", "description": "Default: 30."}},
        }
    }


@pytest.mark.anyio
async def test_convert_real_mcp_tools() -> None:
    """The specification's integration test, against an in-process MCP server whose tools have defaults."""
    server = MCPServer("gem")

    @server.tool()
    def build_model(model_id: str, template: str = "auto", gapfill: bool = True) -> str:
        """Build a metabolic model."""
        return model_id

    @server.tool()
    def run_fba(model_id: str, objective: str = "bio1", limits: dict[str, float] | None = None) -> str:
        """Run flux balance analysis."""
        return model_id

    @server.tool()
    def list_models() -> list[str]:
        """List all models."""
        return []

    async with mcp.Client(server) as client, OpenAIPeerToolAdapter() as adapter:
        mcp_tools = (await client.list_tools()).tools
        await adapter.add_peer("gem", client)
        openai_tools = adapter.get_openai_tools()

    assert any("default" in json.dumps(t.input_schema) for t in mcp_tools)
    assert len(openai_tools) == len(mcp_tools) == 3
    for tool in openai_tools:
        assert tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
        assert_no_defaults(tool["function"]["parameters"])
    by_name = {t["function"]["name"]: t["function"] for t in openai_tools}
    template = by_name["gem__build_model"]["parameters"]["properties"]["template"]
    assert template["type"] == "string"
    assert 'Default: "auto".' in template["description"]
    assert by_name["gem__build_model"]["parameters"]["required"] == ["model_id"]


# -- defaults wherever a subschema can hold one --------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(
            {"type": "array", "items": {"type": "string", "default": "x"}},
            {"type": "array", "items": {"type": "string", "description": 'Default: "x".'}},
            id="items-dict",
        ),
        pytest.param(
            {
                "type": "array",
                "items": [{"type": "string", "default": "a"}, {"type": "integer", "default": 1}],
            },
            {  # draft-07's tuple, in its 2020-12 spelling; the rest of the array stays unconstrained
                "type": "array",
                "prefixItems": [
                    {"type": "string", "description": 'Default: "a".'},
                    {"type": "integer", "description": "Default: 1."},
                ],
                "items": {},
            },
            id="items-list",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "object", "properties": {"n": {"default": 0}}}},
            {
                "type": "array",
                "items": {"type": "object", "properties": {"n": {"description": "Default: 0."}}},
            },
            id="items-object-properties",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "integer", "default": 0}},
            {"type": "object", "additionalProperties": {"type": "integer", "description": "Default: 0."}},
            id="additionalProperties",
        ),
        pytest.param(
            {"anyOf": [{"type": "string", "default": "s"}, {"type": "null"}]},
            {"anyOf": [{"type": "string", "description": 'Default: "s".'}, {"type": "null"}]},
            id="anyOf",
        ),
        pytest.param(
            {"oneOf": [{"type": "integer", "default": 1}, {"type": "string", "default": "1"}]},
            {
                "oneOf": [
                    {"type": "integer", "description": "Default: 1."},
                    {"type": "string", "description": 'Default: "1".'},
                ]
            },
            id="oneOf",
        ),
        pytest.param(
            {"allOf": [{"type": "object", "properties": {"a": {"type": "string", "default": "z"}}}]},
            {
                "allOf": [
                    {
                        "type": "object",
                        "properties": {"a": {"type": "string", "description": 'Default: "z".'}},
                    }
                ]
            },
            id="allOf",
        ),
        pytest.param(
            {"$ref": "#/$defs/Opt", "$defs": {"Opt": {"type": "string", "default": "o"}}},
            {"$ref": "#/$defs/Opt", "$defs": {"Opt": {"type": "string", "description": 'Default: "o".'}}},
            id="$defs",
        ),
        pytest.param(
            {"$ref": "#/definitions/Opt", "definitions": {"Opt": {"type": "number", "default": 1.5}}},
            {
                "$ref": "#/definitions/Opt",
                "definitions": {"Opt": {"type": "number", "description": "Default: 1.5."}},
            },
            id="definitions",
        ),
        pytest.param(
            {"type": "array", "prefixItems": [{"type": "string", "default": "p"}, {"type": "integer"}]},
            {
                "type": "array",
                "prefixItems": [{"type": "string", "description": 'Default: "p".'}, {"type": "integer"}],
                "items": {},
            },
            id="prefixItems",
        ),
        pytest.param(
            {"not": {"type": "string", "default": "n"}},
            {"not": {"type": "string", "description": 'Default: "n".'}},
            id="not",
        ),
        pytest.param(
            {
                "if": {"properties": {"k": {"const": "a", "default": "a"}}},
                "then": {"properties": {"v": {"type": "string", "default": "t"}}},
                "else": {"properties": {"v": {"type": "integer", "default": 0}}},
            },
            {
                "if": {"properties": {"k": {"const": "a", "description": 'Default: "a".'}}},
                "then": {"properties": {"v": {"type": "string", "description": 'Default: "t".'}}},
                "else": {"properties": {"v": {"type": "integer", "description": "Default: 0."}}},
            },
            id="if-then-else",
        ),
        pytest.param(
            {"patternProperties": {"^x-": {"type": "string", "default": "x"}}},
            {"patternProperties": {"^x-": {"type": "string", "description": 'Default: "x".'}}},
            id="patternProperties",
        ),
        pytest.param(
            {"dependencies": {"a": {"required": ["b"], "properties": {"b": {"default": 1}}}, "c": ["a"]}},
            {
                "dependencies": {
                    "a": {"required": ["b"], "properties": {"b": {"description": "Default: 1."}}},
                    "c": ["a"],
                }
            },
            id="dependencies",
        ),
        pytest.param(
            {"type": "string", "contentMediaType": "application/json", "contentSchema": {"default": {}}},
            {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"description": "Default: {}."},
            },
            id="contentSchema",
        ),
        pytest.param(
            {"type": "array", "contains": {"type": "integer", "default": 3}},
            {"type": "array", "contains": {"type": "integer", "description": "Default: 3."}, "items": {}},
            id="contains",
        ),
    ],
)
def test_defaults_removed_in_every_subschema_position(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    root = {"type": "object", "properties": {"field": schema}}
    snapshot = copy.deepcopy(root)
    converted = convert_parameters(root)
    assert converted == {"type": "object", "properties": {"field": expected}}
    assert_no_defaults(converted)
    assert root == snapshot


def test_default_on_the_root_schema() -> None:
    converted = convert_parameters({"type": "object", "properties": {}, "default": {}})
    assert converted == {"type": "object", "properties": {}, "description": "Default: {}."}


def test_deeply_nested_mixture() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"$ref": "#/$defs/B"},
                        {"type": "object", "additionalProperties": {"type": "string", "default": "q"}},
                    ]
                },
                "default": [],
            }
        },
        "$defs": {
            "B": {"type": "object", "properties": {"c": {"oneOf": [{"type": "integer", "default": 2}]}}}
        },
    }
    converted = convert_parameters(schema)
    assert_no_defaults(converted)
    assert converted["properties"]["a"]["description"] == "Default: []."
    one_of = converted["$defs"]["B"]["properties"]["c"]["oneOf"]
    assert one_of == [{"type": "integer", "description": "Default: 2."}]


def test_a_property_named_default_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "default": {"type": "string", "description": "Which profile is the default.", "default": "main"},
            "other": {"type": "boolean"},
        },
        "required": ["default"],
    }
    converted = convert_parameters(schema)
    assert list(converted["properties"]) == ["default", "other"]
    assert converted["properties"]["default"] == {
        "type": "string",
        "description": 'Which profile is the default. Default: "main".',
    }
    assert converted["required"] == ["default"]


def test_a_def_named_default_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/default"}},
        "$defs": {"default": {"type": "integer"}},
    }
    assert convert_parameters(schema) == schema


# -- defaults written into descriptions ----------------------------------------------------


@pytest.mark.parametrize(
    ("default", "shown"),
    [
        (30, "30"),
        (1.5, "1.5"),
        ("auto", '"auto"'),
        ("", '""'),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ([1, "two"], '[1, "two"]'),
        ({"a": 1}, '{"a": 1}'),
        ("café ☕", '"café ☕"'),
        ({1}, "{1}"),  # not JSON (possible only in-process): shown as Python
    ],
)
def test_default_recorded_in_description(default: Any, shown: str) -> None:
    schema = {"type": "object", "properties": {"p": {"default": default}}}
    assert convert_parameters(schema)["properties"]["p"] == {"description": f"Default: {shown}."}


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("How long to wait.", "How long to wait. Default: 30."),
        ("How long to wait   ", "How long to wait. Default: 30."),
        ("How long to wait", "How long to wait. Default: 30."),
        ("Really?", "Really? Default: 30."),
        ("Wait!", "Wait! Default: 30."),
        ("Seconds:", "Seconds: Default: 30."),
        ("", "Default: 30."),
        ("   ", "Default: 30."),
        (None, "Default: 30."),
    ],
)
def test_default_appended_to_existing_description(description: str | None, expected: str) -> None:
    prop: dict[str, Any] = {"type": "number", "default": 30}
    if description is not None:
        prop["description"] = description
    converted = convert_parameters({"type": "object", "properties": {"timeout": prop}})
    assert converted["properties"]["timeout"] == {"type": "number", "description": expected}


def test_description_position_when_default_comes_first() -> None:
    prop = {"default": 5, "type": "integer", "description": "Count."}
    converted = convert_parameters({"type": "object", "properties": {"n": prop}})
    assert converted["properties"]["n"] == {"type": "integer", "description": "Count. Default: 5."}


# -- everything else preserved -------------------------------------------------------------


def test_everything_else_is_preserved() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Arguments",
        "type": "object",
        "description": "All the arguments.",
        "properties": {
            "kind": {"type": "string", "enum": ["a", "b"], "title": "Kind", "description": "The kind."},
            "fixed": {"const": 3},
            "count": {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 2},
            "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 9},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "either": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "both": {"allOf": [{"type": "object"}, {"required": ["x"]}]},
            "map": {"type": "object", "additionalProperties": {"type": "number"}},
            "closed": {"type": "object", "properties": {}, "additionalProperties": False},
            "nullable": {"type": ["string", "null"], "examples": ["x", None]},
            "ref": {"$ref": "#/$defs/R"},
            "anything": True,
        },
        "$defs": {"R": {"type": "object", "properties": {"r": {"type": "string"}}, "required": ["r"]}},
        "required": ["kind", "name"],
        "additionalProperties": False,
        "x-vendor": {"anything": [1, 2, {"deep": True}]},
    }
    snapshot = copy.deepcopy(schema)
    converted = convert_parameters(schema)
    assert converted == snapshot
    assert list(converted) == list(snapshot)
    assert list(converted["properties"]) == list(snapshot["properties"])


# -- deep copy -----------------------------------------------------------------------------


def test_original_is_unchanged_and_shares_no_container() -> None:
    schema = {
        "type": "object",
        "properties": {
            "opts": {
                "type": "object",
                "properties": {"t": {"type": "number", "default": 30, "enum": [10, 30]}},
                "default": {"t": 30},
                "required": ["t"],
            },
            "list": {"type": "array", "items": [{"default": [1, 2]}], "examples": [[1], [2]]},
            "u": {"anyOf": [{"type": "string", "default": "s"}]},
        },
        "x-extra": {"nested": [{"a": [1]}]},
        "$defs": {"D": {"type": "object", "properties": {"d": {"default": {"k": [1]}}}}},
    }
    snapshot = copy.deepcopy(schema)
    converted = convert_parameters(schema)

    assert schema == snapshot
    assert "default" in schema["properties"]["opts"]["properties"]["t"]
    assert "default" in schema["properties"]["opts"]
    input_ids = {id(c) for c in containers(schema)}
    output_ids = {id(c) for c in containers(converted)}
    assert not input_ids & output_ids

    # Mutating the output does not reach the input.
    converted["properties"]["opts"]["properties"]["t"]["enum"].append(99)
    converted["x-extra"]["nested"][0]["a"].append(2)
    converted["properties"]["list"]["examples"][0].append(5)
    assert schema == snapshot


def test_each_conversion_is_a_fresh_tree() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    first = convert_parameters(schema)
    second = convert_parameters(schema)
    assert first == second
    assert not {id(c) for c in containers(first)} & {id(c) for c in containers(second)}


@pytest.mark.parametrize("empty", [None, {}])
def test_empty_results_are_not_shared(empty: dict[str, Any] | None) -> None:
    first = convert_parameters(empty)
    first["properties"]["x"] = {"type": "string"}
    first["extra"] = 1
    assert convert_parameters(empty) == {"type": "object", "properties": {}}


# -- the root ------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", [None, {}])
def test_no_input_schema(schema: dict[str, Any] | None) -> None:
    assert convert_parameters(schema) == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"a": {"type": "string"}}, "type": "object"},
        ),
        ({"type": "object"}, {"type": "object", "properties": {}}),
        ({"required": []}, {"required": [], "type": "object", "properties": {}}),
        ({"description": "Nothing."}, {"description": "Nothing.", "type": "object", "properties": {}}),
    ],
)
def test_root_gets_object_type_and_properties(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert convert_parameters(schema) == expected


def test_tool_with_empty_input_schema_through_the_catalogue() -> None:
    catalogue = Catalogue()
    catalogue.set_peer("p", [mt.Tool(name="t", input_schema={})])
    (tool,) = catalogue.view("chat")
    assert tool["function"]["parameters"] == {"type": "object", "properties": {}}


# -- cycles and absurd nesting -------------------------------------------------------------


def _self_in_properties() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    return schema


def _self_in_items() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "array"}
    node["items"] = node
    return {"type": "object", "properties": {"tree": node}}


def _self_in_any_of() -> dict[str, Any]:
    node: dict[str, Any] = {"anyOf": [{"type": "null"}]}
    node["anyOf"].append(node)
    node["anyOf"].append(node)
    return {"type": "object", "properties": {"n": node}}


def _mutual() -> dict[str, Any]:
    a: dict[str, Any] = {"type": "object", "properties": {}, "default": {}}
    b: dict[str, Any] = {"type": "object", "properties": {"a": a, "a2": a}}
    a["properties"]["b"] = b
    a["properties"]["b2"] = b
    return {"type": "object", "properties": {"a": a}}


def _cycle_in_defs() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": defs}
    defs["X"] = schema
    return schema


def _cycle_in_a_plain_value() -> dict[str, Any]:
    value: dict[str, Any] = {"k": 1}
    value["a"] = value
    value["b"] = value
    return {"type": "object", "properties": {}, "x-meta": value}


def _cycle_in_a_list_value() -> dict[str, Any]:
    value: list[Any] = [1]
    value.append(value)
    value.append(value)
    return {"type": "object", "properties": {"e": {"enum": value}}}


def _cycle_in_a_default() -> dict[str, Any]:
    value: dict[str, Any] = {"k": 1}
    value["self"] = value
    return {"type": "object", "properties": {"d": {"type": "object", "default": value}}}


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "build",
    [
        _self_in_properties,
        _self_in_items,
        _self_in_any_of,
        _mutual,
        _cycle_in_defs,
        _cycle_in_a_plain_value,
        _cycle_in_a_list_value,
        _cycle_in_a_default,
    ],
)
def test_cyclic_schemas_are_cut_off(build: Any) -> None:
    schema = build()
    converted = convert_parameters(schema)
    text = json.dumps(converted)  # a finite tree: serialisable, no cycle left
    assert converted["type"] == "object"
    assert len(text) < 1_000_000
    assert_no_defaults(converted)
    # And the converted tool is still acceptable.
    validate_chat_tool(chat_tool("p__t", "d", converted), peer="p", tool_name="t")


def _nest(levels: int, wrap: Any, leaf: Any) -> Any:
    node = leaf
    for _ in range(levels):
        node = wrap(node)
    return node


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda: _nest(10_000, lambda n: {"type": "object", "properties": {"x": n}}, {"type": "string"}),
            id="properties",
        ),
        pytest.param(
            lambda: {
                "type": "object",
                "properties": {"a": _nest(10_000, lambda n: {"type": "array", "items": n}, {})},
            },
            id="items",
        ),
        pytest.param(
            lambda: {"type": "object", "properties": {"u": _nest(10_000, lambda n: {"anyOf": [n]}, {})}},
            id="anyOf",
        ),
        pytest.param(
            lambda: {
                "type": "object",
                "properties": {"n": _nest(10_000, lambda n: {"not": n, "default": 1}, {})},
            },
            id="not-with-defaults",
        ),
        pytest.param(
            lambda: {"type": "object", "properties": {"c": {"const": _nest(10_000, lambda n: [n], 0)}}},
            id="deep-const-value",
        ),
        pytest.param(
            lambda: {"type": "object", "properties": {}, "x-meta": _nest(10_000, lambda n: {"k": n}, 0)},
            id="deep-unknown-keyword",
        ),
        pytest.param(
            lambda: {
                "type": "object",
                "properties": {"d": {"default": _nest(10_000, lambda n: {"k": n}, 0)}},
            },
            id="deep-default-value",
        ),
    ],
)
def test_ten_thousand_deep_nesting(build: Any) -> None:
    schema = build()
    converted = convert_parameters(schema)
    assert converted["type"] == "object"
    assert depth_of(converted) < 500
    json.dumps(converted)
    assert_no_defaults(converted)


# -- descriptions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "title", "expected"),
    [
        ("Get the forecast.", None, "Get the forecast. (via weather)"),
        ("  Get the forecast.  ", "Forecast", "Get the forecast. (via weather)"),
        (None, "Forecast", "Forecast (via weather)"),
        ("", "Forecast", "Forecast (via weather)"),
        ("   ", "  Forecast ", "Forecast (via weather)"),
        (None, None, "Call the tool 'get.forecast'. (via weather)"),
        ("", "  ", "Call the tool 'get.forecast'. (via weather)"),
    ],
)
def test_description_fallback_and_peer_suffix(
    description: str | None, title: str | None, expected: str
) -> None:
    assert describe_tool("weather", "get.forecast", description, title) == expected


def test_published_description_names_the_peer() -> None:
    catalogue = Catalogue()
    catalogue.set_peer(
        "weather",
        [
            mt.Tool(name="forecast", description="Get it.", input_schema={"type": "object"}),
            mt.Tool(name="untitled", input_schema={"type": "object"}),
            mt.Tool(name="titled", title="A title", input_schema={"type": "object"}),
        ],
    )
    descriptions = [t["function"]["description"] for t in catalogue.view("chat")]
    assert descriptions == [
        "Get it. (via weather)",
        "Call the tool 'untitled'. (via weather)",
        "A title (via weather)",
    ]


# -- the three OpenAI forms ----------------------------------------------------------------

PARAMS = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def test_chat_form() -> None:
    assert chat_tool("p__search", "Search. (via p)", PARAMS) == {
        "type": "function",
        "function": {"name": "p__search", "description": "Search. (via p)", "parameters": PARAMS},
    }


def test_responses_form() -> None:
    assert responses_tool("p__search", "Search. (via p)", PARAMS) == {
        "type": "function",
        "name": "p__search",
        "description": "Search. (via p)",
        "parameters": PARAMS,
        "strict": False,
    }


def test_legacy_function_form() -> None:
    assert legacy_function("p__search", "Search. (via p)", PARAMS) == {
        "name": "p__search",
        "description": "Search. (via p)",
        "parameters": PARAMS,
    }


def test_catalogue_views_in_all_three_forms() -> None:
    catalogue = Catalogue()
    catalogue.set_peer(
        "p",
        [
            mt.Tool(
                name="search",
                description="Search.",
                input_schema={"type": "object", "properties": {"q": {"type": "string", "default": "*"}}},
            )
        ],
    )
    params = {"type": "object", "properties": {"q": {"type": "string", "description": 'Default: "*".'}}}
    assert catalogue.view("chat") == (chat_tool("p__search", "Search. (via p)", params),)
    assert catalogue.view("responses") == (responses_tool("p__search", "Search. (via p)", params),)
    assert catalogue.view("functions") == (legacy_function("p__search", "Search. (via p)", params),)


# -- validation ----------------------------------------------------------------------------


def _good() -> dict[str, Any]:
    return chat_tool("p__t", "d", {"type": "object", "properties": {}})


@pytest.mark.parametrize(
    ("tool", "problem"),
    [
        ({**_good(), "type": "custom"}, "'type' is not 'function'"),
        ({"type": "function"}, "no 'function' object"),
        (chat_tool("p.t", "d", {"type": "object"}), "does not match"),
        (chat_tool("x" * 65, "d", {"type": "object"}), "does not match"),
        (chat_tool("", "d", {"type": "object"}), "does not match"),
        (chat_tool("p__t", "d", [1]), "parameters are not a JSON object"),  # type: ignore[arg-type]
        (chat_tool("p__t", "d", {"type": "array", "items": {}}), "type 'array'"),
        (chat_tool("p__t", "d", {"type": "string"}), "type 'string'"),
        (chat_tool("p__t", "d", {"type": ["object", "null"]}), "OpenAI needs an object at the root"),
        (chat_tool("p__t", "d", {"type": "object", "properties": ["a"]}), "'properties' is not an object"),
    ],
)
def test_validate_chat_tool_names_peer_and_tool(tool: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolConversionError) as info:
        validate_chat_tool(tool, peer="my-peer", tool_name="my.tool")
    message = str(info.value)
    assert problem in message
    assert "'my-peer'" in message and "'my.tool'" in message
    assert info.value.peer == "my-peer"
    assert info.value.tool == "my.tool"
    assert isinstance(info.value, ValueError)


def test_validate_chat_tool_accepts_a_good_tool() -> None:
    validate_chat_tool(_good(), peer="p", tool_name="t")


def test_catalogue_rejects_array_root_and_keeps_the_rest() -> None:
    catalogue = Catalogue()
    changed = catalogue.set_peer(
        "lists",
        [
            mt.Tool(name="bad", input_schema={"type": "array", "items": {"type": "string"}}),
            mt.Tool(name="good", input_schema={"type": "object"}),
        ],
    )
    assert changed
    assert [t.name for t in catalogue.all_tools()] == ["lists__good"]
    assert set(catalogue.rejected("lists")) == {"bad"}
    assert "'bad'" in catalogue.rejected("lists")["bad"]
    assert "'lists'" in catalogue.rejected("lists")["bad"]
    # The rejected tool holds no name.
    assert catalogue.lookup("lists__bad") is None


ARRAY_ROOT_TOOLS = [
    mt.Tool(name="takes_list", description="Wants a list.", input_schema={"type": "array"}),
    mt.Tool(name="fine", description="Fine.", input_schema={"type": "object", "properties": {}}),
]


def _array_root_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=ARRAY_ROOT_TOOLS)

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(text=params.name)])

    return Server("arrays", on_list_tools=list_tools, on_call_tool=call_tool)


class PlainPeer:
    """A peer that is not an `mcp` client: the adapter takes anything with `list_tools` and
    `call_tool` (the `ToolSession` protocol). The `mcp` library refuses a non-object root on
    the wire, so only such a peer can hand the adapter one."""

    def __init__(self, tools: list[mt.Tool]) -> None:
        self.tools = tools
        self.calls: list[str] = []

    async def list_tools(self, *, cursor: str | None = None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=self.tools)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        self.calls.append(name)
        return mt.CallToolResult(content=[mt.TextContent(text=f"ran {name}")])


@pytest.mark.anyio
async def test_adapter_rejects_a_tool_whose_root_is_an_array() -> None:
    peer = PlainPeer(ARRAY_ROOT_TOOLS)
    async with OpenAIPeerToolAdapter() as adapter:
        published = await adapter.add_peer("listy", peer)
        assert published == ("listy__fine",)
        rejected = adapter.rejected_tools("listy")
        assert list(rejected) == ["takes_list"]
        assert "'listy'" in rejected["takes_list"]
        assert "'takes_list'" in rejected["takes_list"]
        assert "'array'" in rejected["takes_list"]
        assert [t["function"]["name"] for t in adapter.get_openai_tools()] == ["listy__fine"]
        # The model cannot call it either; the good tool still works.
        bad, good = await adapter.dispatch(
            [
                {"id": "c1", "type": "function", "function": {"name": "listy__takes_list"}},
                {"id": "c2", "type": "function", "function": {"name": "listy__fine", "arguments": "{}"}},
            ]
        )
        assert bad["content"].startswith("Error:")
        assert good == {"role": "tool", "tool_call_id": "c2", "content": "ran fine"}
        assert peer.calls == ["fine"]


@pytest.mark.anyio
async def test_an_mcp_peer_cannot_even_list_an_array_root() -> None:
    """Through a real `mcp.Client` the listing itself fails validation: the peer is unavailable,
    and the error names it."""
    async with mcp.Client(_array_root_server()) as client, OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(PeerUnavailableError) as info:
            await adapter.add_peer("listy", client)
        assert info.value.peer == "listy"
        assert "'listy'" in str(info.value)
        assert adapter.peers == ()
        assert adapter.get_openai_tools() == ()
