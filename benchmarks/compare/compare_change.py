"""Competitors (`python -m benchmarks --compare`): one peer's tool list changes in a 500 x 20 catalogue.

The `router` benchmark's question, asked of every library that keeps tool lists between model
turns: how much does it cost to get the next OpenAI tool list after one peer's tools changed?
500 in-process `MCPServer`s x 20 tools (those of `catalogue.py`); peer 0 gains a tool, then
loses it again, and so on (`add_tool`/`remove_tool`, no notification sent). Each side is then
told the way its notification handler would tell it, and makes its next tool list:

- floor: re-listing peer 0 alone on its `mcp.Client` (every page), no catalogue work;
- mcpx_router: `await adapter.refresh_peer("peer000")` (what the Router runs on the peer's
  `tools/list_changed`), then `get_openai_tools(max_tools=None)`, rebuilt for the new version;
- each competitor with a tool-list cache (`_rival_catalogues.py`): `forget(0)`, then its whole
  list (the other 499 peers come from its cache, peer 0 is listed again).

fastmcp keeps no tool list between calls, so it has no change to follow and is skipped here.
Per round, a block of changes per side in rotated order; the ratio is the median over rounds of
(the side's block median / the floor's block median). No targets.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import mcp
from mcp.server.mcpserver import MCPServer

from mcpx_router import OpenAIPeerToolAdapter

from .. import catalogue
from .._common import Row, Settings, collect, fmt_seconds, median
from . import _rival_catalogues

NAME = "router"
EXTRA = "extra_lookup"


def _extra(query: str) -> str:
    """A tool that comes and goes."""
    return query


async def run(settings: Settings) -> list[Row]:
    """The change rows of every competitor with a tool-list cache, against re-listing the peer."""
    rounds, block = (4, 5) if settings.quick else (15, 10)
    definitions = catalogue.tool_definitions()
    servers = [
        (f"peer{i:03d}", MCPServer(f"peer{i:03d}", tools=list(definitions))) for i in range(catalogue.PEERS)
    ]
    changing = servers[0][1]
    present = False

    def change() -> None:
        nonlocal present
        if present:
            changing.remove_tool(EXTRA)
        else:
            changing.add_tool(_extra, name=EXTRA)
        present = not present

    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(mcp.Client(s)) for _, s in servers]
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        for (peer_id, _), client in zip(servers, clients, strict=True):
            await adapter.add_peer(peer_id, client)
        rivals = await _rival_catalogues.open_builders(stack, servers, settings.backend, cached=True)

        async def ours() -> int:
            await adapter.refresh_peer("peer000")
            return len(adapter.get_openai_tools(max_tools=None))

        sides: dict[str, Callable[[], Awaitable[Any]]] = {
            "re-list the peer": lambda: catalogue.list_tools(clients[0]),
            "mcpx_router": ours,
        }
        for name, rival in rivals.items():
            if rival.forget is None:
                print(f"  {name}: skipped, it keeps no tool list between model turns")
                continue
            sides[name] = _follow(rival)
        await _check(sides, change, rivals, ours)
        times: dict[str, list[list[float]]] = {name: [] for name in sides}
        order = list(sides)
        for index in range(rounds):
            shift = index % len(order)
            for name in order[shift:] + order[:shift]:
                collect()
                times[name].append([])
                for _ in range(block):
                    change()
                    start = time.perf_counter()
                    await sides[name]()
                    times[name][-1].append(time.perf_counter() - start)
            print(
                f"  round {index + 1}: "
                + ", ".join(f"{n} {fmt_seconds(median(t[-1]))}" for n, t in times.items())
            )

    rows: list[Row] = []
    floor = times["re-list the peer"]
    base = median([x for b in floor for x in b])
    for name in order[1:]:
        subject = median([x for b in times[name] for x in b])
        ratio = median([median(s) / median(f) for s, f in zip(times[name], floor, strict=True)])
        print(f"  {name:12s} {fmt_seconds(subject)} vs re-listing the peer {fmt_seconds(base)}: {ratio:.2f}x")
        rows.append(
            Row(
                NAME,
                f"one peer's tools change, {catalogue.PEERS}x{catalogue.TOOLS_PER_PEER} tools: "
                f"to the next OpenAI tool list, {name}",
                fmt_seconds(base),
                fmt_seconds(subject),
                f"{ratio:.2f}x",
                "—",
                None,
            )
        )
    return rows


def _follow(rival: _rival_catalogues.Rival) -> Callable[[], Awaitable[list[Any]]]:
    forget = rival.forget
    assert forget is not None

    async def follow() -> list[Any]:
        forget(0)
        return await rival.build()

    return follow


async def _check(
    sides: dict[str, Callable[[], Awaitable[Any]]],
    change: Callable[[], None],
    rivals: dict[str, _rival_catalogues.Rival],
    ours: Callable[[], Awaitable[int]],
) -> None:
    """Every side sees the added tool after a change (and warms up), before anything is timed."""
    count = catalogue.PEERS * catalogue.TOOLS_PER_PEER
    for name, rival in rivals.items():
        assert len(await rival.build()) == count, name  # fills the caches
    change()  # the extra tool is there
    assert await ours() == count + 1
    for name in sides:
        if name in rivals:
            made = await sides[name]()
            assert len(made) == count + 1, (name, len(made))
    change()  # and gone again
    assert await ours() == count
    for name in sides:
        await sides[name]()
