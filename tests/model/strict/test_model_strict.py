"""Strict mode as the model meets it: the tools sent, the per-tool fallback and its report, and the
calls a strict model makes (nulls everywhere) reaching real peers without those nulls.

Every tool sent with `strict: true` is checked against `check_strict`, the documented rules.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter, is_legal_name
from mcpx_router.loop import run_chat
from mcpx_router.model._outbound_rules import check_parameters
from mcpx_router.model.strict._strict import check_strict

from ...support import _servers
from ...support._model_peers import RecordingPeer, connected
from ...support._openai_replay import CHAT, chat_completion, replay_openai, tool_call

pytestmark = pytest.mark.anyio

SAFETY = 30.0

NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["name"],
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "plain": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}},
    "tree": {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": NODE}},
    "outline": {  # recursion through the root itself
        "type": "object",
        "properties": {"title": {"type": "string"}, "sections": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["title"],
    },
    "labels": {
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    },
    "anything": {"type": "object", "properties": {"value": {}}, "required": ["value"]},
    "pair": {
        "type": "object",
        "properties": {"xy": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]}},
    },
    "either": {
        "type": "object",
        "anyOf": [
            {"properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"properties": {"slug": {"type": "string"}}, "required": ["slug"]},
        ],
    },
}
REASONS = {
    "p__labels": (
        "#/properties/labels: is a map whose keys are not known in advance "
        "(additionalProperties is a schema)",
    ),
    "p__anything": ("#/properties/value: accepts any value; strict mode needs a declared type",),
    "p__pair": ("#/properties/xy: uses tuple-style prefixItems, which strict mode cannot express",),
    "p__either": ("#: the root is a union (anyOf/oneOf); strict mode needs a plain object there",),
}


def schema_peer() -> RecordingPeer:
    peer = RecordingPeer("p")
    for name, schema in SCHEMAS.items():
        peer.tool(name, schema)
    return peer


def strict_flags(tools: Any, shape: str) -> dict[str, Any]:
    if shape == "chat":
        return {t["function"]["name"]: t["function"].get("strict") for t in tools}
    return {t["name"]: t["strict"] for t in tools}


def assert_within_the_rules(tools: Any, shape: str) -> None:
    """Every tool keeps the rules for any tool, and one sent with strict: true the strict rules."""
    for tool in tools:
        function = tool["function"] if shape == "chat" else tool
        assert is_legal_name(function["name"])
        assert check_parameters(function["parameters"]) == (), function["name"]
        if function.get("strict"):
            assert check_strict(function["parameters"]) == [], function["name"]


@pytest.mark.parametrize("strict", [None, True])
async def test_each_tool_is_strict_where_it_can_be_and_the_report_says_why_not(
    strict: bool | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpx_router")
    async with connected(p=schema_peer()) as c, OpenAIPeerToolAdapter(strict=strict) as adapter:
        await adapter.add_peer("p", c["p"])
        chat, responses = adapter.get_openai_tools(), adapter.get_responses_tools()
        functions = adapter.get_openai_functions()
        report = adapter.strict_report()
    fallen = set(REASONS)
    expected = {f"p__{name}": f"p__{name}" not in fallen for name in SCHEMAS}
    assert {k: bool(v) for k, v in strict_flags(chat, "chat").items()} == expected
    assert strict_flags(responses, "responses") == expected  # Responses always says, true or false
    assert {f["name"]: bool(f.get("strict")) for f in functions} == expected
    assert_within_the_rules(chat, "chat")
    assert_within_the_rules(responses, "responses")
    assert report == REASONS
    warned = {r.getMessage() for r in caplog.records if r.levelno == logging.WARNING}
    said = {f"{name} is offered without strict mode: {reasons[0]}" for name, reasons in REASONS.items()}
    # strict=True asked for strict mode everywhere, so each fallback is a warning; None only notes it.
    assert warned == (said if strict else set())
    # The fallbacks are offered as the peer wrote them (no nulls added, objects left open).
    labels = next(t["function"]["parameters"] for t in chat if t["function"]["name"] == "p__labels")
    assert labels["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert "required" not in labels


async def test_strict_false_never_sends_strict_tools() -> None:
    async with connected(p=schema_peer()) as c, OpenAIPeerToolAdapter(strict=False) as adapter:
        await adapter.add_peer("p", c["p"])
        assert not any(t["function"].get("strict") for t in adapter.get_openai_tools())
        assert not any(t["strict"] for t in adapter.get_responses_tools())
        assert adapter.strict_report() == {}
        plain = adapter.get_openai_tools()[0]["function"]["parameters"]
    assert plain == {"type": "object", "properties": {"n": {"type": "integer", "description": "Default: 1."}}}


async def test_a_strict_models_calls_reach_the_peer_without_the_nulls_it_had_to_send() -> None:
    peer = schema_peer()
    tree = {
        "root": {
            "name": "a",
            "children": [
                {"name": "b", "children": None},
                {"name": "c", "children": [{"name": "d", "children": None}]},
            ],
        }
    }
    outline = {"title": "T", "sections": [{"title": "S1", "sections": None}]}
    calls = [
        tool_call("c1", "p__plain", '{"n": null}'),
        tool_call("c2", "p__tree", json.dumps(tree)),
        tool_call("c3", "p__outline", json.dumps(outline)),
        tool_call("c4", "p__labels", '{"labels": {"env": "prod"}}'),  # a fallback tool: sent as is
        tool_call("c5", "p__either", '{"slug": "x"}'),
    ]
    script = [chat_completion({"content": None, "tool_calls": calls}), chat_completion({"content": "ok"})]
    with replay_openai(script) as replay:
        async with (
            connected(p=peer) as c,
            OpenAIPeerToolAdapter(strict=None) as adapter,
            AsyncOpenAI(base_url=replay.base_url, api_key="x", max_retries=0) as client,
        ):
            await adapter.add_peer("p", c["p"])
            with anyio.fail_after(SAFETY):
                await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": "x"}])
    first, second = replay.bodies(CHAT)
    assert_within_the_rules(first["tools"], "chat")
    answers = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert not any(a.startswith("Error:") for a in answers), answers
    received = sorted(json.dumps(call, sort_keys=True) for call in peer.calls)
    assert received == sorted(
        json.dumps(call, sort_keys=True)
        for call in [
            ("plain", {}),
            (
                "tree",
                {
                    "root": {
                        "name": "a",
                        "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d"}]}],
                    }
                },
            ),
            ("outline", {"title": "T", "sections": [{"title": "S1"}]}),
            ("labels", {"labels": {"env": "prod"}}),
            ("either", {"slug": "x"}),
        ]
    )


# -- real third-party servers ----------------------------------------------------------------------


@pytest.fixture
def web_page() -> Iterator[str]:
    with _servers.local_web_page("A page the fetch server reads.") as url:
        yield url


@pytest.fixture(scope="module")
def installed() -> None:
    _servers.install_all()


@pytest.mark.thirdparty
@pytest.mark.timeout(600, func_only=True)
async def test_real_servers_in_strict_mode(installed: None, web_page: str, tmp_path: Path) -> None:
    """time, fetch, git (PyPI) and server-everything (npm): every tool strict, within the rules, callable."""
    repo = _servers.init_git_repo(tmp_path / "repo", message="Strict commit")
    peers = {
        "time": _servers.time_server_params(),
        "fetch": _servers.fetch_server_params(),
        "git": _servers.git_server_params(repo),
        "everything": _servers.everything_stdio_params(),
    }
    # What a strict model sends: every property, null where it means "not given".
    calls = [
        tool_call(
            "c_time",
            "time__convert_time",
            '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}',
        ),
        tool_call(
            "c_fetch",
            "fetch__fetch",
            json.dumps({"url": web_page, "max_length": None, "start_index": None, "raw": None}),
        ),
        tool_call(
            "c_git",
            "git__git_log",
            json.dumps(
                {"repo_path": str(repo), "max_count": None, "start_timestamp": None, "end_timestamp": None}
            ),
        ),
        tool_call("c_sum", "everything__get-sum", '{"a": 2, "b": 3}'),
        tool_call(
            "c_ref", "everything__get-resource-reference", '{"resourceType": null, "resourceId": null}'
        ),
    ]
    script = [chat_completion({"content": None, "tool_calls": calls}), chat_completion({"content": "ok"})]
    with replay_openai(script) as replay:
        async with AsyncExitStack() as stack:
            adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(strict=None, call_timeout=SAFETY))
            for peer_id, params in peers.items():
                await adapter.add_peer(peer_id, await stack.enter_async_context(Client(params)))
            responses_tools = adapter.get_responses_tools()
            report = adapter.strict_report()
            client = await stack.enter_async_context(
                AsyncOpenAI(base_url=replay.base_url, api_key="x", max_retries=0)
            )
            with anyio.fail_after(SAFETY * 2):
                await run_chat(client, adapter, model="m", messages=[{"role": "user", "content": "x"}])
    first, second = replay.bodies(CHAT)
    flags = strict_flags(first["tools"], "chat")
    assert {
        "time__convert_time",
        "fetch__fetch",
        "git__git_log",
        "git__git_add",
        "everything__get-sum",
    } <= flags.keys()
    assert len(flags) >= 2 + 1 + 12 + 12
    assert all(flags.values()), [name for name, strict in flags.items() if not strict]
    assert report == {}
    assert_within_the_rules(first["tools"], "chat")
    assert_within_the_rules(responses_tools, "responses")
    assert all(t["strict"] is True for t in responses_tools)
    fetch = next(
        t["function"]["parameters"] for t in first["tools"] if t["function"]["name"] == "fetch__fetch"
    )
    assert fetch["required"] == ["url", "max_length", "start_index", "raw"]
    assert fetch["properties"]["max_length"]["type"] == ["integer", "null"]
    assert "Format: uri." in fetch["properties"]["url"]["description"]  # an unsupported format, kept as words
    answers = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert not any(a.startswith("Error:") for a in answers.values()), answers
    assert "T21:00:00+09:00" in answers["c_time"]
    assert "A page the fetch server reads." in answers["c_fetch"]  # max_length etc. took their defaults
    assert "Strict commit" in answers["c_git"]
    assert answers["c_sum"] == "The sum of 2 and 3 is 5."
    assert "[resource " in answers["c_ref"] and "text/plain" in answers["c_ref"]
