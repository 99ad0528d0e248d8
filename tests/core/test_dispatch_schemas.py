"""End to end: whatever a peer declares as a tool's input schema and whatever the model sends,
`dispatch` answers every call exactly once, never raises, and only arguments that jsonschema
accepts under the peer's own schema ever reach the peer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as mt
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcpx_router import OpenAIPeerToolAdapter

from ..model.arguments.test_validation_properties import (
    ANY_VALUES,
    RAW_ARGUMENTS,
    reference_errors,
    root_schemas,
)
from ..support._model_peers import RecordingPeer, connected, text_result

NOT_CALLED = "Error: p__t was not called. "
QUIET = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def accepted(schema: Any, args: Any) -> bool:
    """Whether jsonschema, for the schema's declared draft, decides that `args` are valid."""
    return reference_errors(schema, args) == []


class ListingSession:
    """A `ToolSession` that lists one tool built without validation: any input schema, cycles too."""

    def __init__(self, schema: Any) -> None:
        self.tool = mt.Tool.model_construct(name="t", description="The t tool.", input_schema=schema)
        self.calls: list[dict[str, Any]] = []

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        return mt.ListToolsResult.model_construct(tools=[self.tool], next_cursor=None)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        self.calls.append(dict(arguments or {}))
        return text_result(json.dumps(arguments, allow_nan=False))


def chat_calls(raws: list[Any]) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i}", "type": "function", "function": {"name": "p__t", "arguments": raw}}
        for i, raw in enumerate(raws)
    ]


async def dispatch_all(adapter: OpenAIPeerToolAdapter, raws: list[Any]) -> list[dict[str, Any]]:
    answers = await adapter.dispatch(chat_calls(raws))
    assert [a["tool_call_id"] for a in answers] == [f"c{i}" for i in range(len(raws))]
    assert all(a["role"] == "tool" and isinstance(a["content"], str) for a in answers)
    return answers


def check_what_reached_the_peer(schema: Any, answers: list[dict[str, Any]], received: list[Any]) -> None:
    sent = [a for a in answers if not a["content"].startswith("Error:")]
    event(f"calls that reached the peer: {min(len(sent), 1)}+")
    event(f"refused as uncheckable: {any('could not be checked' in a['content'] for a in answers)}")
    assert len(received) == len(sent)  # every call the peer got was answered with its result
    for args in received:
        json.dumps(args, allow_nan=False)  # JSON only: no inf, NaN, sets, ...
        assert accepted(schema, args), (schema, args)


# `mt.Tool` holds a JSON object as `inputSchema`; anything may be inside it.
OBJECTS = st.dictionaries(st.sampled_from(["type", "properties", "required", "anyOf", "$ref"]), ANY_VALUES)
CALLS = st.lists(RAW_ARGUMENTS, min_size=1, max_size=3)
MODES = st.sampled_from([(False, False), (False, True), (None, False), (None, True)])


@st.composite
def wire_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Input schemas an MCP server can send: an object root (`type: object`), anything below it."""
    body = draw(root_schemas() | ANY_VALUES)
    schema = {k: v for k, v in body.items() if k not in ("type", "$schema")} if isinstance(body, dict) else {}
    if isinstance(body, dict) and isinstance(body.get("$schema"), str):
        schema["$schema"] = body["$schema"]
    return {"type": "object", **schema}


@settings(max_examples=300, deadline=None, suppress_health_check=QUIET)
@given(schema=wire_schemas(), mode=MODES, raws=CALLS)
def test_a_real_peer_with_any_schema_gets_only_arguments_its_schema_accepts(
    anyio_backend: str, schema: dict[str, Any], mode: tuple[bool | None, bool], raws: list[Any]
) -> None:
    strict, json_strings = mode

    async def scenario() -> None:
        peer = RecordingPeer("p").tool("t", schema)
        async with (
            connected(p=peer) as clients,
            OpenAIPeerToolAdapter(strict=strict, json_string_params=json_strings) as adapter,
        ):
            await adapter.add_peer("p", clients["p"])
            if not adapter.tools:  # rejected at publication, with a reason: every call says so
                assert list(adapter.rejected_tools("p")) == ["t"]
            answers = await dispatch_all(adapter, raws)
            # The schema as it came over the wire (a serialisation may drop a `null` keyword, ...).
            received = (await clients["p"].list_tools()).tools[0].input_schema
            check_what_reached_the_peer(received, answers, [args for _, args in peer.calls])

    anyio.run(scenario, backend=anyio_backend)


@settings(max_examples=300, deadline=None, suppress_health_check=QUIET)
@given(schema=OBJECTS | root_schemas().filter(lambda s: isinstance(s, dict)), mode=MODES, raws=CALLS)
def test_a_session_with_any_object_as_its_schema_never_breaks_dispatch(
    anyio_backend: str, schema: Any, mode: tuple[bool | None, bool], raws: list[Any]
) -> None:
    strict, json_strings = mode
    session = ListingSession(schema)

    async def scenario() -> None:
        async with OpenAIPeerToolAdapter(strict=strict, json_string_params=json_strings) as adapter:
            await adapter.add_peer("p", session)
            answers = await dispatch_all(adapter, raws)
            check_what_reached_the_peer(schema, answers, session.calls)
            outcome = await adapter.call("p__t", {"a": float("inf")})
            assert outcome.is_error

    anyio.run(scenario, backend=anyio_backend)


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema["properties"]["self"] = schema
    schema["anyOf"] = [schema, {"$ref": "#/anyOf/0"}]
    return schema


def _deep(depth: int) -> tuple[dict[str, Any], Any, Any]:
    leaf: dict[str, Any] = {"type": "integer"}
    good: Any = 1
    bad: Any = "x"
    for _ in range(depth):
        leaf = {"type": "object", "properties": {"a": leaf}, "required": ["a"]}
        good, bad = {"a": good}, {"a": bad}
    return {"type": "object", "properties": {"v": leaf}, "required": ["v"]}, {"v": good}, {"v": bad}


@pytest.mark.anyio
@pytest.mark.parametrize(("depth", "server"), [(70, True), (90, True), (300, False)])
@pytest.mark.parametrize("strict", [False, None])
async def test_schemas_deeper_than_the_conversion_are_still_checked(
    depth: int, server: bool, strict: bool | None
) -> None:
    # The model sees a conversion cut to `{}` below 64 levels; the peer's own schema is what is checked.
    # (An MCP server cannot serialise a schema 300 levels deep: a session lists that one.)
    schema, good, bad = _deep(depth)
    peer = RecordingPeer("p").tool("t", schema)
    session = ListingSession(schema)
    async with connected(p=peer) as clients, OpenAIPeerToolAdapter(strict=strict) as adapter:
        await adapter.add_peer("p", clients["p"] if server else session)
        answers = await dispatch_all(adapter, [json.dumps(bad), json.dumps(good)])
    wrong = "- at $.v" + ".a" * depth + ": 'x' is not of type 'integer'"
    assert answers[0]["content"].startswith(NOT_CALLED + "The arguments do not match the tool's schema:\n")
    assert wrong in answers[0]["content"]
    assert answers[1]["content"] == json.dumps(good, sort_keys=True)
    assert [args for _, args in peer.calls] + session.calls == [good]


@pytest.mark.anyio
async def test_a_schema_that_cannot_be_checked_refuses_the_call_and_says_why() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"anyOf": [False, {"type": "integer"}]}},
    }
    session = ListingSession(schema)
    async with OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", session)
        answers = await dispatch_all(adapter, ['{"a": 1}', '{"b": "x"}', '{"b": 2}', '{"n": 1e999}'])
    assert [a["content"] for a in answers] == [
        NOT_CALLED + "The peer's schema for this tool could not be checked against these arguments: "
        "the $ref '/$defs/missing' does not resolve (only the schema's own parts are followed). "
        "The call was not sent; this tool cannot be used this way until its peer fixes the schema.",
        NOT_CALLED + "The arguments do not match the tool's schema:\n"
        "- at $.b: 'x' is not valid under any of the given schemas\n"
        "Fix these problems and call the tool again.",
        '{"b": 2}',
        NOT_CALLED + "The arguments cannot be sent: the number 1e999 is out of range "
        "(a double holds at most about 1.8e308).\n"
        "Send the arguments as one JSON object whose keys are the tool's parameter names.",
    ]
    assert session.calls == [{"b": 2}]


@pytest.mark.anyio
@pytest.mark.parametrize("json_strings", [False, True])
@pytest.mark.parametrize("strict", [False, None])
async def test_a_schema_that_contains_itself_never_breaks_dispatch(
    strict: bool | None, json_strings: bool
) -> None:
    session = ListingSession(_cyclic())
    async with OpenAIPeerToolAdapter(strict=strict, json_string_params=json_strings) as adapter:
        await adapter.add_peer("p", session)
        answers = await dispatch_all(adapter, ['{"a": 1}', '{"a": null}', '{"self": {"a": "x"}}', "[]"])
    assert all(a["content"].startswith("Error:") for a in answers)
    assert session.calls == []
