"""Competitors (`python -m benchmarks --compare`): the catalogue benchmark's tool list from other libraries.

The same 500 in-process `MCPServer`s x 20 tools as `catalogue.py`. Per round, in rotated order:
the floor (the plain loop of `catalogue.py`: `list_tools` on an `mcp.Client` per peer, then a
deep copy without `default`s), the adapter (a fresh adapter, `add_peer` for each client,
`get_openai_tools(max_tools=None)`), and each competitor's own listing and conversion as
`_rival_catalogues.py` describes, over its own sessions to the same servers. Every side lists
every peer in every run and produces 10,000 Chat Completions tools. The ratio is the median of
per-round ratios against the floor. `ClientSessionGroup` is left out: it keeps a name-to-tool
map, not an OpenAI tool list, and refuses the same tool name from two servers unless given a
naming hook. No targets.
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

NAME = catalogue.NAME


async def run(settings: Settings) -> list[Row]:
    """The catalogue rows of every competitor found, against the plain loop, beside the adapter's."""
    rounds = 2 if settings.quick else 5
    count = catalogue.PEERS * catalogue.TOOLS_PER_PEER
    definitions = catalogue.tool_definitions()
    servers = [
        (f"peer{i:03d}", MCPServer(f"peer{i:03d}", tools=list(definitions))) for i in range(catalogue.PEERS)
    ]
    async with AsyncExitStack() as stack:
        peers = [(peer_id, await stack.enter_async_context(mcp.Client(s))) for peer_id, s in servers]

        async def ours() -> list[Any]:
            async with OpenAIPeerToolAdapter() as adapter:
                return list(await catalogue.adapter_catalogue(adapter, peers))

        started = time.perf_counter()
        sides: dict[str, Callable[[], Awaitable[list[Any]]]] = {
            "plain loop": lambda: catalogue.plain_catalogue(peers),
            "mcpx_router": ours,
            **{
                name: rival.build
                for name, rival in (
                    await _rival_catalogues.open_builders(stack, servers, settings.backend)
                ).items()
            },
        }
        print(f"  all sessions connected in {fmt_seconds(time.perf_counter() - started)}")
        for name, build in sides.items():  # warm-up, and every side makes the whole list
            made = await build()
            assert len(made) == count, (name, len(made))
            print(f"  {name}: first tool {made[0]}")
        times: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides)
        for index in range(rounds):
            shift = index % len(order)
            for name in order[shift:] + order[:shift]:
                collect()
                start = time.perf_counter()
                await sides[name]()
                times[name].append(time.perf_counter() - start)
            print(f"  round {index + 1}: " + ", ".join(f"{n} {fmt_seconds(t[-1])}" for n, t in times.items()))

    rows: list[Row] = []
    base = median(times["plain loop"])
    for name in order[1:]:
        ratio = median([mine / floor for mine, floor in zip(times[name], times["plain loop"], strict=True)])
        subject = median(times[name])
        print(f"  {name:12s} {fmt_seconds(subject)} vs plain loop {fmt_seconds(base)}: {ratio:.3f}x")
        rows.append(
            Row(
                NAME,
                f"list {catalogue.PEERS}x{catalogue.TOOLS_PER_PEER} tools + OpenAI tool list, {name}",
                fmt_seconds(base),
                f"{fmt_seconds(subject)} ({fmt_seconds(subject / count)}/tool)",
                f"{ratio:.3f}x",
                "—",
                None,
            )
        )
    return rows
