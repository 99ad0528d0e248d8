"""Everything we send, the API accepts: the converter's output held against `check_parameters`.

The checker (`_outbound_rules`) is written from the receiver's rules, not from the converter; these
tests feed both arbitrary input — JSON Schema of every draft, and junk that is no schema at all —
and require that each tool is either published in a form that passes the checker, or withheld
with a reason. The keyword tables are compared with the meta-schemas `jsonschema` ships.
"""

from __future__ import annotations

import copy
import doctest
import json
import logging
import math
from collections.abc import Iterator
from typing import Any

import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped, unused-ignore]
from mcp.server.lowlevel import Server

import mcpx_router.model._outbound_rules as rules
import mcpx_router.model._schema as schema_module
import mcpx_router.model.strict._strict as strict_module
from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router._catalogue import Catalogue
from mcpx_router.model._outbound_rules import check_outbound, check_parameters
from mcpx_router.model._schema import convert_for_openai
from mcpx_router.model.strict._strict import StrictOutcome

# -- the subschema positions, read from the meta-schemas ------------------------------------------

DRAFTS = ("draft-04", "draft-06", "draft-07", "draft/2019-09", "draft/2020-12")


def _positions(prefixes: tuple[str, ...]) -> dict[str, set[str]]:
    """Keywords whose value is a subschema ("one"), a list of them ("many"), or a map of names to
    them ("named"), in every meta-schema (vocabularies included) whose URI has one of `prefixes`."""
    found: dict[str, set[str]] = {"one": set(), "many": set(), "named": set()}

    def kinds(node: Any) -> set[str]:
        out: set[str] = set()
        if not isinstance(node, dict):
            return out
        if node.get("$ref") == "#" or node.get("$recursiveRef") == "#" or node.get("$dynamicRef") == "#meta":
            out.add("one")
        if str(node.get("$ref", "")).endswith("schemaArray"):
            out.add("many")
        if node.get("type") == "object" and "one" in kinds(node.get("additionalProperties")):
            out.add("named")
        for branch in node.get("anyOf", []):
            out |= kinds(branch)
        return out

    for uri in REGISTRY:
        if any(p in uri for p in prefixes):
            for keyword, sub in REGISTRY.contents(uri).get("properties", {}).items():
                for kind in kinds(sub):
                    found[kind].add(keyword)
    return found


ALL_DRAFTS = _positions(DRAFTS)
DRAFT_2020 = _positions(("draft/2020-12",))


def test_the_meta_schemas_were_read() -> None:
    # The derivation itself must see the well-known keywords, or the comparisons below prove nothing.
    assert {"items", "not", "additionalItems", "contentSchema"} <= ALL_DRAFTS["one"]
    assert {"items", "anyOf", "prefixItems"} <= ALL_DRAFTS["many"]
    assert {"properties", "dependencies", "definitions", "$defs"} <= ALL_DRAFTS["named"]


def test_the_converter_knows_every_subschema_position_of_every_draft() -> None:
    assert schema_module._ONE == ALL_DRAFTS["one"]
    assert schema_module._MANY == ALL_DRAFTS["many"]
    assert schema_module._NAMED == ALL_DRAFTS["named"]


def test_the_checker_knows_every_subschema_position_of_2020_12() -> None:
    assert DRAFT_2020["one"] == rules.SUBSCHEMA
    assert DRAFT_2020["many"] == rules.SUBSCHEMA_LIST
    assert DRAFT_2020["named"] == rules.SUBSCHEMA_MAP


def schema_positions(node: Any) -> Iterator[dict[str, Any]]:
    """Every subschema of `node` (itself included), by the keyword sets of all drafts."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if not isinstance(sub, dict):
            continue
        yield sub
        for key, value in sub.items():
            if key in ALL_DRAFTS["one"]:
                stack.append(value)
            if key in ALL_DRAFTS["many"] and isinstance(value, list):
                stack.extend(value)
            if key in ALL_DRAFTS["named"] and isinstance(value, dict):
                stack.extend(value.values())


# -- strategies -----------------------------------------------------------------------------------

ONE = sorted(ALL_DRAFTS["one"])
MANY = sorted(ALL_DRAFTS["many"])
NAMED = sorted(ALL_DRAFTS["named"])
TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-10, 10), names)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
junk = st.recursive(
    st.one_of(scalars, st.floats(), st.text(max_size=4), st.just("a b")),  # NaN, inf, surrogates, not a URI
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from([*ONE, *MANY, "type", "$ref", "$id"]), inner)
    ),
    max_leaves=6,
)
type_values = st.one_of(
    st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)
)


def schemas(leaf_extra: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[Any]:
    """JSON Schemas of any draft, subschemas in every position, defaults anywhere."""
    simple = st.fixed_dictionaries(
        {},
        optional={
            "type": type_values,
            "description": names,
            "default": json_values,
            "enum": st.lists(scalars, min_size=1, max_size=3),
            "minimum": st.integers(-3, 3),
            "maximum": st.integers(4, 9),
            "exclusiveMinimum": st.booleans() | st.integers(-3, 3),  # draft-04 | later drafts
            "title": names,
            "$ref": st.sampled_from(["#", "#/$defs/a", "#/definitions/b", "#/nowhere", "other.json#/x"]),
        },
    )
    leaves = st.one_of(simple, st.booleans(), st.nothing() if leaf_extra is None else leaf_extra)

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        one = st.tuples(st.sampled_from(ONE), inner)
        many = st.tuples(st.sampled_from(MANY), st.lists(inner, min_size=1, max_size=3))
        named = st.tuples(
            st.sampled_from(NAMED),
            st.dictionaries(st.sampled_from(["a", "b", "default", "x y"]), inner, min_size=1, max_size=3),
        )
        return st.builds(
            lambda base, parts: {**base, **dict(parts)}, simple, st.lists(one | many | named, max_size=3)
        )

    return st.recursive(leaves, extend, max_leaves=12)


ROOT_JUNK = st.dictionaries(
    st.sampled_from(["$schema", "required", "$defs", "definitions", "$id"]), json_values
)
ROOT_KEYWORDS = st.fixed_dictionaries(
    {},
    optional={
        "$schema": st.sampled_from(
            [f"http://json-schema.org/{d}/schema#" for d in DRAFTS[:3]]
            + [f"https://json-schema.org/{d}/schema" for d in DRAFTS[3:]]
        ),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), unique=True),
        "additionalProperties": st.booleans(),
    },
)


def deep(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One subschema nested 1 to 150 levels deep, through any keyword that holds one."""
    return st.builds(
        _nest,
        st.lists(st.sampled_from([*ONE, "properties"]), min_size=1, max_size=150),
        leaf,
    )


def _nest(keys: list[str], bottom: Any) -> Any:
    for key in keys:
        bottom = {key: {"x": bottom}} if key == "properties" else {key: bottom}
    return bottom


def roots(
    inner: st.SearchStrategy[Any], rest: st.SearchStrategy[dict[str, Any]] = ROOT_JUNK
) -> st.SearchStrategy[dict[str, Any]]:
    """An MCP input schema: a JSON object at the root, anything below."""
    return st.one_of(
        st.builds(
            lambda props, extra: {"type": "object", "properties": props, **extra},
            st.dictionaries(names, inner, max_size=4),
            rest,
        ),
        inner.filter(lambda s: isinstance(s, dict)),
    )


def same(a: Any, b: Any) -> bool:
    """Equality that also holds for NaN (the input's floats are compared as written)."""
    return repr(a) == repr(b)


# -- converter and checker together ---------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(
    schema=roots(schemas(junk) | deep(schemas(junk))),
    strict=st.sampled_from([False, None, True]),
    json_strings=st.booleans(),
)
def test_a_tool_is_published_in_a_form_the_checker_accepts_or_withheld_with_a_reason(
    schema: dict[str, Any], strict: bool | None, json_strings: bool
) -> None:
    snapshot = copy.deepcopy(schema)
    catalogue = Catalogue(strict=strict, json_strings=json_strings)
    catalogue.set_peer("p", [mt.Tool(name="t", input_schema=schema)])
    assert same(schema, snapshot)
    published = catalogue.tools_of("p")
    if published:
        (tool,) = published
        assert check_outbound(tool.parameters, strict=tool.strict) == ()
        if convert_for_openai(schema).repairs:  # arguments are checked against what the peer said
            assert same(tool.input_schema, schema)
        json.dumps(tool.parameters, allow_nan=False).encode("utf-8")
        assert catalogue.rejected("p") == {}
    else:
        reason = catalogue.rejected("p")["t"]
        assert "'t'" in reason and "'p'" in reason


@settings(max_examples=300, deadline=None)
@given(schema=roots(schemas(), ROOT_KEYWORDS))
def test_every_schema_of_the_repaired_kinds_converts_into_an_accepted_one(schema: dict[str, Any]) -> None:
    """Drafts 04-2020-12 forms the API refuses as written (arrays without items, in type lists too;
    tuple items; draft-04 exclusive bounds; booleans as schemas) come out accepted."""
    snapshot = copy.deepcopy(schema)
    parameters, repairs = convert_for_openai(schema)
    assert schema == snapshot
    problems = check_parameters(parameters)
    # Only what no rewrite can fix is left: a root that is not an object, a list in `items` next to
    # `prefixItems`, and keywords whose value is not a schema where the generator put one.
    assert all(_unrepairable(p, parameters) for p in problems), problems
    if not repairs:
        assert _same_meaning_without_defaults(schema, parameters)


def _unrepairable(problem: str, parameters: dict[str, Any]) -> bool:
    if problem.startswith('#: the root must have "type": "object"'):
        return parameters.get("type") != "object"
    if problem.startswith("#: the root object must have properties"):
        return parameters.get("type") != "object"
    return "is not of type 'object', 'boolean'" in problem or "is not valid under any" in problem


def _same_meaning_without_defaults(original: dict[str, Any], converted: dict[str, Any]) -> bool:
    """`converted` is `original` with only defaults moved (so it validates the same arguments)."""
    expected = _annotations_stripped(original)
    expected.setdefault("type", "object")
    if expected["type"] == "object":
        expected.setdefault("properties", {})
    return same(expected, _annotations_stripped(converted))


def _annotations_stripped(node: Any) -> Any:
    """`node` without `default` and `description` in any subschema position."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("default", "description"):
            continue
        if key in ALL_DRAFTS["one"]:
            value = _annotations_stripped(value)
        if key in ALL_DRAFTS["many"] and isinstance(value, list):
            value = [_annotations_stripped(v) for v in value]
        if key in ALL_DRAFTS["named"] and isinstance(value, dict):
            value = {k: _annotations_stripped(v) for k, v in value.items()}
        out[key] = value
    return out


# -- defaults -------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(schema=roots(schemas()))
def test_no_default_survives_in_any_subschema_position(schema: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(schema)
    converted = schema_module.convert_parameters(schema)
    assert schema == snapshot
    for sub in schema_positions(converted):
        assert "default" not in sub, sub
    # A property named "default" is kept, at every level where the input had one.
    for before, after in zip(_named_defaults(schema), _named_defaults(converted), strict=True):
        assert before == after


def _named_defaults(node: Any) -> list[str]:
    return sorted(
        key
        for sub in schema_positions(node)
        for key in NAMED
        if isinstance(sub.get(key), dict) and "default" in sub[key]
    )


# -- the quick path is a subset of the full check ------------------------------------------------


NAN, INF, SURROGATE = math.nan, math.inf, "\ud800"
valid_flat_property = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(TYPES[2:]) | st.lists(st.sampled_from(TYPES[2:]), min_size=1, unique=True),
        "title": names,
        "description": names,
        "enum": st.lists(scalars, max_size=3),
        "format": names,
        "minimum": st.integers(-3, 3) | st.floats(-1, 1),
        "maxLength": st.integers(0, 5),
    },
)
valid_flat_schema = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(names, valid_flat_property, max_size=3)},
    optional={
        "required": st.lists(names, max_size=3, unique=True),
        "additionalProperties": st.booleans(),
        "title": names,
        "description": names,
    },
)
# One fault at a time: values the quick path must refuse, or leave to the full check.
PROPERTY_FAULTS = {
    "type": ["array", "object", "any", ["array"], ["string", "string"], [], ["null", "object"], 3],
    "title": [3, None, SURROGATE],
    "description": [SURROGATE, "a" + SURROGATE, False],
    "enum": [[NAN], [INF], [SURROGATE], [[1]], [{"a": 1}], "a", None],
    "format": [None, 3, SURROGATE],
    "minimum": [True, NAN, -INF, "1"],
    "maxLength": [-1, True, 1.5, "2", 1.0],
    "items": [{}],
    "pattern": ["((", "a"],
    "x-vendor": [1],
}
ROOT_FAULTS = {
    "type": ["array", ["object"], None],
    "required": [["a", "a"], [1], "a", [SURROGATE]],
    "additionalProperties": [{}, "no", None],
    "title": [3, SURROGATE],
    "description": [None, SURROGATE],
    "$id": ["a b"],
    "properties": [[], {"x": []}, {SURROGATE: {}}, {"x": True}],
}
faults = st.one_of(
    st.none(),
    st.tuples(st.just("root"), st.sampled_from([(k, v) for k, vs in ROOT_FAULTS.items() for v in vs])),
    st.tuples(
        st.just("property"), st.sampled_from([(k, v) for k, vs in PROPERTY_FAULTS.items() for v in vs])
    ),
)


@settings(max_examples=500, deadline=None)
@given(schema=valid_flat_schema, fault=faults)
def test_the_quick_path_says_valid_only_when_the_full_check_does(
    schema: dict[str, Any], fault: tuple[str, tuple[str, Any]] | None
) -> None:
    if fault is None:
        # Plain flat schemas take the quick path (that is what keeps publishing cheap), rightly.
        assert rules._plainly_valid(schema)
        assert rules._full_check(schema) == ()
        return
    where, (key, value) = fault
    if where == "root":
        schema[key] = value
    else:
        target = next(iter(schema["properties"].values()), None)
        if target is None:
            target = schema["properties"]["p"] = {}
        target[key] = value
    if rules._plainly_valid(schema):
        assert rules._full_check(schema) == ()


# -- the checker's own rules, one case each -------------------------------------------------------


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        pytest.param(
            {"type": "object", "properties": {"xs": {"type": "array"}}},
            "array schema needs items",
            id="items",
        ),
        pytest.param(
            {"type": "object", "properties": {"xs": {"anyOf": [{"type": ["array", "null"]}]}}},
            "#/properties/xs/anyOf/0: an array schema needs items",
            id="items-in-type-list",
        ),
        pytest.param({"type": "array", "items": {}}, 'root must have "type": "object"', id="root-type"),
        pytest.param({"type": "object"}, "root object must have properties", id="root-properties"),
        pytest.param(
            {"type": "object", "properties": {"p": {"type": "array", "items": [{}]}}},
            "is not of type 'object', 'boolean'",
            id="tuple-items",
        ),
        pytest.param(
            {"type": "object", "properties": {"p": {"type": "string", "required": True}}},
            "True is not of type 'array'",
            id="draft-03-required",
        ),
        pytest.param(
            {"type": "object", "properties": {}, "$id": "Parameters Schema"},
            "is not a 'uri-reference'",
            id="id",
        ),
        pytest.param(
            {"type": "object", "properties": {"p": {"type": "string", "pattern": "(("}}},
            "is not a 'regex'",
            id="regex",
        ),
        pytest.param(
            {"type": "object", "properties": {"p": {"enum": [math.nan]}}}, "not plain JSON", id="nan"
        ),
        pytest.param({"type": "object", "properties": {"\ud800": {}}}, "not plain JSON", id="surrogate"),
        pytest.param(
            {"type": "object", "properties": {"p": {"anyOf": []}}}, "should be non-empty", id="anyOf"
        ),
        pytest.param([], "must be a JSON object schema", id="not-a-dict"),
        pytest.param(
            {"type": "object", "properties": {"p": {"type": "any"}}}, "is not valid under any", id="type"
        ),
    ],
)
def test_check_parameters_names_each_refusal(parameters: Any, expected: str) -> None:
    problems = check_parameters(parameters)
    assert any(expected in p for p in problems), problems


def test_a_failure_inside_the_checker_is_never_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: str) -> tuple[str, ...]:
        raise RuntimeError("boom")

    monkeypatch.setattr(rules, "_check_text", broken)
    problems = check_parameters({"type": "object", "properties": {"a": {"type": "array", "items": {}}}})
    assert problems and "could not be checked (RuntimeError: boom)" in problems[0]


def test_a_strict_form_that_breaks_a_rule_goes_out_non_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    # A strict conversion that slipped (an array without items): the check catches it before sending.
    slipped = {
        "type": "object",
        "properties": {"xs": {"type": "array"}},
        "required": ["xs"],
        "additionalProperties": False,
    }
    # the catalogue imports the strict converter when a strict tool is first published
    monkeypatch.setattr(strict_module, "make_strict", lambda _: StrictOutcome(slipped))
    listed = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "string"}}}}
    catalogue = Catalogue(strict=True)
    catalogue.set_peer("p", [mt.Tool(name="t", input_schema=listed)])
    (tool,) = catalogue.tools_of("p")
    assert not tool.strict
    assert tool.parameters == listed
    assert catalogue.view("chat")[0]["function"]["parameters"] == listed
    reasons = catalogue.strict_report()["p__t"]
    assert "#/properties/xs: an array needs one items schema" in reasons
    assert "#/properties/xs: an array schema needs items" in reasons


def test_a_tool_whose_both_forms_break_a_rule_is_withheld(caplog: pytest.LogCaptureFixture) -> None:
    # The strict converter keeps a pattern; the API checks it as a regex in any mode.
    tool = mt.Tool(
        name="t",
        input_schema={"type": "object", "properties": {"p": {"type": "string", "pattern": "(?<"}}},
    )
    catalogue = Catalogue(strict=True)
    with caplog.at_level(logging.DEBUG, logger="mcpx_router"):
        catalogue.set_peer("p", [tool])
    assert catalogue.tools_of("p") == ()
    assert "is not a 'regex'" in catalogue.rejected("p")["t"]
    # It is withheld, not "offered without strict mode".
    assert [r.getMessage() for r in caplog.records] == [catalogue.rejected("p")["t"]]


# -- the repairs, through a real MCP server ------------------------------------------------------

REPAIRED_TOOLS = [
    mt.Tool(
        name="read_files",  # the common real-world case: an array parameter without items
        input_schema={"type": "object", "properties": {"paths": {"type": "array"}}, "required": ["paths"]},
    ),
    mt.Tool(
        name="pair",  # draft-07 tuple: exactly a string then an integer
        input_schema={
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "xy": {
                    "type": "array",
                    "items": [{"type": "string"}, {"type": "integer", "default": 0}],
                    "additionalItems": False,
                }
            },
        },
    ),
    mt.Tool(
        name="old_bound",  # draft-04: minimum 0, exclusive
        input_schema={
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
        },
    ),
    mt.Tool(
        name="draft3",  # `required: true` on a property: no 2020-12 form says the same
        input_schema={"type": "object", "properties": {"q": {"type": "string", "required": True}}},
    ),
]


def _repaired_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=REPAIRED_TOOLS)

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(text=json.dumps(params.arguments))])

    return Server("repairs", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.anyio
async def test_repaired_tools_are_offered_and_the_rest_withheld_with_a_reason() -> None:
    async with mcp.Client(_repaired_server()) as client, OpenAIPeerToolAdapter() as adapter:
        assert await adapter.add_peer("files", client) == (
            "files__read_files",
            "files__pair",
            "files__old_bound",
        )
        sent = {t["function"]["name"]: t["function"]["parameters"] for t in adapter.get_openai_tools()}
        assert sent["files__read_files"]["properties"]["paths"] == {"type": "array", "items": {}}
        assert sent["files__pair"]["properties"]["xy"] == {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer", "description": "Default: 0."}],
            "items": False,
        }
        assert "$schema" not in sent["files__pair"]
        assert sent["files__old_bound"]["properties"]["n"] == {"type": "number", "exclusiveMinimum": 0}
        for parameters in sent.values():
            assert check_parameters(parameters) == ()
        rejected = adapter.rejected_tools("files")
        assert list(rejected) == ["draft3"]
        assert "True is not of type 'array'" in rejected["draft3"]
        assert "#/properties/q/required" in rejected["draft3"]

        # Arguments are still checked against the peer's own schema, in the peer's draft.
        good, long, zero, ok = await adapter.dispatch(
            [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "files__pair", "arguments": '{"xy": ["a", 1]}'},
                },
                {
                    "id": "2",
                    "type": "function",
                    "function": {"name": "files__pair", "arguments": '{"xy": ["a", 1, 2]}'},
                },
                {
                    "id": "3",
                    "type": "function",
                    "function": {"name": "files__old_bound", "arguments": '{"n": 0}'},
                },
                {
                    "id": "4",
                    "type": "function",
                    "function": {"name": "files__read_files", "arguments": '{"paths": [1]}'},
                },
            ]
        )
        assert json.loads(good["content"]) == {"xy": ["a", 1]}
        assert long["content"].startswith("Error:") and "xy" in long["content"]
        assert zero["content"].startswith("Error:") and "0" in zero["content"]
        assert json.loads(ok["content"]) == {"paths": [1]}


def test_a_repaired_tool_is_validated_against_the_peer_schema() -> None:
    catalogue = Catalogue()
    catalogue.set_peer("p", REPAIRED_TOOLS[:3])
    for tool, listed in zip(catalogue.tools_of("p"), REPAIRED_TOOLS[:3], strict=True):
        assert tool.input_schema is listed.input_schema
        assert tool.parameters != listed.input_schema


def test_an_unrepaired_tool_is_validated_against_its_conversion() -> None:
    listed = mt.Tool(
        name="t", input_schema={"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    )
    catalogue = Catalogue()
    catalogue.set_peer("p", [listed])
    (tool,) = catalogue.tools_of("p")
    assert tool.input_schema is tool.parameters


def test_docstring_examples() -> None:
    for module in (rules, schema_module):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0
