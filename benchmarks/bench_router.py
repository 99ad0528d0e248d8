"""Router: the cost of following one peer's tool-list change, and of dispatching over stdio.

1. Tool-list change in a catalogue of 500 peers x 20 tools. 499 peers are in-process lowlevel
   `Server`s with 20 tools each; the peer whose list changes is a stdio server with 20 tools,
   changed without a notification (a tool is added, then removed, and so on). Then:
   - subject: from the moment the Router is told the list changed (the entry point the
     session's notification handler calls; `refresh_debounce=0`) to the new complete tool list
     (taken in the synchronous `ToolsChanged` callback, after it called
     `get_openai_tools(max_tools=None)`, the whole Chat view of 10,000 tools): re-listing the peer
     (all pages), diffing, swapping its entries into the catalogue, and the next view;
   - baseline: re-listing that one peer alone over the same connection (every page, no
     catalogue work).
   Each round times a block of changes and a block of re-listings, which goes first alternating;
   the ratio is the median over rounds of the blocks' median times. Target ≤ 1.5x: the cost
   follows the peer, not the catalogue (the view reuses the other peers' entries). The changing
   peer is an `MCPServer` (the Python SDK's server, benchmarks/_echo_server.py); rows without a
   target repeat it with the changing peer alone in the Router, and with
   tests/support/tiny_stdio_server.py, a standard-library server that lists in a fraction of the
   time, where the Router's fixed cost per change weighs most.
2. Dispatch over stdio: one tool call through `Router.dispatch` (a Chat Completions tool call,
   arguments as a JSON string) vs `mcp.Client.call_tool` on a connection of its own to a second
   copy of the same stdio `MCPServer`. Sequential calls in blocks, the two alternating, order
   rotated per round; the ratio is the median over rounds of the blocks' median latencies.
   Target ≤ 1.05x.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as mt
from mcp.server import Server

from mcpx_router import InProcessPeer, Router, StdioPeer, ToolsChanged
from mcpx_router._session import list_all_tools

from ._common import Row, Settings, collect, fmt_seconds, median

NAME = "router"

PEERS = 500
TOOLS_PER_PEER = 20
CHANGE_TARGET = 1.5
DISPATCH_TARGET = 1.05
HERE = Path(__file__).resolve().parent
TINY = HERE.parent / "tests" / "support" / "tiny_stdio_server.py"
ECHO = HERE / "_echo_server.py"
ARGUMENTS = {"text": "hello", "times": 2}


@dataclass(frozen=True)
class Changing:
    """A stdio peer with 20 tools whose list a tool call changes without a notification."""

    label: str
    peer: StdioPeer
    change: Callable[[int], tuple[str, dict[str, Any]]]
    """The n-th change: (tool, arguments)."""


SDK_SERVER = Changing(
    "MCPServer",
    StdioPeer(sys.executable, [str(ECHO), "--tools", str(TOOLS_PER_PEER - 2)]),
    lambda n: ("toggle", {"name": "extra"}),
)
STDLIB_SERVER = Changing(
    "standard-library server",
    StdioPeer(sys.executable, [str(TINY), "--tools", str(TOOLS_PER_PEER - 5)]),
    lambda n: ("add_tool" if n % 2 == 0 else "remove_tool", {"name": "extra", "quiet": True}),
)


def _tools(peer: int) -> list[mt.Tool]:
    return [
        mt.Tool(
            name=f"tool_{i}",
            description=f"Tool {i} of peer {peer}: look something up.",
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "title": "Query"},
                    "region": {"type": "string", "enum": ["eu", "us", "apac"]},
                    "limit": {"type": "integer", "default": 10},
                },
                "required": ["query", "region"],
            },
        )
        for i in range(TOOLS_PER_PEER)
    ]


def _static_server(peer: int) -> Server[Any]:
    tools = _tools(peer)

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    return Server(f"peer-{peer}", on_list_tools=list_tools)


async def _change_rounds(
    router: Router, changing: Changing, rounds: int, block: int
) -> tuple[list[float], list[float], list[float]]:
    """Per round, `block` timed changes and `block` timed re-listings; the per-round ratios."""
    member = router._members["changing"]  # the benchmark drives the notification entry point itself
    changed = anyio.Event()
    updated_at = 0.0
    changes = 0
    views = 0

    def on_event(event: object) -> None:
        # Called as the catalogue is updated: the time is taken here, not when this task wakes,
        # once the new list is built, as a host re-sending its tools would build it.
        nonlocal updated_at, views
        if isinstance(event, ToolsChanged) and event.peer == "changing":
            views += len(router.get_openai_tools(max_tools=None)) > 0
            updated_at = time.perf_counter()
            changed.set()

    router._hub._callback = on_event

    async def notified() -> float:
        nonlocal changed, changes
        tool, arguments = changing.change(changes)
        changes += 1
        outcome = await router.call(f"changing__{tool}", arguments)
        assert not outcome.is_error, outcome
        changed = anyio.Event()
        start = time.perf_counter()
        member.mark_changed()
        await changed.wait()
        return updated_at - start

    async def relisted() -> float:
        start = time.perf_counter()
        await list_all_tools(member.link, peer="changing", refresh=True)
        return time.perf_counter() - start

    subject: list[float] = []
    baseline: list[float] = []
    ratios: list[float] = []
    for index in range(rounds + 1):
        collect()
        first, second = (notified, relisted) if index % 2 == 0 else (relisted, notified)
        times = {first: [await first() for _ in range(block)], second: [await second() for _ in range(block)]}
        if index == 0:
            continue  # warm-up
        subject += times[notified]
        baseline += times[relisted]
        ratios.append(median(times[notified]) / median(times[relisted]))
    assert views == changes, (views, changes)
    return subject, baseline, ratios


async def _change(settings: Settings, changing: Changing, peers: int) -> tuple[float, float, float]:
    """(re-listing alone, notification to catalogue, median ratio)."""
    rounds, block = (8, 6) if settings.quick else (30, 10)
    async with Router(refresh_debounce=0) as router:
        started = time.perf_counter()
        await router.join_all({f"p{i}": InProcessPeer(_static_server(i)) for i in range(peers - 1)})
        await router.join("changing", changing.peer)
        joined = time.perf_counter() - started
        print(
            f"  {peers} peer(s), {len(router.tools):,} tools joined in {joined:.1f} s; "
            f"{rounds} rounds x {block} changes and {block} re-listings of the {changing.label}"
        )
        subject, baseline, ratios = await _change_rounds(router, changing, rounds, block)
    ratio = median(ratios)
    print(
        f"  notification -> event + whole Chat view {fmt_seconds(median(subject))} vs re-listing alone "
        f"{fmt_seconds(median(baseline))}: median ratio {ratio:.3f}x"
    )
    return median(baseline), median(subject), ratio


async def _dispatch(settings: Settings) -> tuple[float, float, float]:
    """(mcp.Client.call_tool, Router.dispatch, median ratio) latencies."""
    rounds, block = (8, 50) if settings.quick else (30, 100)
    params = mcp.StdioServerParameters(command=sys.executable, args=[str(ECHO)])
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "echo__echo", "arguments": json.dumps(ARGUMENTS)},
    }
    async with mcp.Client(params) as client, Router() as router:
        await router.join("echo", StdioPeer(sys.executable, [str(ECHO)]))
        direct = (await client.call_tool("echo", ARGUMENTS)).content[0]
        answer = await router.dispatch([call])
        assert answer[0]["content"] == getattr(direct, "text", None), (answer, direct)
        variants: dict[str, Callable[[], Awaitable[object]]] = {
            "direct": lambda: client.call_tool("echo", ARGUMENTS),
            "router": lambda: router.dispatch([call]),
        }
        samples: dict[str, list[list[float]]] = {name: [] for name in variants}
        order = list(variants)
        for name in order:  # warm-up
            for _ in range(block):
                await variants[name]()
        for index in range(rounds):
            collect()
            for name in order[index % 2 :] + order[: index % 2]:
                latencies: list[float] = []
                for _ in range(block):
                    start = time.perf_counter()
                    await variants[name]()
                    latencies.append(time.perf_counter() - start)
                samples[name].append(latencies)
    ratios = [median(r) / median(d) for r, d in zip(samples["router"], samples["direct"], strict=True)]
    pooled = {name: median([x for b in blocks for x in b]) for name, blocks in samples.items()}
    print(f"  {rounds} rounds x {block} calls per variant")
    return pooled["direct"], pooled["router"], median(ratios)


def _row(metric: str, baseline: float, subject: float, ratio: float, target: float | None) -> Row:
    return Row(
        NAME,
        metric,
        fmt_seconds(baseline),
        fmt_seconds(subject),
        f"{ratio:.3f}x",
        "—" if target is None else f"≤ {target}x",
        None if target is None else ratio <= target,
    )


async def run(settings: Settings) -> list[Row]:
    rows: list[Row] = []
    change = f"one peer's tool list changes, {PEERS} peers x {TOOLS_PER_PEER} tools"
    print(f"{change}:")
    rows.append(
        _row(
            f"{change}: notification to event + the whole Chat view vs re-listing that peer",
            *await _change(settings, SDK_SERVER, PEERS),
            CHANGE_TARGET,
        )
    )
    print("the same, the changing peer alone in the Router:")
    rows.append(
        _row(
            "the same, the changing peer alone in the Router",
            *await _change(settings, SDK_SERVER, 1),
            None,
        )
    )
    print(f"the same, {PEERS} peers, the changing peer a standard-library server:")
    rows.append(
        _row(
            f"the same, {PEERS} peers, the changing peer a standard-library server (fast listing)",
            *await _change(settings, STDLIB_SERVER, PEERS),
            None,
        )
    )
    print("dispatch over stdio:")
    direct, routed, ratio = await _dispatch(settings)
    print(
        f"  Router.dispatch {fmt_seconds(routed)} vs mcp.Client.call_tool {fmt_seconds(direct)}: {ratio:.3f}x"
    )
    rows.append(
        _row(
            "sequential latency per call over stdio, Router.dispatch vs mcp.Client.call_tool",
            direct,
            routed,
            ratio,
            DISPATCH_TARGET,
        )
    )
    return rows
