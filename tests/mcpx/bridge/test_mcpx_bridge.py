"""The stdio bridge around a real stdio MCP server (tests/support/mcpx_stdio_server.py), on a real gateway."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcpx_router.mcpx import (
    Gateway,
    TopicClient,
    bridge_cli,
    bridge_stdio_server,
    gateway_cli,
    run_bridge,
    run_gateway,
)

from ...support.mcpx_support import eventually, raw_peer

TOPIC = "room"
SERVER = [sys.executable, str(Path(__file__).parents[2] / "support" / "mcpx_stdio_server.py")]


@pytest.fixture
async def bridged() -> AsyncIterator[tuple[Gateway, str]]:
    """A gateway with the stdio server bridged in as participant `tools`."""
    gw = Gateway()
    async with (
        run_gateway(gw) as url,
        TopicClient(url, TOPIC, "tools") as topic,
        bridge_stdio_server(topic, SERVER),
    ):
        yield gw, url


@pytest.mark.anyio
async def test_several_participants_share_one_stdio_server(bridged: tuple[Gateway, str]) -> None:
    _, url = bridged
    async with (
        TopicClient(url, TOPIC, "agent-a") as a,
        TopicClient(url, TOPIC, "agent-c") as c,
        Client(a.participant_transport("tools"), mode="legacy") as client_a,
        Client(c.participant_transport("tools"), mode="legacy") as client_c,
    ):
        # the first initialize went through, the second got the same answer
        assert client_a.server_info is not None and client_c.server_info is not None
        assert client_a.server_info.name == client_c.server_info.name == "stdio-echo"
        assert client_a.protocol_version == client_c.protocol_version
        results: dict[str, int] = {}
        progress: dict[str, list[float]] = {"a": [], "c": []}

        async def add(name: str, client: Client, x: int, delay: float) -> None:
            result = await client.call_tool("slow_add", {"a": x, "b": 1000, "delay": delay})
            assert result.structured_content is not None
            results[name] = result.structured_content["result"]

        async def count(name: str, client: Client, n: int) -> None:
            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress[name].append(done)

            result = await client.call_tool("count", {"n": n}, progress_callback=on_progress)
            assert result.structured_content == {"result": n}

        # both sessions use the same JSON-RPC ids; later calls finish first
        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(add, f"a{i}", client_a, i, 0.3 - 0.1 * i)
                tg.start_soon(add, f"c{i}", client_c, 10 + i, 0.3 - 0.1 * i)
            tg.start_soon(count, "a", client_a, 2)
            tg.start_soon(count, "c", client_c, 3)
        assert results == {"a0": 1000, "a1": 1001, "a2": 1002, "c0": 1010, "c1": 1011, "c2": 1012}
        await eventually(lambda: len(progress["a"]) == 2 and len(progress["c"]) == 3)
        assert progress == {"a": [1.0, 2.0], "c": [1.0, 2.0, 3.0]}


@pytest.mark.anyio
async def test_ids_keep_their_type_and_replies_their_correlation(bridged: tuple[Gateway, str]) -> None:
    gw, url = bridged
    async with raw_peer(url, TOPIC, "raw", gw) as raw, raw_peer(url, TOPIC, "raw2", gw) as raw2:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        first = await raw.send_mcp(
            {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params}, to=("tools",)
        )
        answer = await raw.recv_mcp()
        assert (
            answer["from"] == "tools" and answer["to"] == ["raw"] and answer["correlation_id"] == first["id"]
        )
        assert (
            answer["payload"]["id"] == "init"
            and answer["payload"]["result"]["serverInfo"]["name"] == "stdio-echo"
        )
        await raw.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, to=("tools",))
        # a second participant's initialize is answered from the first one's result
        second = await raw2.send_mcp(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, to=("tools",)
        )
        answer2 = await raw2.recv_mcp()
        assert answer2["correlation_id"] == second["id"] and answer2["payload"]["id"] == 0
        assert answer2["payload"]["result"] == answer["payload"]["result"]
        await raw2.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"}, to=("tools",))

        def call(rid: Any, text: str, delay: float) -> dict[str, Any]:
            arguments = {"a": len(text), "b": 0, "delay": delay}
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "slow_add", "arguments": arguments},
            }

        sent_int = await raw.send_mcp(call(1, "x", 0.2), to=("tools",))
        sent_str = await raw.send_mcp(call("1", "xx", 0.0), to=("tools",))
        sent_other = await raw2.send_mcp(call(1, "xxx", 0.1), to=("tools",))
        replies = {r["correlation_id"]: r for r in [await raw.recv_mcp(), await raw.recv_mcp()]}
        other = await raw2.recv_mcp()
        assert replies[sent_int["id"]]["payload"]["id"] == 1
        assert replies[sent_int["id"]]["payload"]["result"]["structuredContent"] == {"result": 1}
        assert replies[sent_str["id"]]["payload"]["id"] == "1"
        assert replies[sent_str["id"]]["payload"]["result"]["structuredContent"] == {"result": 2}
        assert other["correlation_id"] == sent_other["id"] and other["payload"]["id"] == 1
        assert other["payload"]["result"]["structuredContent"] == {"result": 3}
        assert all(r["to"] == ["raw"] for r in replies.values()) and other["to"] == ["raw2"]
        # a cancelled request is never answered; the bridge keeps serving
        slow = await raw.send_mcp(call(7, "x", 5.0), to=("tools",))
        await raw.send_mcp(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}, to=("tools",)
        )
        fast = await raw.send_mcp(call(8, "xy", 0.0), to=("tools",))
        answer = await raw.recv_mcp()
        assert answer["correlation_id"] == fast["id"] != slow["id"]
        assert [f for f in await raw.frames_within(0.3) if f["kind"] == "mcp"] == []


@pytest.mark.anyio
async def test_run_bridge_until_the_server_exits() -> None:
    gw = Gateway()
    async with run_gateway(gw) as url:
        status: list[int] = []

        async def bridge() -> None:
            status.append(await run_bridge(url, TOPIC, "tools", SERVER))

        async with anyio.create_task_group() as tg, TopicClient(url, TOPIC, "agent-a") as a:
            tg.start_soon(bridge)
            await eventually(lambda: "tools" in a.participants, 20)
            async with Client(a.participant_transport("tools"), mode="legacy") as client:
                result = await client.call_tool("echo", {"text": "hello"})
                assert result.structured_content == {"result": "hello"}
            tg.cancel_scope.cancel()
        # a server that exits ends the bridge with its exit status
        exit_3 = [sys.executable, "-c", "import sys; sys.exit(3)"]
        with anyio.fail_after(20):
            assert await run_bridge(url, TOPIC, "quitter", exit_3) == 3


def test_cli_entries_parse_and_fail_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--gateway",
        "http://127.0.0.1:9",
        "--topic",
        TOPIC,
        "--id",
        "x",
        "--token",
        "t",
        "--",
        sys.executable,
    ]
    assert bridge_cli(argv) == 1
    assert "mcpx-router: " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bridge_cli(["--gateway", "http://127.0.0.1:9", "--topic", TOPIC, "--id", "x"])  # no command
    with pytest.raises(SystemExit):
        gateway_cli(["--token", "no-equals-sign"])
