"""Numbers and booleans written as strings (`{"note_id": "2"}`): read as what they spell where the
schema leaves them one meaning, never where it could take the string. Property tests over schemas
and values, and end to end through the real `openai` SDK to a real MCP peer."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.model.arguments._repair import repair_arguments
from mcpx_router.model.arguments._validation import prepare_arguments

from ...support._model_peers import RecordingPeer, connected
from ...support._openai_replay import one_turn

SCALAR_TYPES = ["integer", "number", "boolean", "string", "null"]
STRINGS = (
    st.from_regex(r"-?[0-9]{1,12}", fullmatch=True)
    | st.from_regex(r"-?[0-9]{1,6}\.[0-9]{1,6}([eE][-+]?[0-9]{1,2})?", fullmatch=True)
    | st.sampled_from(["true", "false", "True", "FALSE", "yes", "1", "0", " 2", "+2", "2 ", "", "0x1f"])
    | st.sampled_from(["1e999", "NaN", "Infinity", "٣", "2_000"])
    | st.text(max_size=8)
)


def expected_leaf(value: str, types: set[str], takes_string: bool) -> Any:
    """The oracle: what a string becomes under a leaf of these types (pydantic's lax reading)."""
    if takes_string or "string" in types:
        return value
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if types & {"integer", "number"} and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    if "number" in types and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", value):
        number = float(value)
        return number if number not in (float("inf"), float("-inf")) else value
    return value


@st.composite
def leaves(draw: st.DrawFn) -> tuple[dict[str, Any], set[str], bool, str]:
    """A leaf schema of scalar types, in one of the shapes peers write them, and a string value;
    with whether the schema takes that string as it is."""
    types = set(draw(st.lists(st.sampled_from(SCALAR_TYPES), min_size=1, max_size=3, unique=True)))
    value = draw(STRINGS)
    shape = draw(st.sampled_from(["type", "list", "anyOf", "oneOf", "ref", "enum-branch", "untyped-branch"]))
    ordered = sorted(types)
    takes = False
    schema: dict[str, Any]
    if shape == "type":
        schema = {"type": ordered[0]} if len(ordered) == 1 else {"type": ordered}
    elif shape == "list":
        schema = {"type": ordered}
    elif shape in ("anyOf", "oneOf"):
        schema = {shape: [{"type": t} for t in ordered]}
    elif shape == "ref":
        schema = {"$ref": "#/$defs/leaf"}
    elif shape == "enum-branch":  # an enum that holds the string itself
        schema, takes = {"anyOf": [{"type": t} for t in ordered] + [{"enum": [value, 7]}]}, True
    else:  # a branch with no type takes any string
        schema, takes = {"anyOf": [*({"type": t} for t in ordered), {"description": "anything"}]}, True
    return schema, types, takes, value


def wrap(leaf: dict[str, Any], value: Any, path: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The leaf at `path` (object properties "o", array items "a", an optional model "m") under a
    root object; the arguments holding `value` there."""
    schema, args = leaf, value
    for step in reversed(path):
        if step == "a":
            schema, args = {"type": "array", "items": schema}, [args]
        elif step == "m":
            inner = {"type": "object", "properties": {"v": schema}}
            schema, args = {"anyOf": [inner, {"type": "null"}]}, {"v": args}
        else:
            schema, args = {"type": "object", "properties": {"v": schema}}, {"v": args}
    root = {"type": "object", "properties": {"x": schema}, "$defs": {"leaf": leaf}}
    return root, {"x": args}


def dig(args: Any, path: list[str]) -> Any:
    value = args["x"]
    for step in path:
        value = value[0] if step == "a" else value["v"]
    return value


PATHS = st.lists(st.sampled_from(["o", "a", "m"]), max_size=3)


@settings(max_examples=400, deadline=None)
@given(leaves(), PATHS)
def test_a_string_becomes_what_it_spells_only_where_the_schema_leaves_one_meaning(
    leaf: tuple[dict[str, Any], set[str], bool, str], path: list[str]
) -> None:
    schema, types, takes, value = leaf
    if schema.get("$ref"):
        schema_for_leaf = {"type": sorted(types)}
        root, args = wrap(schema, value, path)
        root["$defs"]["leaf"] = schema_for_leaf
    else:
        root, args = wrap(schema, value, path)
    before = copy.deepcopy(args)
    repaired = repair_arguments(args, root)
    assert args == before  # the caller's arguments are never changed
    got, want = dig(repaired, path), expected_leaf(value, types, takes)
    assert got == want and type(got) is type(want)
    overlapping = "oneOf" in schema and {"integer", "number"} <= types  # 2 is both: no oneOf takes it
    if got is not value and not overlapping:  # what it became is what the schema asked for
        assert Draft202012Validator(root).is_valid(repaired)


@st.composite
def any_leaf(draw: st.DrawFn) -> dict[str, Any]:
    """Leaf schemas of any shape, strings allowed or not in ways that are easy to miss."""
    simple = st.sampled_from(
        [
            {"type": "integer"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "string"},
            {"type": ["integer", "string"]},
            {"type": ["boolean", "null"]},
            {},
            {"enum": ["1", "true", 2]},
            {"enum": [1, 2, True]},
            {"const": "2"},
            {"const": 2},
            {"not": {"type": "integer"}},
            {"minimum": 3},
            {"pattern": "^[0-9]+$"},
        ]
    )
    combined = st.recursive(
        simple,
        lambda inner: st.builds(
            lambda k, bs: {k: bs},
            st.sampled_from(["anyOf", "oneOf", "allOf"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        max_leaves=5,
    )
    return draw(combined)


@settings(max_examples=400, deadline=None)
@given(any_leaf(), STRINGS, PATHS)
def test_a_string_the_schema_takes_is_never_changed(
    leaf: dict[str, Any], value: str, path: list[str]
) -> None:
    root, args = wrap(leaf, value, path)
    leaf_takes_it = Draft202012Validator(leaf).is_valid(value)
    repaired = repair_arguments(args, root)
    if leaf_takes_it:
        assert dig(repaired, path) is value
    got = dig(repaired, path)
    assert got is value or isinstance(got, bool | int | float)


def test_what_prepare_sends_is_valid_and_unlike_strings_stay_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"note_id": {"type": "integer"}, "pinned": {"type": "boolean"}},
        "required": ["note_id"],
    }
    assert prepare_arguments('{"note_id": "2", "pinned": "false"}', schema) == {"note_id": 2, "pinned": False}
    with pytest.raises(ValueError, match=r"at \$.note_id: 'two' is not of type 'integer'"):
        prepare_arguments('{"note_id": "two"}', schema)


NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note_id": {"type": "integer"},
        "weight": {"type": "number"},
        "pinned": {"type": "boolean"},
        "label": {"type": ["string", "integer"]},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"rank": {"type": "integer"}}}},
    },
    "required": ["note_id"],
}


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_numbers_written_as_strings_reach_the_peer_as_numbers(api: str) -> None:
    peer = RecordingPeer("notes").tool("update_note", NOTE_SCHEMA)
    sent = {"note_id": "2", "weight": "0.5", "pinned": "TRUE", "label": "7", "tags": [{"rank": "3"}]}
    calls = [
        ("c1", "notes__update_note", json.dumps(sent)),
        ("c2", "notes__update_note", '{"note_id": "2.5"}'),
    ]
    async with connected(notes=peer) as c, OpenAIPeerToolAdapter(call_timeout=10) as adapter:
        await adapter.add_peer("notes", c["notes"])
        _, bodies = await one_turn(api, adapter, calls, prompt="update note 2")
    assert peer.calls == [
        ("update_note", {"note_id": 2, "weight": 0.5, "pinned": True, "label": "7", "tags": [{"rank": 3}]})
    ]
    items = bodies[1].get("messages", bodies[1].get("input"))
    answers = {
        i.get("tool_call_id", i.get("call_id")): i.get("content", i.get("output"))
        for i in items
        if i.get("role") == "tool" or i.get("type") == "function_call_output"
    }
    assert answers["c2"] == (
        "Error: notes__update_note was not called. The arguments do not match the tool's schema:\n"
        "- at $.note_id: '2.5' is not of type 'integer'\nFix these problems and call the tool again."
    )
    assert json.loads(answers["c1"])["note_id"] == 2
