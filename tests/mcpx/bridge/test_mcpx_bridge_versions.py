"""The bridge negotiates with every requester, and answers `ping` itself.

Two bridged servers, each bridged into a real gateway on 127.0.0.1:
tests/support/mcpx_stdio_server.py, built on the installed `mcp` SDK (it answers `initialize`
with the version asked for when it is one of the SDK's handshake versions, else with the SDK's
latest), and tests/support/tiny_stdio_server.py, which speaks 2025-11-25 only and logs every
`ping` it receives.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.client.session
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
)

from mcpx_router.mcpx import Gateway, StdioBridge, TopicClient, bridge_stdio_server, run_gateway
from mcpx_router.mcpx.client._channel import ParticipantTransport

from ...support.mcpx_support import RawPeer, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
SUPPORT = Path(__file__).parents[2] / "support"
SERVER = [sys.executable, str(SUPPORT / "mcpx_stdio_server.py")]
TINY = [sys.executable, str(SUPPORT / "tiny_stdio_server.py")]
UNKNOWN = ("2099-01-01", "2023-01-01")
"""Versions no SDK speaks: the server answers with its latest."""


@pytest.fixture
async def bridged() -> AsyncIterator[tuple[Gateway, str, StdioBridge]]:
    """A gateway with the stdio server bridged in as participant `tools`."""
    gw = Gateway()
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "tools") as topic,
        bridge_stdio_server(topic, SERVER) as bridge,
    ):
        yield gw, url, bridge


@pytest.fixture
async def tiny_bridged(tmp_path: Path) -> AsyncIterator[tuple[Gateway, str, StdioBridge, Path]]:
    """A gateway with the tiny server (2025-11-25 only) bridged in as `tools`; its log file."""
    log = tmp_path / "tiny.log"
    log.touch()
    gw = Gateway()
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "tools") as topic,
        bridge_stdio_server(topic, TINY, env=dict(os.environ, TINY_SERVER_LOG=str(log))) as bridge,
    ):
        yield gw, url, bridge, log


@asynccontextmanager
async def strict_client(transport: ParticipantTransport, version: str) -> AsyncIterator[Client]:
    """An SDK client that asks for `version` and, like strict clients, gives up on any other answer."""
    patch = pytest.MonkeyPatch()
    patch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    try:
        client = Client(transport, mode="legacy")
        await client.__aenter__()
    finally:
        patch.undo()  # read only while initializing
    try:
        if client.protocol_version != version:
            raise RuntimeError(f"Server's protocol version is not supported: {client.protocol_version}")
        yield client
    finally:
        await client.__aexit__(None, None, None)


async def test_sdk_clients_pinned_to_each_version_get_theirs(
    bridged: tuple[Gateway, str, StdioBridge],
) -> None:
    _, url, bridge = bridged
    async with AsyncExitStack() as stack:
        clients: dict[str, Client] = {}
        for index, version in enumerate(HANDSHAKE_PROTOCOL_VERSIONS):
            topic = await stack.enter_async_context(TopicClient(url, TOPIC, f"agent-{index}"))
            clients[version] = await stack.enter_async_context(
                strict_client(topic.participant_transport("tools"), version)
            )
        # all at once, each in its own negotiated version
        for version, client in clients.items():
            assert client.protocol_version == version
            assert {t.name for t in (await client.list_tools()).tools} == {"echo", "slow_add", "count"}
            result = await client.call_tool("echo", {"text": version})
            assert result.content[0].text == version  # type: ignore[union-attr]
            with warnings.catch_warnings():  # deprecated by 2026-07-28 only, not by these versions
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.send_ping()
        assert sorted(s.negotiated_version or "" for s in bridge.sessions) == sorted(
            HANDSHAKE_PROTOCOL_VERSIONS
        )
        # a participant asking for a version already served shares its session
        extra = await stack.enter_async_context(TopicClient(url, TOPIC, "agent-x"))
        again = await stack.enter_async_context(
            strict_client(extra.participant_transport("tools"), "2025-06-18")
        )
        assert again.protocol_version == "2025-06-18" and len(bridge.sessions) == len(
            HANDSHAKE_PROTOCOL_VERSIONS
        )


def _initialize(rid: Any, version: str) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def expected(version: str) -> str:
    """What MCP asks of this server: the version asked for if it speaks it, else its latest."""
    return version if version in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


async def _ask(peer: RawPeer, rid: Any, version: str) -> dict[str, Any]:
    sent = await peer.send_mcp(_initialize(rid, version), to=("tools",))
    answer = await peer.recv_until(
        lambda f: f.get("kind") == "mcp" and f.get("correlation_id") == sent["id"], 30
    )
    assert answer["from"] == "tools" and answer["to"] == [peer.participant_id]
    assert answer["payload"]["id"] == rid
    result: dict[str, Any] = answer["payload"]["result"]
    return result


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    asked=st.lists(
        st.sampled_from([*SUPPORTED_PROTOCOL_VERSIONS, *UNKNOWN]),
        min_size=1,
        max_size=4,
    ),
    rid=st.one_of(st.integers(-(2**31), 2**31), st.text(min_size=1, max_size=8)),
)
async def test_every_requester_gets_a_negotiated_version(
    bridged: tuple[Gateway, str, StdioBridge], asked: list[str], rid: Any
) -> None:
    gw, url, bridge = bridged
    async with AsyncExitStack() as stack:
        for index, version in enumerate(asked):
            peer = await stack.enter_async_context(raw_peer(url, TOPIC, f"raw-{index}", gw))
            result = await _ask(peer, rid, version)
            assert result["protocolVersion"] == expected(version)
            assert result["serverInfo"]["name"] == "stdio-echo"
            await peer.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, to=("tools",))
            call = {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}},
            }
            sent = await peer.send_mcp(call, to=("tools",))
            answer = await peer.recv_until(lambda f, s=sent: f.get("correlation_id") == s["id"], 30)
            assert answer["payload"]["result"]["content"][0]["text"] == "x"
    # one session per version asked for, each answered as MCP asks, none speaking the same one
    sessions = [s for s in bridge.sessions if s.requested_version is not None]
    assert len({s.requested_version for s in sessions}) == len(sessions)
    assert all(s.negotiated_version == expected(s.requested_version or "") for s in sessions)
    assert len({s.negotiated_version for s in sessions}) == len(sessions)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(asked=st.lists(st.sampled_from([*SUPPORTED_PROTOCOL_VERSIONS, *UNKNOWN]), min_size=1, max_size=4))
async def test_a_server_with_one_version_answers_everyone_with_it(
    tiny_bridged: tuple[Gateway, str, StdioBridge, Path], asked: list[str]
) -> None:
    gw, url, bridge, _ = tiny_bridged
    async with AsyncExitStack() as stack:
        for index, version in enumerate(asked):
            peer = await stack.enter_async_context(raw_peer(url, TOPIC, f"raw-{index}", gw))
            result = await _ask(peer, index, version)
            assert result["protocolVersion"] == "2025-11-25" and result["serverInfo"]["name"] == "tiny"
            await peer.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, to=("tools",))
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "pid", "arguments": {}},
            }
            sent = await peer.send_mcp(call, to=("tools",))
            answer = await peer.recv_until(lambda f, s=sent: f.get("correlation_id") == s["id"], 30)
            # the copy started to ask the server about another version is gone: one process serves all
            assert answer["payload"]["result"]["content"][0]["text"] == str(bridge.process.pid)
    assert [s.negotiated_version for s in bridge.sessions] == ["2025-11-25"]


async def test_the_bridge_answers_ping_itself(tiny_bridged: tuple[Gateway, str, StdioBridge, Path]) -> None:
    gw, url, _, log = tiny_bridged
    async with raw_peer(url, TOPIC, "pinger", gw) as peer:
        for rid in (1, "1", 0):  # before any initialize, and with ids of either type
            sent = await peer.send_mcp({"jsonrpc": "2.0", "id": rid, "method": "ping"}, to=("tools",))
            answer = await peer.recv_until(lambda f, s=sent: f.get("correlation_id") == s["id"])
            assert answer["payload"] == {"jsonrpc": "2.0", "id": rid, "result": {}}
        await _ask(peer, 9, "2025-11-25")
        sent = await peer.send_mcp({"jsonrpc": "2.0", "id": 10, "method": "ping"}, to=("tools",))
        answer = await peer.recv_until(lambda f: f.get("correlation_id") == sent["id"])
        assert answer["payload"] == {"jsonrpc": "2.0", "id": 10, "result": {}}
        # the server logs every ping it reads: it read none
        call = {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {}},
        }
        sent = await peer.send_mcp(call, to=("tools",))
        await peer.recv_until(lambda f: f.get("correlation_id") == sent["id"])
    logged = [json.loads(line)["method"] for line in log.read_text().splitlines()]
    assert logged == ["tools/call"]
