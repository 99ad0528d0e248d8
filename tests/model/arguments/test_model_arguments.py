"""What becomes of the arguments a model sends, end to end through the real `openai` SDK.

A replay endpoint plays the model's tool calls; a recording peer proves which calls reached it.
The error texts asserted here are the ones docs/model.md shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.loop import LoopResult
from mcpx_router.model.strict._strict import check_strict

from ...support._model_peers import RecordingPeer, connected
from ...support._openai_replay import (
    one_turn,
)

pytestmark = pytest.mark.anyio

SAFETY = 10.0

SEARCH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "options": {
            "type": "object",
            "properties": {
                "depth": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "additionalProperties": False,
        },
        "since": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "default": None},
    },
    "required": ["query"],
}
NOTHING: dict[str, Any] = {"type": "object", "properties": {}}


def docs_peer() -> RecordingPeer:
    return RecordingPeer("docs").tool("search", SEARCH).tool("status", NOTHING)


async def converse(
    api: str, calls: list[tuple[str, str, str]], adapter: OpenAIPeerToolAdapter
) -> tuple[LoopResult, list[dict[str, Any]]]:
    """One turn of `calls` (id, name, arguments) and a final answer; returns the result and requests."""
    return await one_turn(api, adapter, calls, prompt="search the docs", safety=SAFETY)


def answers_in(body: dict[str, Any]) -> dict[str, str]:
    """Each call id's answer in a request: Chat tool messages or Responses function_call_output items."""
    found: dict[str, str] = {}
    for item in body.get("messages", body.get("input", [])):
        call_id = item.get("tool_call_id", item.get("call_id")) if isinstance(item, dict) else None
        if item.get("role") == "tool" or item.get("type") == "function_call_output":
            assert call_id not in found, f"{call_id} answered twice"
            found[call_id] = item.get("content", item.get("output"))
    return found


def received(peer: RecordingPeer) -> list[str]:
    """The calls a peer received, as comparable text in no particular order."""
    return expected(peer.calls)


def expected(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return sorted(f"{name} {json.dumps(arguments, sort_keys=True)}" for name, arguments in calls)


NOT_JSON = (
    "Error: docs__search was not called. The arguments are not valid JSON: Expecting ',' delimiter at "
    'line 1, column 28: {"query": "mcp", "limit": 5<HERE>\n'
    "Send the arguments as one JSON object whose keys are the tool's parameter names."
)
SCHEMA_PROBLEMS = (
    "Error: docs__search was not called. The arguments do not match the tool's schema:\n"
    "- at $.limit: 500 is greater than the maximum of 50\n"
    "- at $.options: Additional properties are not allowed ('extra' was unexpected)\n"
    "- at $.options.depth: 'deep' is not of type 'integer'\n"
    "- at $.query: '' should be non-empty\n"
    "Fix these problems and call the tool again."
)
NOT_AN_OBJECT = (
    "Error: docs__search was not called. The arguments must be a JSON object, but an array was "
    "received: [1, 2]\nSend the arguments as one JSON object whose keys are the tool's parameter names."
)
UNKNOWN = (
    "Error: there is no tool named 'docs__serch'. Did you mean 'docs__search'? "
    "Call only the functions offered in this conversation."
)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_mistaken_calls_are_explained_to_the_model_and_never_reach_the_peer(api: str) -> None:
    peer = docs_peer()
    calls = [
        ("c_empty", "docs__status", ""),
        ("c_json", "docs__search", '{"query": "mcp", "limit": 5'),
        ("c_string", "docs__search", '{"query": "mcp", "options": "{\\"depth\\": 2}"}'),
        ("c_schema", "docs__search", '{"query": "", "limit": 500, "options": {"depth": "deep", "extra": 1}}'),
        ("c_name", "docs__serch", '{"query": "mcp"}'),
        ("c_array", "docs__search", "[1, 2]"),
        ("c_twice", "docs__search", json.dumps(json.dumps({"query": "encoded twice"}))),
    ]
    async with connected(docs=peer) as c, OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter:
        await adapter.add_peer("docs", c["docs"])
        result, (_, second) = await converse(api, calls, adapter)
    assert (result.text, result.tool_calls) == ("done", len(calls))
    assert answers_in(second) == {
        "c_empty": "{}",
        "c_json": NOT_JSON,
        "c_string": '{"options": {"depth": 2}, "query": "mcp"}',
        "c_schema": SCHEMA_PROBLEMS,
        "c_name": UNKNOWN,
        "c_array": NOT_AN_OBJECT,
        "c_twice": '{"query": "encoded twice"}',
    }
    # Only the three usable calls reached the peer, each with the arguments it expects.
    assert received(peer) == expected(
        [
            ("status", {}),
            ("search", {"query": "mcp", "options": {"depth": 2}}),
            ("search", {"query": "encoded twice"}),
        ]
    )


async def test_strict_nulls_are_removed_before_the_peer_and_the_original_schema_still_rules() -> None:
    peer = docs_peer()
    calls = [
        ("c_nulls", "docs__search", '{"query": "x", "limit": null, "options": null, "since": null}'),
        (
            "c_nested",
            "docs__search",
            '{"query": "y", "limit": 3, "options": {"depth": null, "tags": ["a"]}, "since": "2024-01-31"}',
        ),
        # minLength is not in strict mode's subset (it moved into the description); the peer's
        # own schema still refuses an empty query.
        ("c_empty", "docs__search", '{"query": "", "limit": null, "options": null, "since": null}'),
    ]
    async with connected(docs=peer) as c, OpenAIPeerToolAdapter(strict=True, call_timeout=SAFETY) as adapter:
        await adapter.add_peer("docs", c["docs"])
        _, (first, second) = await converse("chat", calls, adapter)
    search = next(t["function"] for t in first["tools"] if t["function"]["name"] == "docs__search")
    assert search["strict"] is True and check_strict(search["parameters"]) == []
    assert search["parameters"]["properties"]["query"] == {
        "type": "string",
        "description": "Minimum length: 1.",
    }
    answers = answers_in(second)
    assert answers["c_empty"] == (
        "Error: docs__search was not called. The arguments do not match the tool's schema:\n"
        "- at $.query: '' should be non-empty\nFix these problems and call the tool again."
    )
    # Nulls strict mode made the model send are gone; `since` accepted null before, so it stays.
    assert received(peer) == expected(
        [
            ("search", {"query": "x", "since": None}),
            ("search", {"query": "y", "limit": 3, "options": {"tags": ["a"]}, "since": "2024-01-31"}),
        ]
    )


@pytest.mark.parametrize("strict", [False, True])
async def test_json_string_parameters_end_to_end(strict: bool) -> None:
    peer = docs_peer()
    calls = [
        ("c_string", "docs__search", json.dumps({"query": "a", "options": '{"depth": 2, "tags": ["x"]}'})),
        ("c_value", "docs__search", json.dumps({"query": "b", "options": {"depth": 1}})),
        ("c_broken", "docs__search", json.dumps({"query": "c", "options": '{"depth": '})),
        ("c_wrong", "docs__search", json.dumps({"query": "d", "options": "[1]"})),
    ]
    if strict:  # a strict model fills every property, null where it has nothing to say
        calls = [
            (i, n, json.dumps({"limit": None, "options": None, "since": None} | json.loads(a)))
            for i, n, a in calls
        ]
    async with (
        connected(docs=peer) as c,
        OpenAIPeerToolAdapter(json_string_params=True, strict=strict, call_timeout=SAFETY) as adapter,
    ):
        await adapter.add_peer("docs", c["docs"])
        _, (first, second) = await converse("chat", calls, adapter)
    search = next(t["function"] for t in first["tools"] if t["function"]["name"] == "docs__search")
    options = search["parameters"]["properties"]["options"]
    assert options["type"] == (["string", "null"] if strict else "string")
    assert 'JSON-encoded object, e.g. {"depth": 1, "tags": ["text"]}' in options["description"]
    if strict:
        assert check_strict(search["parameters"]) == []
    answers = answers_in(second)
    assert answers["c_broken"] == (
        "Error: docs__search was not called. Some arguments must be strings holding JSON:\n"
        '- at $.options: expected a JSON-encoded object, e.g. {"depth": 1, "tags": ["text"]}, but the '
        'string is not valid JSON: Expecting value at line 1, column 11: {"depth": <HERE>\n'
        "Fix these problems and call the tool again."
    )
    assert answers["c_wrong"].startswith("Error: docs__search was not called.")
    assert "but the string holds an array" in answers["c_wrong"]
    since = {"since": None} if strict else {}
    assert received(peer) == expected(
        [
            ("search", {"query": "a", "options": {"depth": 2, "tags": ["x"]}} | since),
            ("search", {"query": "b", "options": {"depth": 1}} | since),
        ]
    )


OUT_OF_RANGE = (
    "Error: docs__search was not called. The arguments cannot be sent: the number 1e999 is out of range "
    "(a double holds at most about 1.8e308).\n"
    "Send the arguments as one JSON object whose keys are the tool's parameter names."
)
UNCHECKABLE = (
    "Error: archive__lookup was not called. The peer's schema for this tool could not be checked against "
    "these arguments: the $ref '/definitions/Entry' does not resolve (only the schema's own parts are "
    "followed). The call was not sent; this tool cannot be used this way until its peer fixes the schema."
)
# A peer that refers to definitions it never ships. (A draft-3 `required: true` would not be
# offered at all: the API refuses it, see test_outbound.py.)
LOOKUP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entry": {"$ref": "#/definitions/Entry"},
        "id": {"type": "integer"},
    },
}


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_calls_that_cannot_be_checked_or_sent_are_refused_with_the_reason(api: str) -> None:
    docs, archive = docs_peer(), RecordingPeer("archive").tool("lookup", LOOKUP)
    calls = [
        ("c_huge", "docs__search", '{"query": "mcp", "limit": 1e999}'),
        ("c_nan", "docs__search", '{"query": "mcp", "limit": NaN}'),
        ("c_ref", "archive__lookup", '{"entry": {"title": "x"}}'),
        ("c_id", "archive__lookup", '{"id": 7}'),
        ("c_bad_id", "archive__lookup", '{"id": "seven"}'),
    ]
    async with (
        connected(docs=docs, archive=archive) as c,
        OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
    ):
        await adapter.add_peer("docs", c["docs"])
        await adapter.add_peer("archive", c["archive"])
        _, (_, second) = await converse(api, calls, adapter)
    assert answers_in(second) == {
        "c_huge": OUT_OF_RANGE,
        "c_nan": "Error: docs__search was not called. The arguments are not valid JSON: NaN is not a valid "
        "JSON value.\nSend the arguments as one JSON object whose keys are the tool's parameter names.",
        "c_ref": UNCHECKABLE,
        # The rest of that schema is still checked, as written.
        "c_id": '{"id": 7}',
        "c_bad_id": "Error: archive__lookup was not called. The arguments do not match the tool's schema:\n"
        "- at $.id: 'seven' is not of type 'integer'\nFix these problems and call the tool again.",
    }
    assert received(docs) == [] and received(archive) == expected([("lookup", {"id": 7})])
