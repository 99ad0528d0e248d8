"""Topic client and participant side against the real gateway on 127.0.0.1.

`mcp.Client(topic.participant_transport(id))` runs unchanged over the topic; our participant side
serves an `MCPServer`; raw participants try to spoof replies or never answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, MCPError

from mcpx_router import RouterError
from mcpx_router.mcpx import (
    ConnectionEvent,
    ConnectionState,
    Gateway,
    MCPxAuthError,
    MCPxConnectionError,
    PresenceEvent,
    TopicClient,
    TopicEvent,
    run_gateway,
    serve_participant,
    static_token,
)

from ...support.mcpx_support import RawPeer, eventually, make_server, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
HANDSHAKE = "2025-06-18"


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, str]]:
    gw = Gateway()
    async with run_gateway(gw) as url:
        yield gw, url


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


@contextmanager
def raises_mcp_error(match: str = "") -> Iterator[None]:
    """`mcp.Client` raises from inside its task group, so the error may come wrapped in a group."""
    with pytest.raises(BaseException) as info:
        yield
    errors = [e for e in leaves(info.value) if isinstance(e, MCPError)]
    assert errors and match in str(errors[0]), info.value


async def next_event(events: MemoryObjectReceiveStream[TopicEvent], kind: type[Any], limit: float = 5) -> Any:
    with anyio.fail_after(limit):
        async for event in events:
            if isinstance(event, kind):
                return event
    raise AssertionError("event stream ended")


async def serve_raw(
    peer: RawPeer, caller: str, ready: anyio.Event, calls: MemoryObjectSendStream[dict[str, Any]]
) -> None:
    """Play a minimal MCP server by hand; `tools/call` envelopes are handed to the test."""
    while True:
        frame = await peer.recv_mcp(limit=30)
        payload = frame["payload"]
        method = payload.get("method")
        result: dict[str, Any]
        if method == "initialize":
            info = {"name": "raw", "version": "1"}
            result = {"protocolVersion": HANDSHAKE, "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            await calls.send(frame)
            continue
        else:
            if method == "notifications/initialized":
                ready.set()
            continue
        reply = {"jsonrpc": "2.0", "id": payload["id"], "result": result}
        await peer.send_mcp(reply, to=(caller,), correlation_id=frame["id"])


async def test_call_tools_of_a_participant(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with (
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()) as served,
        TopicClient(url, TOPIC, "agent-a") as a,
    ):
        assert set(a.participants) == {"agent-b"} and b.participant_id == "agent-b"
        async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "agent-b"
            tools = await client.list_tools()
            assert sorted(t.name for t in tools.tools) == ["add", "slow_echo"]
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result.structured_content == {"result": 42}
            assert served.sessions == {"agent-a"}


async def test_auto_mode_probe_and_several_callers(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with (
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()) as served,
        TopicClient(url, TOPIC, "agent-a") as a,
        TopicClient(url, TOPIC, "agent-c") as c,
        Client(a.participant_transport("agent-b")) as client_a,  # server/discover probe, modern era
        Client(c.participant_transport("agent-b"), mode="legacy") as client_c,
    ):
        results: dict[str, str] = {}

        async def call(client: Client, text: str) -> None:
            result = await client.call_tool("slow_echo", {"text": text, "delay": 0.2})
            results[text] = result.structured_content["result"] if result.structured_content else ""

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(call, client_a, f"a{i}")
                tg.start_soon(call, client_c, f"c{i}")
        assert results == {t: t for t in ("a0", "a1", "a2", "c0", "c1", "c2")}
        assert served.sessions == {"agent-a", "agent-c"}


async def test_presence_stream(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with TopicClient(url, TOPIC, "agent-a") as a, a.subscribe() as events:
        first = await next_event(events, ConnectionEvent)
        assert first.state is ConnectionState.CONNECTED
        async with TopicClient(url, TOPIC, "agent-b"):
            join = await next_event(events, PresenceEvent)
            assert (join.event, join.participant.id, join.rejoined) == ("join", "agent-b", False)
            assert set(a.participants) == {"agent-b"}
            async with a.subscribe() as late:  # a late subscriber first gets the current roster
                assert isinstance(await late.receive(), ConnectionEvent)
                seeded = await late.receive()
                assert isinstance(seeded, PresenceEvent) and seeded.participant.id == "agent-b"
        leave = await next_event(events, PresenceEvent)
        assert (leave.event, leave.participant.id) == ("leave", "agent-b")
        assert a.participants == {}


async def test_spoofed_and_replayed_replies_are_dropped(gateway: tuple[Gateway, str], caplog: Any) -> None:
    gw, url = gateway
    caplog.set_level(logging.WARNING, logger="mcpx_router.mcpx")
    outcome: dict[str, Any] = {}
    calls_send, calls_recv = anyio.create_memory_object_stream[dict[str, Any]](10)
    ready = anyio.Event()

    def dropped() -> int:
        return sum("unmatched response" in r.getMessage() for r in caplog.records)

    async with (
        raw_peer(url, TOPIC, "agent-b", gw) as b,
        raw_peer(url, TOPIC, "mallory", gw) as mallory,
        TopicClient(url, TOPIC, "agent-a") as a,
        anyio.create_task_group() as tg,
    ):
        with calls_send, calls_recv:
            tg.start_soon(serve_raw, b, "agent-a", ready, calls_send)
            async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
                await ready.wait()

                async def call() -> None:
                    result = await client.call_tool("whoami", {})
                    outcome["text"] = result.content[0].text  # type: ignore[union-attr]

                async with anyio.create_task_group() as callers:
                    callers.start_soon(call)
                    with anyio.fail_after(5):
                        request = await calls_recv.receive()
                    rpc_id, env_id = request["payload"]["id"], request["id"]

                    def reply(text: str, rid: Any = rpc_id) -> dict[str, Any]:
                        result = {"content": [{"type": "text", "text": text}], "isError": False}
                        return {"jsonrpc": "2.0", "id": rid, "result": result}

                    # a participant with a valid token forging `from`: the gateway refuses it
                    await mallory.send_mcp(
                        reply("forged from"), to=("agent-a",), correlation_id=env_id, sender="agent-b"
                    )
                    rejected = await mallory.recv_until(lambda f: f["kind"] == "system")
                    assert rejected["payload"]["error"] == "from_mismatch"
                    # the right correlation id and JSON-RPC id, but the wrong sender
                    await mallory.send_mcp(reply("wrong sender"), to=("agent-a",), correlation_id=env_id)
                    # the right sender, but the id as a string, or the wrong correlation id, or none
                    await b.send_mcp(reply("string id", str(rpc_id)), to=("agent-a",), correlation_id=env_id)
                    await b.send_mcp(reply("wrong correlation"), to=("agent-a",), correlation_id="nope")
                    await b.send_mcp(reply("no correlation"), to=("agent-a",))
                    await eventually(lambda: dropped() >= 4)
                    assert outcome == {}
                    genuine = reply("genuine")
                    await b.send_mcp(genuine, to=("agent-a",), correlation_id=env_id)
                assert outcome == {"text": "genuine"}
                before = dropped()
                await b.send_mcp(genuine, to=("agent-a",), correlation_id=env_id)  # a replay
                await eventually(lambda: dropped() > before)
            tg.cancel_scope.cancel()


async def test_a_silent_participant_does_not_stall_others(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with (
        raw_peer(url, TOPIC, "silent", gw) as silent,
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()),
        TopicClient(url, TOPIC, "agent-a") as a,
    ):
        gave_up = anyio.Event()
        done_meanwhile: list[int] = []

        async def talk_to_silent() -> None:
            with anyio.move_on_after(1.5):
                async with Client(a.participant_transport("silent"), mode="legacy"):
                    raise AssertionError("the silent participant never answers initialize")
            gave_up.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(talk_to_silent)
            async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
                for i in range(5):
                    result = await client.call_tool("add", {"a": i, "b": 1})
                    assert result.structured_content == {"result": i + 1}
                    done_meanwhile.append(i)
                assert not gave_up.is_set()
        assert gave_up.is_set() and done_meanwhile == [0, 1, 2, 3, 4]
        request = await silent.recv_mcp()
        assert request["payload"]["method"] == "initialize"


async def test_unknown_participant_fails_fast(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with TopicClient(url, TOPIC, "agent-a") as a:
        with anyio.fail_after(3), raises_mcp_error("ghost"):
            async with Client(a.participant_transport("ghost"), mode="legacy"):
                pass


async def test_requests_without_a_server_get_errors(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with raw_peer(url, TOPIC, "raw", gw) as raw, TopicClient(url, TOPIC, "agent-a"):
        sent = await raw.send_mcp({"jsonrpc": "2.0", "id": "p", "method": "ping"}, to=("agent-a",))
        answer = await raw.recv_mcp()
        assert answer["correlation_id"] == sent["id"] and answer["payload"] == {
            "jsonrpc": "2.0",
            "id": "p",
            "result": {},
        }
        sent = await raw.send_mcp({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, to=("agent-a",))
        answer = await raw.recv_mcp()
        assert answer["correlation_id"] == sent["id"] and answer["payload"]["error"]["code"] == -32601
        assert answer["payload"]["id"] == 5 and answer["from"] == "agent-a" and answer["to"] == ["raw"]


async def test_participant_side_replies_with_correlation(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with (
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()),
        raw_peer(url, TOPIC, "raw", gw) as raw,
    ):
        params = {
            "protocolVersion": HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        init = await raw.send_mcp(
            {"jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": params}, to=("agent-b",)
        )
        answer = await raw.recv_mcp()
        assert answer["correlation_id"] == init["id"] and answer["payload"]["id"] == "init-1"
        assert answer["from"] == "agent-b" and answer["to"] == ["raw"]
        await raw.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, to=("agent-b",))
        call = {"name": "add", "arguments": {"a": 1, "b": 2}}
        first = await raw.send_mcp(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, to=("agent-b",)
        )
        second = await raw.send_mcp({"jsonrpc": "2.0", "id": "1", "method": "tools/list"}, to=("agent-b",))
        answers = {a["correlation_id"]: a["payload"] for a in [await raw.recv_mcp(), await raw.recv_mcp()]}
        assert answers[first["id"]]["id"] == 1 and answers[first["id"]]["result"]["structuredContent"] == {
            "result": 3
        }
        assert answers[second["id"]]["id"] == "1" and "tools" in answers[second["id"]]["result"]
        # a broadcast request is ignored; a request for someone else is never seen
        await raw.send(
            {
                "protocol": "mcp-x/v0",
                "id": "bc",
                "from": "raw",
                "kind": "mcp",
                "payload": {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            }
        )
        assert [f for f in await raw.frames_within(0.3) if f["kind"] == "mcp"] == []


async def test_connection_loss_is_observable_and_ends_sessions(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with (
        TopicClient(url, TOPIC, "agent-b") as b,
        serve_participant(b, make_server()),
        TopicClient(url, TOPIC, "agent-a") as a,
        a.subscribe() as events,
    ):
        async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
            async with anyio.create_task_group() as tg:

                async def slow_call() -> None:
                    with raises_mcp_error():
                        await client.call_tool("slow_echo", {"text": "x", "delay": 3})

                tg.start_soon(slow_call)
                await anyio.sleep(0.2)  # the call is likely on its way; it fails either way
                gw.close_all()
                with anyio.fail_after(15):  # not a bound to assert: ample on a busy machine
                    while True:
                        event = await next_event(events, ConnectionEvent)
                        if event.state is ConnectionState.LOST:
                            break
        assert a.state is ConnectionState.LOST
        with pytest.raises(MCPxConnectionError):
            await a.notify("notifications/chat/message", {"text": "hi"})
        with pytest.raises(MCPxConnectionError):
            async with Client(a.participant_transport("agent-b"), mode="legacy"):
                pass


async def test_reconnect_under_the_same_id(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with TopicClient(url, TOPIC, "agent-a") as a, a.subscribe() as events:
        async with TopicClient(url, TOPIC, "agent-b") as old_b, serve_participant(old_b, make_server()):
            await next_event(events, PresenceEvent)
            async with Client(a.participant_transport("agent-b"), mode="legacy") as client:
                await client.list_tools()
                async with (
                    TopicClient(url, TOPIC, "agent-b") as new_b,
                    serve_participant(new_b, make_server("new-b")),
                ):
                    rejoin = await next_event(events, PresenceEvent)
                    assert (rejoin.event, rejoin.participant.id, rejoin.rejoined) == ("join", "agent-b", True)
                    await eventually(lambda: old_b.state is ConnectionState.LOST)
                    with raises_mcp_error():  # the old session ended with the old connection
                        await client.list_tools()
                    async with Client(a.participant_transport("agent-b"), mode="legacy") as again:
                        assert again.server_info is not None and again.server_info.name == "new-b"
                    with anyio.move_on_after(0.3):
                        event = await next_event(events, PresenceEvent)
                        raise AssertionError(f"unexpected presence event {event}")
                    assert set(a.participants) == {"agent-b"}


async def test_bad_token_raises_auth_error(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    with pytest.raises(MCPxAuthError) as info:
        async with TopicClient(url, TOPIC, "agent-a", token_provider=static_token("bogus")):
            pass
    assert isinstance(info.value, RouterError) and isinstance(info.value, PermissionError)


async def test_unreachable_gateway_raises_connection_error() -> None:
    with pytest.raises(MCPxConnectionError):
        async with TopicClient("http://127.0.0.1:9", TOPIC, "agent-a", token_provider=static_token("t")):
            pass
