"""Helpers for the tests of a Router in an MCPx topic: agents, gated tokens, a hand-played server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer

from mcpx_router import EventStream, Reconnect, RouterEvent
from mcpx_router.mcpx import (
    ConnectionEvent,
    ConnectionState,
    Gateway,
    ParticipantServer,
    TopicClient,
    TopicEvent,
    dev_token_provider,
    run_gateway,
    serve_participant,
)

from .mcpx_support import RawPeer, make_server
from .router_support import WAIT

TOPIC = "room"
FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)
"""Reconnect quickly: the tests restart gateways and cut connections on purpose."""


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "c1") -> dict[str, Any]:
    """A Chat Completions tool call as a model sends it."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


@asynccontextmanager
async def agent(
    url: str,
    participant_id: str,
    server: MCPServer | None = None,
    *,
    topic: str = TOPIC,
    reconnect: Reconnect | None = None,
) -> AsyncIterator[tuple[TopicClient, ParticipantServer]]:
    """An in-process participant offering `server`'s tools (by default `add` and `slow_echo`)."""
    client = TopicClient(url, topic, participant_id, reconnect=reconnect)
    async with serve_participant(client, server or make_server(participant_id)) as served, client:
        yield client, served


def numbered_server(name: str, count: int) -> MCPServer:
    """A server with `count` tools `tool_00`, `tool_01`, ...; the last is named `tool.NN`, which is
    not a legal OpenAI name and must be published under a sanitised one."""
    server = MCPServer(name)

    def make(index: int) -> Any:
        def run(x: int) -> str:
            return f"{name}:{index}:{x}"

        return run

    for index in range(count):
        tool_name = f"tool_{index:02d}" if index < count - 1 else f"tool.{index:02d}"
        server.add_tool(make(index), name=tool_name, description=f"Tool {index} of {name}.")
    return server


def blocking_server(name: str, started: anyio.Event) -> MCPServer:
    """A server whose `block` call sets `started` and then never answers."""
    server = make_server(name)

    @server.tool()
    async def block() -> str:
        """Never answer."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    return server


class GatedTokens:
    """A development token provider whose later calls wait until the test opens the gate.

    The first call (joining) goes through. Holding the gate keeps a client from reconnecting
    until the test has arranged the topic as it wants the client to find it.
    """

    def __init__(self, url: str, participant_id: str, topic: str = TOPIC) -> None:
        self._fetch = dev_token_provider(url, participant_id, topic)
        self.gate = anyio.Event()
        self.calls = 0
        self.waiting = anyio.Event()

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls > 1:
            self.waiting.set()
            await self.gate.wait()
        return await self._fetch()


async def play_server(
    peer: RawPeer,
    calls: MemoryObjectSendStream[dict[str, Any]] | None = None,
    *,
    tools: list[dict[str, Any]] | None = None,
    listing: dict[str, Any] | None = None,
) -> None:
    """Answer `initialize` and `tools/list` by hand; hand `tools/call` envelopes to the test.

    `listing` replaces the `tools/list` result (to send a malformed one).
    """
    offered = tools if tools is not None else [{"name": "whoami", "inputSchema": {"type": "object"}}]
    while True:
        frame = await peer.recv_mcp(limit=60)
        payload = frame["payload"]
        method = payload.get("method")
        if "id" not in payload or method is None:
            continue
        result: dict[str, Any]
        if method == "initialize":
            info = {"name": peer.participant_id, "version": "1"}
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": info}
        elif method == "tools/list":
            result = listing if listing is not None else {"tools": offered}
        elif method == "tools/call" and calls is not None:
            await calls.send(frame)
            continue
        else:
            error = {"code": -32601, "message": f"no {method}"}
            reply = {"jsonrpc": "2.0", "id": payload["id"], "error": error}
            await peer.send_mcp(reply, to=(frame["from"],), correlation_id=frame["id"])
            continue
        reply = {"jsonrpc": "2.0", "id": payload["id"], "result": result}
        await peer.send_mcp(reply, to=(frame["from"],), correlation_id=frame["id"])


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class Agents:
    """In-process participants, each in its own task so that any of them can leave at any time."""

    def __init__(self, tg: anyio.abc.TaskGroup, url: str) -> None:
        self._tg = tg
        self.url = url
        self._stops: dict[str, anyio.CancelScope] = {}
        self._done: dict[str, anyio.Event] = {}
        self.clients: dict[str, TopicClient] = {}
        self.servers: dict[str, ParticipantServer] = {}

    async def start(
        self, participant_id: str, server: MCPServer | None = None, *, reconnect: Reconnect | None = None
    ) -> ParticipantServer:
        """Join the topic as `participant_id`, serving `server`; return once connected."""
        served: ParticipantServer = await self._tg.start(self._run, participant_id, server, reconnect)
        return served

    async def _run(
        self,
        participant_id: str,
        server: MCPServer | None,
        reconnect: Reconnect | None,
        *,
        task_status: anyio.abc.TaskStatus[ParticipantServer],
    ) -> None:
        scope = self._stops[participant_id] = anyio.CancelScope()
        done = self._done[participant_id] = anyio.Event()
        try:
            with scope:
                async with agent(self.url, participant_id, server, reconnect=reconnect) as (client, served):
                    self.clients[participant_id] = client
                    self.servers[participant_id] = served
                    task_status.started(served)
                    await anyio.sleep_forever()
        finally:
            done.set()

    async def stop(self, participant_id: str) -> None:
        """Leave the topic (the connection is closed) and return once gone."""
        self._stops[participant_id].cancel()
        await self._done[participant_id].wait()


class RestartableGateway:
    """A gateway on a fixed port that can be stopped and started again (a fresh `Gateway` each time)."""

    def __init__(self, tg: anyio.abc.TaskGroup, port: int) -> None:
        self._tg = tg
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.gateway = Gateway()
        self._stop = anyio.Event()
        self._stopped = anyio.Event()

    async def start(self) -> Gateway:
        self.gateway = Gateway()
        self._stop, self._stopped = anyio.Event(), anyio.Event()
        await self._tg.start(self._run)
        return self.gateway

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            async with run_gateway(self.gateway, port=self.port):
                task_status.started()
                await self._stop.wait()
        finally:
            self._stopped.set()

    async def stop(self) -> None:
        """Close every connection (code 1001) and stop listening."""
        self._stop.set()
        await self._stopped.wait()


async def until_all(
    events: EventStream, *wanted: Callable[[RouterEvent], bool], within: float = WAIT
) -> list[RouterEvent]:
    """Read events until each predicate has matched one (in any order); return every event read."""
    seen: list[RouterEvent] = []
    missing = list(wanted)
    with anyio.fail_after(within):
        async for event in events:
            seen.append(event)
            missing = [want for want in missing if not want(event)]
            if not missing:
                return seen
    raise AssertionError(f"the event stream ended; still waiting for {len(missing)} event(s)")


async def lost_and_back(events: MemoryObjectReceiveStream[TopicEvent], within: float = WAIT) -> None:
    """Wait on a topic client's events until its connection was lost and is back."""
    lost = False
    with anyio.fail_after(within):
        async for event in events:
            if isinstance(event, ConnectionEvent):
                lost = lost or event.state is ConnectionState.LOST
                if lost and event.state is ConnectionState.CONNECTED:
                    return
    raise AssertionError("the topic client closed")
