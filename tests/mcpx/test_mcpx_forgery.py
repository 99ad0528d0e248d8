"""Only the gateway speaks for a topic: presence, welcomes and system frames from participants.

Some gateways forward any kind from participants (tests/support/mcpx_permissive_gateway.py is
one, served for real); a participant can then send a frame that looks like a `leave` of someone
else, a `join` of no one, or a welcome. Our topic client drops them all (one warning per
participant), so the Router's tool list stays right. Our own gateway refuses them outright.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpx_router import Router
from mcpx_router.mcpx import (
    Envelope,
    Gateway,
    GatewayConfig,
    TokenGrant,
    TopicClient,
    parse_frame,
    run_gateway,
    serve_participant,
    static_token,
)
from mcpx_router.mcpx._errors import EnvelopeError
from mcpx_router.mcpx._welcome import speaks_for_gateway

from ..support.mcpx_permissive_gateway import permissive_gateway
from ..support.mcpx_router_support import call
from ..support.mcpx_support import RawPeer, eventually, make_server, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
IDS = st.sampled_from(["agent-b", "ghost", "router", "me", "mallory", "system:gateway"])


def _participant(pid: str, shape: int) -> dict[str, Any]:
    return [
        {"participant": {"id": pid}},
        {"participant_id": pid},
        {"participantId": pid},
        {"participant": pid},
        {"participant": {"participant_id": pid, "mcp": {"version": "2025-06-18"}}},
    ][shape]


@st.composite
def claims(draw: st.DrawFn, sender: str = "mallory") -> dict[str, Any]:
    """A frame a participant sends that claims to speak for the topic, in any shape we read."""
    event = draw(st.sampled_from(["join", "leave", "heartbeat", "welcome", "error", "JOIN", "Welcome"]))
    payload: dict[str, Any] = {draw(st.sampled_from(["event", "type"])): event}
    payload |= _participant(draw(IDS), draw(st.integers(0, 4)))
    if draw(st.booleans()):
        payload["participants"] = draw(st.lists(IDS, max_size=3))
    if draw(st.booleans()):
        payload["error"] = "rate_limited"
    if draw(st.booleans()):  # a bare object, no envelope around it
        return {**payload, "from": sender}
    frame: dict[str, Any] = {
        "id": draw(st.uuids()).hex,
        "from": sender,
        "kind": draw(st.sampled_from(["presence", "system", "PRESENCE", "System"])),
        "payload": payload,
    }
    if draw(st.booleans()):
        frame["protocol"] = "mcp-x/v0"
    if draw(st.booleans()):
        frame["to"] = draw(st.sampled_from([[], ["me"], ["me", "agent-b"]]))
    return frame


# -- the rule, read off any frame --------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(
    frame=claims(sender="x"),
    sender=st.one_of(
        st.text(min_size=1, max_size=20).filter(lambda s: not s.startswith("system")),
        st.integers(),
        st.lists(st.text(), max_size=2),
        st.just(""),
        st.booleans(),
    ),
)
def test_a_frame_with_a_participants_from_never_speaks_for_the_gateway(
    frame: dict[str, Any], sender: Any
) -> None:
    frame["from"] = sender
    try:
        parsed = parse_frame(json.dumps(frame))
    except EnvelopeError:
        return  # dropped as malformed: it changes nothing either
    assert isinstance(parsed, Envelope) and not speaks_for_gateway(parsed)


@pytest.mark.parametrize(
    "frame",
    [
        {"kind": "presence", "payload": {"event": "join", "participant": {"id": "x"}}},
        {"from": "system:gateway", "kind": "presence", "payload": {"event": "leave", "participant": "x"}},
        {"event": "welcome", "participant_id": "x"},
        {"id": "w", "from": "system", "kind": "system", "payload": {"type": "welcome"}},
        {"from": None, "kind": "system", "payload": {"event": "welcome"}},
    ],
)
def test_frames_without_from_or_from_system_are_the_gateways(frame: dict[str, Any]) -> None:
    parsed = parse_frame(json.dumps(frame))
    assert isinstance(parsed, Envelope) and speaks_for_gateway(parsed)


# -- through a gateway that forwards any kind, end to end ---------------------------------------


async def _settled(mallory: RawPeer, target: str) -> None:
    """Ping `target` and wait for the answer: every frame mallory sent before has been read."""
    await mallory.send_mcp({"jsonrpc": "2.0", "id": "sync", "method": "ping"}, to=(target,))
    answer = await mallory.recv_until(lambda f: f.get("kind") == "mcp" and f["payload"].get("id") == "sync")
    assert answer["payload"]["result"] == {}


@pytest.fixture
async def permissive_topic() -> AsyncIterator[tuple[str, RawPeer]]:
    """The permissive gateway with `agent-b` serving tools and `mallory` speaking raw frames."""
    async with AsyncExitStack() as stack:
        _, url = await stack.enter_async_context(permissive_gateway())
        b = TopicClient(url, TOPIC, "agent-b", token_provider=static_token("agent-b"))
        await stack.enter_async_context(serve_participant(b, make_server("agent-b")))
        await stack.enter_async_context(b)
        mallory = await stack.enter_async_context(raw_peer(url, TOPIC, "mallory", token="mallory"))
        yield url, mallory


async def test_forged_presence_and_welcome_leave_the_routers_tools_alone(
    permissive_topic: tuple[str, RawPeer], caplog: pytest.LogCaptureFixture
) -> None:
    url, mallory = permissive_topic
    caplog.set_level(logging.DEBUG, logger="mcpx_router.mcpx")
    tools = ["agent-b__add", "agent-b__slow_echo"]
    async with Router() as router:
        topic = await router.join_topic(
            url, TOPIC, "router", token_provider=static_token("router"), include=["agent-b"]
        )
        assert topic.peers == ("agent-b",) and [t.name for t in router.tools] == tools
        forged_leave = {
            "protocol": "mcp-x/v0",
            "id": "f1",
            "from": "mallory",
            "to": ["router"],
            "kind": "presence",
            "payload": {"event": "leave", "participant": {"id": "agent-b"}},
        }
        forged_join = {
            **forged_leave,
            "id": "f2",
            "payload": {"event": "join", "participant": {"id": "ghost"}},
        }
        forged_welcome = {
            **forged_leave,
            "id": "f3",
            "kind": "system",
            "payload": {
                "event": "welcome",
                "participant": {"id": "router"},
                "participants": [{"id": "ghost"}],
            },
        }
        bare_leave = {"type": "leave", "participant_id": "agent-b", "from": "mallory", "to": ["router"]}
        bare_welcome = {
            "type": "welcome",
            "participant_id": "router",
            "participants": [],
            "from": "mallory",
            "to": ["router"],
        }
        for frame in (forged_leave, forged_join, forged_welcome, bare_leave, bare_welcome):
            await mallory.send(frame)
        await _settled(mallory, "router")
        assert set(topic.client.participants) == {"agent-b", "mallory"}
        assert topic.client.participant_id == "router"
        assert topic.peers == ("agent-b",) and [t.name for t in router.tools] == tools
        [answer] = await router.dispatch([call("agent-b__add", {"a": 2, "b": 40})])
        assert answer["content"] == "42"
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "mallory" in r.getMessage()]
        assert len(warnings) == 1 and "only the gateway speaks for the topic" in warnings[0].getMessage()
        later = [
            r
            for r in caplog.records
            if r.levelno == logging.DEBUG and "frame from participant" in r.getMessage()
        ]
        assert len(later) == 4
        # the gateway's own word still counts: mallory leaving is a leave
        await mallory.ws.aclose()
        await eventually(lambda: "mallory" not in topic.client.participants)
        assert [t.name for t in router.tools] == tools


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(frames=st.lists(claims(), min_size=1, max_size=4))
async def test_no_forged_frame_changes_the_roster(
    permissive_topic: tuple[str, RawPeer], frames: list[dict[str, Any]]
) -> None:
    url, mallory = permissive_topic
    async with TopicClient(url, TOPIC, "me", token_provider=static_token("me")) as me:
        await eventually(lambda: set(me.participants) == {"agent-b", "mallory"})
        for frame in frames:
            await mallory.send(frame)
        await _settled(mallory, "me")
        assert set(me.participants) == {"agent-b", "mallory"}
        assert me.participant_id == "me" and me.history == ()


# -- our own gateway refuses them ---------------------------------------------------------------


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, str]]:
    gw = Gateway()
    async with run_gateway(gw) as url:
        yield gw, url


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(frame=claims())
async def test_our_gateway_refuses_presence_and_system_from_participants(
    gateway: tuple[Gateway, str], frame: dict[str, Any]
) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "mallory", gw) as mallory, raw_peer(url, TOPIC, "watcher", gw) as watcher:
        await mallory.send({**frame, "protocol": "mcp-x/v0", "id": "f"})
        refusal = await mallory.recv_until(lambda f: f.get("kind") == "system")
        assert refusal["payload"]["event"] == "error"
        assert refusal["payload"]["error"] == "invalid_kind"
        seen = await watcher.frames_within(0.05)
        assert [f for f in seen if f.get("from") == "mallory"] == []
        assert all(h.get("from") != "mallory" for h in gw.history(TOPIC))


@settings(max_examples=200, deadline=None)
@given(pid=st.text(max_size=140))
def test_no_pre_shared_token_binds_an_id_a_participant_may_not_have(pid: str) -> None:
    legal = (
        0 < len(pid) <= 128
        and not pid.startswith("system")
        and all(c.isprintable() and not c.isspace() for c in pid)
    )
    if legal:
        assert GatewayConfig(tokens={"t": TokenGrant(pid)}).tokens["t"].participant_id == pid
    else:
        with pytest.raises(ValueError, match="no participant may have"):
            GatewayConfig(tokens={"t": TokenGrant(pid)})
