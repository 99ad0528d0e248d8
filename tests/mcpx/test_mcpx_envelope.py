"""Envelope building (strict) and parsing (liberal): table tests, no I/O."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from mcpx_router import RouterError
from mcpx_router.mcpx import (
    GATEWAY_ID,
    PROTOCOL,
    Envelope,
    EnvelopeError,
    ErrorFrame,
    ParticipantInfo,
    encode_envelope,
    envelope_to_dict,
    new_envelope,
    parse_frame,
    parse_presence,
    parse_system_error,
    parse_welcome,
)
from mcpx_router.mcpx._rpc import classify, id_key, same_id

REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_new_envelope_is_conformant() -> None:
    moment = datetime(2025, 8, 17, 14, 0, 0, 123456, tzinfo=UTC)
    env = new_envelope(sender="agent-a", kind="mcp", payload=REQUEST, to=["agent-b"], now=moment)
    wire = json.loads(encode_envelope(env))
    assert wire == {
        "protocol": "mcp-x/v0",
        "id": env.id,
        "ts": "2025-08-17T14:00:00.123Z",
        "from": "agent-a",
        "to": ["agent-b"],
        "kind": "mcp",
        "payload": REQUEST,
    }
    assert uuid.UUID(env.id).version == 4
    reply = new_envelope(
        sender="agent-b",
        kind="mcp",
        payload={"jsonrpc": "2.0", "id": 1, "result": {}},
        to=["agent-a"],
        correlation_id=env.id,
    )
    assert envelope_to_dict(reply)["correlation_id"] == env.id


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sender": "", "kind": "mcp", "payload": NOTIFICATION}, "from"),
        ({"sender": "a", "kind": "chat", "payload": NOTIFICATION}, "kind"),
        ({"sender": "a", "kind": "mcp", "payload": REQUEST}, "exactly one"),
        ({"sender": "a", "kind": "mcp", "payload": REQUEST, "to": ["b", "c"]}, "exactly one"),
        ({"sender": "a", "kind": "mcp", "payload": {"id": 1, "method": "x"}, "to": ["b"]}, "JSON-RPC"),
        ({"sender": "a", "kind": "mcp", "payload": [1], "to": ["b"]}, "JSON-RPC"),
        ({"sender": "a", "kind": "mcp", "payload": NOTIFICATION, "to": [""]}, "to"),
        ({"sender": "a", "kind": "mcp", "payload": NOTIFICATION, "correlation_id": ""}, "correlation_id"),
    ],
)
def test_new_envelope_rejects_what_the_spec_forbids(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvelopeError, match=message) as info:
        new_envelope(**kwargs)
    assert isinstance(info.value, RouterError) and isinstance(info.value, ValueError)


def test_encode_refuses_a_foreign_protocol() -> None:
    env = Envelope(id="1", sender="a", kind="mcp", payload=NOTIFICATION, protocol="mcp-x/v9")
    with pytest.raises(EnvelopeError, match="protocol"):
        encode_envelope(env)


def _frame(**fields: Any) -> str:
    base: dict[str, Any] = {
        "protocol": PROTOCOL,
        "id": "e1",
        "from": "b",
        "kind": "mcp",
        "payload": NOTIFICATION,
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (_frame(), {"to": (), "correlation_id": None}),
        (_frame(to=["a"]), {"to": ("a",)}),
        (_frame(to="a"), {"to": ("a",)}),  # a bare id instead of a list
        (_frame(to=None), {"to": ()}),
        (_frame(to=[]), {"to": ()}),
        (_frame(protocol=...), {"protocol": PROTOCOL}),  # protocol missing
        (_frame(kind="MCP"), {"kind": "mcp"}),
        (_frame(id=7), {"id": "7"}),
        (_frame(correlation_id="e0"), {"correlation_id": "e0"}),
        (_frame(correlationId="e0"), {"correlation_id": "e0"}),  # camelCase
        (_frame(ts="2025-08-17T14:00:00Z"), {"ts": "2025-08-17T14:00:00Z"}),
        (_frame(ts=12), {"ts": None}),
    ],
)
def test_parse_accepts_variants(frame: str, expected: dict[str, Any]) -> None:
    env = parse_frame(frame)
    assert isinstance(env, Envelope)
    for name, value in expected.items():
        assert getattr(env, name) == value


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not an object"),
        ('"text"', "not an object"),
        (_frame(protocol="mcp-x/v9"), "protocol"),
        (_frame(kind="chat"), "kind"),
        (_frame(kind=...), "kind"),
        (_frame(id=...), "id"),
        (_frame(**{"from": ...}), "from"),
        (_frame(payload="hello"), "payload"),
        (_frame(to=[1, 2]), "to"),
    ],
)
def test_parse_rejects_garbage(frame: str, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message):
        parse_frame(frame)


@pytest.mark.parametrize(
    ("frame", "error", "details"),
    [
        ('{"error": "unauthorized", "details": "bad token"}', "unauthorized", "bad token"),
        ('{"error": "rate limited", "message": "slow down"}', "rate limited", "slow down"),
        ('{"error": {"code": 429}}', '{"code": 429}', None),
    ],
)
def test_error_frames_that_are_not_envelopes(frame: str, error: str, details: Any) -> None:
    parsed = parse_frame(frame)
    assert isinstance(parsed, ErrorFrame)
    assert (parsed.error, parsed.details) == (error, details)


def _system(payload: Any, **fields: Any) -> Envelope:
    env = parse_frame(
        json.dumps({"protocol": PROTOCOL, "id": "w", "kind": "system", "payload": payload, **fields})
    )
    assert isinstance(env, Envelope)
    return env


@pytest.mark.parametrize(
    ("payload", "me", "others", "history_ids"),
    [
        (  # the draft's shape, history as settings
            {
                "event": "welcome",
                "participant": {"id": "me"},
                "participants": [{"id": "b", "name": "B", "kind": "agent", "mcp": {"version": "2025-06-18"}}],
                "history": {"enabled": True, "limit": 100},
            },
            "me",
            [ParticipantInfo("b", "B", "agent", "2025-06-18")],
            [],
        ),
        (  # `type` instead of `event`, `participant_id`, list includes ourselves
            {"type": "welcome", "participant_id": "me", "participants": [{"id": "me"}, {"id": "b"}]},
            "me",
            [ParticipantInfo("b")],
            [],
        ),
        (  # camelCase id, participants as bare ids, history as a list of envelopes (one broken)
            {
                "event": "welcome",
                "participantId": "me",
                "participants": ["b", "c", 5],
                "history": [
                    {"protocol": PROTOCOL, "id": "h1", "from": "b", "kind": "mcp", "payload": NOTIFICATION},
                    {"kind": "bogus"},
                ],
            },
            "me",
            [ParticipantInfo("b"), ParticipantInfo("c")],
            ["h1"],
        ),
        (  # history wrapped in an object
            {
                "event": "welcome",
                "participant": {"participant_id": "me"},
                "history": {"messages": [{"id": "h2", "from": "c", "kind": "mcp", "payload": NOTIFICATION}]},
            },
            "me",
            [],
            ["h2"],
        ),
        ({"event": "welcome"}, None, [], []),  # no id at all: the client keeps the one it asked for
    ],
)
def test_welcome_variants(
    payload: Any, me: str | None, others: list[ParticipantInfo], history_ids: list[str]
) -> None:
    welcome = parse_welcome(_system(payload))
    assert welcome is not None
    assert welcome.participant_id == me
    assert list(welcome.participants) == others
    assert [h.id for h in welcome.history] == history_ids


def test_bare_welcome_object_without_envelope() -> None:
    env = parse_frame('{"type": "welcome", "participant": {"id": "me"}, "participants": []}')
    assert isinstance(env, Envelope) and env.kind == "system" and env.sender == GATEWAY_ID
    welcome = parse_welcome(env)
    assert welcome is not None and welcome.participant_id == "me"


def test_system_frames_that_are_not_welcomes() -> None:
    assert parse_welcome(_system({"event": "error", "error": "x"})) is None
    assert parse_welcome(_system("hello")) is None
    error = parse_system_error(_system({"event": "error", "error": "from_mismatch", "message": "no"}))
    assert error is not None and (error.error, error.message) == ("from_mismatch", "no")
    assert parse_system_error(_system({"type": "error", "code": 429})) is not None
    assert parse_system_error(_system({"event": "welcome"})) is None


@pytest.mark.parametrize(
    ("payload", "event", "pid"),
    [
        ({"event": "join", "participant": {"id": "b", "name": "B"}}, "join", "b"),
        ({"type": "leave", "participant_id": "b"}, "leave", "b"),
        ({"event": "heartbeat", "participantId": "b"}, "heartbeat", "b"),
        ({"event": "join", "participant": "b"}, "join", "b"),
    ],
)
def test_presence_variants(payload: Any, event: str, pid: str) -> None:
    env = parse_frame(json.dumps({"kind": "presence", "payload": payload}))  # no id, no from: still accepted
    assert isinstance(env, Envelope) and env.sender == GATEWAY_ID
    presence = parse_presence(env)
    assert presence is not None and (presence.event, presence.participant.id) == (event, pid)


@pytest.mark.parametrize(
    "payload",
    [{"event": "wave", "participant": {"id": "b"}}, {"event": "join"}, {"event": "join", "participant": 3}],
)
def test_presence_without_usable_content(payload: Any) -> None:
    env = parse_frame(json.dumps({"kind": "presence", "payload": payload}))
    assert isinstance(env, Envelope) and parse_presence(env) is None


def test_bare_presence_object() -> None:
    env = parse_frame('{"event": "join", "participant": {"id": "b"}}')
    assert isinstance(env, Envelope) and env.kind == "presence"


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "x"}, "request"),
        ({"jsonrpc": "2.0", "id": "1", "method": "x"}, "request"),
        ({"jsonrpc": "2.0", "method": "x"}, "notification"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, "response"),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}, "response"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, None),
        ({"jsonrpc": "1.0", "id": 1, "method": "x"}, None),
        ({"id": 1, "method": "x"}, None),
    ],
)
def test_classify(payload: dict[str, Any], kind: str | None) -> None:
    assert classify(payload) == kind


def test_ids_keep_their_json_type() -> None:
    assert same_id(42, 42) and same_id("42", "42")
    assert not same_id(42, "42") and not same_id("42", 42)
    assert not same_id(1, True) and not same_id(None, None)
    assert id_key(42) != id_key("42")
