"""`mcpx-router demo --topic`: an MCPx gateway, participants that come and go, and a Router among them.

Everything runs on 127.0.0.1 and offline: a gateway, two in-process agents served as
participants, one stdio server (`python -m mcpx_router.testing docs`) behind the bridge, and a
Router that joins the topic, publishes every participant's tools as `participant__tool`,
answers a batch of tool calls, and withdraws a participant's tools when it leaves.
"""

from __future__ import annotations

import json
import logging
import sys
import textwrap
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer

from .._console import run_command
from ..mcpx import TopicClient, bridge_stdio_server, run_gateway, serve_participant
from ..peers._events import PeerLeft
from ..peers._router import Router
from ..testing import search_agent, weather_station

__all__ = ["run_topic_demo"]

_ROUTER_ID = "planner"


def run_topic_demo(topic: str = "demo", *, connect_timeout: float = 10.0) -> int:
    """Run the demo in topic `topic`; return the exit status."""
    # Before any MCPServer is made: each would otherwise set up INFO logging of its own (a no-op
    # under the command, whose log handler is in place already).
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    return run_command(lambda: _demo(topic, connect_timeout))


class _Participants:
    """Participants of the demo's topic, each in its own task so that any one can leave."""

    def __init__(self, tg: anyio.abc.TaskGroup, url: str, topic: str) -> None:
        self._tg, self._url, self._topic = tg, url, topic
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._done: dict[str, anyio.Event] = {}

    async def serve(self, participant_id: str, server: MCPServer) -> None:
        await self._tg.start(self._run, participant_id, server, ())

    async def bridge(self, participant_id: str, command: Sequence[str]) -> None:
        await self._tg.start(self._run, participant_id, None, tuple(command))

    async def _run(
        self,
        participant_id: str,
        server: MCPServer | None,
        command: tuple[str, ...],
        *,
        task_status: anyio.abc.TaskStatus[None],
    ) -> None:
        scope = self._scopes[participant_id] = anyio.CancelScope()
        done = self._done[participant_id] = anyio.Event()
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    client = TopicClient(self._url, self._topic, participant_id)
                    # Serve first, join second: the others may ask as soon as they see us join.
                    if server is not None:
                        await stack.enter_async_context(serve_participant(client, server))
                    else:
                        await stack.enter_async_context(bridge_stdio_server(client, command))
                    await stack.enter_async_context(client)
                    task_status.started()
                    await anyio.sleep_forever()
        finally:
            done.set()

    async def leave(self, participant_id: str) -> None:
        self._scopes[participant_id].cancel()
        await self._done[participant_id].wait()


async def _demo(topic: str, connect_timeout: float) -> int:
    began = time.perf_counter()
    async with run_gateway() as url, anyio.create_task_group() as tg:
        print(f"== MCPx gateway on {url}; topic {topic!r} ==")
        participants = _Participants(tg, url, topic)
        await participants.serve("weather", weather_station())
        await participants.serve("search-agent", search_agent())
        await participants.bridge("docs", [sys.executable, "-m", "mcpx_router.testing", "docs"])
        print("  weather       an in-process MCP server, served as a participant")
        print("  search-agent  an in-process MCP server, served as a participant")
        print("  docs          a stdio MCP server behind the bridge (python -m mcpx_router.testing docs)")
        async with Router(call_timeout=30) as router:
            started = time.perf_counter()
            membership = await router.join_topic(url, topic, _ROUTER_ID, handshake_timeout=connect_timeout)
            joined = time.perf_counter() - started
            print(
                f"\nThe Router joined as {_ROUTER_ID!r} and handshook with "
                f"{len(membership.peers)} participants in {joined * 1000:.0f} ms."
            )
            _print_catalogue(router)
            await _answer_batch(router)
            with router.events() as events:
                print("\n== 'weather' leaves the topic ==")
                await participants.leave("weather")
                with anyio.fail_after(10):
                    async for event in events:
                        if isinstance(event, PeerLeft) and event.peer == "weather":
                            print(f"  PeerLeft: {event.reason} (catalogue version {event.version})")
                            break
            names = ", ".join(tool.name for tool in router.tools)
            print(f"  {len(router.tools)} tools remain: {names}")
            [answer] = await router.dispatch([_call("call_9", "weather__forecast", {"city": "Oslo"})])
            print(f"  a late call to weather__forecast is answered:\n    {answer['content']}")
        tg.cancel_scope.cancel()
    print(f"\n(the whole demo took {time.perf_counter() - began:.1f} s)")
    return 0


def _print_catalogue(router: Router) -> None:
    tools = router.tools
    print(f"\n== Merged catalogue: {len(tools)} tools from {len(router.peers)} participants ==")
    for tool in tools:
        print(f"  {tool.name:<34} participant={tool.peer:<13} tool={tool.tool!r}")


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


async def _answer_batch(router: Router) -> None:
    calls = [
        _call("call_1", "weather__forecast", {"city": "Lisbon", "days": 2}),
        _call("call_2", "weather__alerts", {"region": "Norway"}),
        _call("call_3", "search-agent__search", {"query": "MCP tool names"}),
        _call("call_4", "docs__search", {"query": "names"}),
        _call("call_5", router.adapter.public_name("docs", "page.get"), {"path": "docs/mcpx.md"}),
    ]
    print(f"\n== The model asks for {len(calls)} tool calls in one turn ==")
    started = time.perf_counter()
    answers = await router.dispatch(calls)
    elapsed = time.perf_counter() - started
    for call, reply in zip(calls, answers, strict=True):
        name = call["function"]["name"]
        owner = router.adapter.resolve(name).peer
        print(
            f"\n[{reply['tool_call_id']}] {name}({call['function']['arguments']})  -> participant {owner!r}"
        )
        print(textwrap.indent(reply["content"], "    "))
    print(
        f"\n{len(answers)} answers, in call order, in {elapsed * 1000:.0f} ms (the calls ran concurrently)."
    )
