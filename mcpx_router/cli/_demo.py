"""`mcpx-router demo`: bundled peers, their merged catalogue, and tool calls answered by the right peer."""

from __future__ import annotations

import json
import math
import os
import sys
import textwrap
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import Client

from .._adapter import OpenAIPeerToolAdapter
from .._console import run_command
from ..testing import demo_peers

_DEFAULT_PROMPT = (
    "What's the weather in Lisbon and Oslo for the next two days, are there alerts in Norway, "
    "and what do the web and our docs say about MCP tool names?"
)


def run_demo(*, offline: bool = False, prompt: str | None = None, connect_timeout: float = 10.0) -> int:
    """Run the demo; with OPENAI_API_KEY set (and not offline), talk to a real model."""
    live = not offline and bool(os.environ.get("OPENAI_API_KEY"))
    return run_command(lambda: _demo(live, prompt or _DEFAULT_PROMPT, connect_timeout))


async def _demo(live: bool, prompt: str, connect_timeout: float) -> int:
    # The deadline covers the handshakes only; it sits outside the clients, which hold task groups.
    with anyio.CancelScope(deadline=anyio.current_time() + connect_timeout) as handshakes:
        async with AsyncExitStack() as stack:
            adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(call_timeout=30))
            for peer_id, server in demo_peers().items():
                client = await stack.enter_async_context(Client(server))
                await adapter.add_peer(peer_id, client)
            handshakes.deadline = math.inf
            _print_catalogue(adapter)
            if live:
                return await _conversation(adapter, prompt)
            await _scripted_turn(adapter)
            return 0
    print(f"mcpx-router: the bundled peers did not start within {connect_timeout:g} s", file=sys.stderr)
    return 1


def _print_catalogue(adapter: OpenAIPeerToolAdapter) -> None:
    tools = adapter.tools
    print(
        f"== Merged catalogue: {len(tools)} tools from {len(adapter.peers)} peers "
        f"(version {adapter.version}) =="
    )
    for tool in tools:
        print(f"  {tool.name:<28} peer={tool.peer:<13} tool={tool.tool!r}")
        print(textwrap.indent(textwrap.fill(tool.description, 90), " " * 4))
    print("\nOne tool as the model receives it (Chat Completions format):")
    first = next(t for t in adapter.get_openai_tools() if t["function"]["name"] == "weather__forecast")
    print(textwrap.indent(json.dumps(first, indent=2, ensure_ascii=False), "  "))


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


async def _scripted_turn(adapter: OpenAIPeerToolAdapter) -> None:
    """Answer a batch of parallel tool calls, as a model would send them in one turn."""
    calls = [
        _call("call_1", "weather__forecast", {"city": "Lisbon", "days": 2}),
        _call("call_2", "weather__forecast", {"city": "Oslo", "units": {"temperature": "fahrenheit"}}),
        _call("call_3", "weather__alerts", {"region": "Norway"}),
        _call("call_4", "search-agent__search", {"query": "MCP tool names"}),
        _call("call_5", "docs__search", {"query": "names"}),
        _call("call_6", adapter.public_name("docs", "page.get"), {"path": "docs/peers.md"}),
        _call("call_7", "weather__forcast", {"city": "Rome"}),
        _call("call_8", "docs__search", '{"query": "install'),
    ]
    print(f"\n== The model asks for {len(calls)} tool calls in one turn (two of them mistaken) ==")
    started = time.perf_counter()
    answers = await adapter.dispatch(calls)
    elapsed = time.perf_counter() - started
    for call, reply in zip(calls, answers, strict=True):
        name = call["function"]["name"]
        try:
            served_by = f"served by peer {adapter.resolve(name).peer!r}"
        except LookupError:
            served_by = "no such tool"
        print(f"\n[{reply['tool_call_id']}] {name}({call['function']['arguments']})  -> {served_by}")
        print(textwrap.indent(reply["content"], "    "))
    print(
        f"\n{len(answers)} answers, in call order, in {elapsed * 1000:.0f} ms "
        "(the peers each take ~50 ms per call: the calls ran concurrently)."
    )


async def _conversation(adapter: OpenAIPeerToolAdapter, prompt: str) -> int:
    from openai import AsyncOpenAI

    from ..loop import run_chat

    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    messages: list[Any] = [
        {"role": "system", "content": "Use the tools to answer. Each tool name says which peer serves it."},
        {"role": "user", "content": prompt},
    ]
    print(f"\n== Conversation with {model} ==\nuser: {prompt}")
    result = await run_chat(AsyncOpenAI(), adapter, model=model, messages=messages, max_turns=8)
    for message in result.messages[len(messages) :]:
        for call in message.get("tool_calls") or ():
            name = call["function"]["name"]
            served = adapter.resolve(name).peer if name in {t.name for t in adapter.tools} else "no such tool"
            print(f"  tool call {name}({call['function']['arguments']}) -> peer {served}")
    if result.stopped != "answer":
        print(f"\n(stopped after {result.turns} turns)")
        return 1
    print(f"\nassistant: {result.text}")
    return 0
