"""Welcomes: what our gateway sends satisfies every client shape; our client reads every shape.

Clients differ: the draft's read `kind: "system"`, `payload.event == "welcome"` and
`payload.participant.id`; others wait for `type: "welcome"` and read `participant_id` and
`topic`, and hang otherwise. Our gateway sends a superset; our topic client reads any of them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from mcpx_router.mcpx import (
    Envelope,
    Gateway,
    TopicClient,
    parse_frame,
    parse_welcome,
    run_gateway,
    static_token,
)
from mcpx_router.mcpx._welcome import MCP_VERSION
from mcpx_router.mcpx.gateway._serve import serve_asgi

from ..support.mcpx_support import is_presence, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"


def read_like_the_draft(frame: dict[str, Any]) -> tuple[str, list[str]]:
    """A client written from the draft: the assigned id and the others present."""
    assert frame["kind"] == "system" and frame["from"] == "system:gateway"
    payload = frame["payload"]
    assert payload["event"] == "welcome"
    return payload["participant"]["id"], [p["id"] for p in payload["participants"]]


def read_like_the_others(frame: dict[str, Any]) -> tuple[str, str]:
    """A client that waits for `type: "welcome"` and reads `participant_id` and `topic`, on the
    frame itself or in its payload, whichever it looks at."""
    for where in (frame, frame["payload"]):
        assert where["type"] == "welcome"
        assert where["participant_id"] == frame["payload"]["participant_id"]
        assert where["topic"] == frame["payload"]["topic"]
    return frame["participant_id"], frame["topic"]


async def test_our_welcome_satisfies_both_shapes() -> None:
    gw = Gateway()
    async with run_gateway(gw) as url, raw_peer(url, TOPIC, "alice", gw) as alice:
        assert read_like_the_draft(alice.welcome) == ("alice", [])
        assert read_like_the_others(alice.welcome) == ("alice", TOPIC)
        assert alice.welcome["to"] == ["alice"] and alice.welcome["protocol"] == "mcp-x/v0"
        assert alice.welcome["payload"]["participant"]["mcp"] == {"version": MCP_VERSION}
        async with raw_peer(url, TOPIC, "bob", gw) as bob:
            assert read_like_the_draft(bob.welcome) == ("bob", ["alice"])
            assert read_like_the_others(bob.welcome) == ("bob", TOPIC)
            [entry] = bob.welcome["payload"]["participants"]
            assert entry == {"id": "alice", "name": "alice", "kind": "agent", "mcp": {"version": MCP_VERSION}}
            join = await alice.recv_until(is_presence("join", "bob"))
            assert join["from"] == "system:gateway" and join["payload"]["participant"]["mcp"] == {
                "version": MCP_VERSION
            }
        leave = await alice.recv_until(is_presence("leave", "bob"))
        assert leave["payload"]["participant"]["mcp"] == {"version": MCP_VERSION}
        # and our own client reads it
        async with TopicClient(url, TOPIC, "carol") as carol:
            assert carol.participant_id == "carol" and set(carol.participants) == {"alice"}
            assert carol.participants["alice"].mcp_version == MCP_VERSION


# -- every shape we read ------------------------------------------------------------------------

IDS = ["a", "b", "c"]


@st.composite
def welcomes(draw: st.DrawFn) -> tuple[dict[str, Any], str, set[str], int]:
    """A welcome in one of the shapes real gateways send: (frame, our id, the others, history length)."""
    me = "me"
    others = draw(st.lists(st.sampled_from(IDS), unique=True, max_size=3))
    payload: dict[str, Any] = {
        draw(st.sampled_from(["event", "type"])): draw(st.sampled_from(["welcome", "Welcome"]))
    }
    id_key = draw(st.sampled_from(["participant", "participant_str", "participant_id", "participantId"]))
    if id_key == "participant":
        payload["participant"] = {"id": me}
    elif id_key == "participant_str":
        payload["participant"] = me
    else:
        payload[id_key] = me

    def entry(pid: str) -> Any:
        return draw(
            st.sampled_from(
                [pid, {"id": pid}, {"participant_id": pid}, {"id": pid, "mcp": {"version": "2025-06-18"}}]
            )
        )

    listed = [entry(p) for p in others]
    if draw(st.booleans()):  # with ourselves among them
        listed.insert(draw(st.integers(0, len(listed))), entry(me))
    payload["participants"] = listed
    history = [
        {
            "protocol": "mcp-x/v0",
            "id": f"h{i}",
            "from": "a",
            "kind": "mcp",
            "payload": {"jsonrpc": "2.0", "method": "n"},
        }
        for i in range(draw(st.integers(0, 2)))
    ]
    shape = draw(st.sampled_from(["list", "messages", "settings", "absent"]))
    if shape == "list":
        payload["history"] = history
    elif shape == "messages":
        payload["history"] = {"messages": history}
    elif shape == "settings":
        payload["history"], history = {"enabled": True, "limit": 100}, []
    else:
        history = []
    if draw(st.booleans()):
        payload["topic"] = TOPIC
    if draw(st.booleans()):  # a bare object, no envelope around it
        return payload, me, set(others), len(history)
    frame: dict[str, Any] = {"kind": "system", "payload": payload}
    sender = draw(st.sampled_from(["system:gateway", "system", None]))
    if sender is not None:
        frame["from"] = sender
    if draw(st.booleans()):
        frame |= {"protocol": "mcp-x/v0", "id": "w", "to": [me]}
    return frame, me, set(others), len(history)


@settings(max_examples=500, deadline=None)
@given(welcomes())
def test_every_welcome_shape_is_read(case: tuple[dict[str, Any], str, set[str], int]) -> None:
    frame, me, others, history = case
    env = parse_frame(json.dumps(frame))
    assert isinstance(env, Envelope)
    welcome = parse_welcome(env)
    assert welcome is not None and welcome.participant_id == me
    assert {p.id for p in welcome.participants} == others and len(welcome.history) == history


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A gateway that welcomes with whatever frame the test puts in the list, then waits."""
    script: list[dict[str, Any]] = []

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(json.dumps(script[-1]))
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                await websocket.receive_text()

    async with serve_asgi(Starlette(routes=[WebSocketRoute("/v0/ws", endpoint)])) as url:
        yield url, script


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(welcomes())
async def test_our_client_joins_on_every_welcome_shape(
    scripted: tuple[str, list[dict[str, Any]]], case: tuple[dict[str, Any], str, set[str], int]
) -> None:
    url, script = scripted
    frame, me, others, history = case
    script.append(frame)
    async with TopicClient(url, TOPIC, me, token_provider=static_token("t"), welcome_timeout=5) as client:
        assert client.participant_id == me and set(client.participants) == others
        assert len(client.history) == history
