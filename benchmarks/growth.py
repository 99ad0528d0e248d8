"""Catalogue growth: registration + the Chat view, and memory per tool, from 10 x 10 to 2,000 x 20.

The method of catalogue.py's first two measurements (see its docstring), repeated at other
sizes: each peer its own in-process `MCPServer` with its own `mcp.Client`, the first `tools`
of the same 20 definitions. The ratios to the plain loop should stay flat as the catalogue
grows: nothing the adapter does per tool may cost more in a larger catalogue. `--quick` runs the
two small sizes only (500 x 20 is the catalogue benchmark's own row); a full run adds 2,000 x 20.
Run it with `python -m benchmarks growth`.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import mcp
from mcp.server.mcpserver import MCPServer

from ._common import Row, Settings, fmt_bytes, fmt_seconds, median
from .catalogue import compare, memory, tool_definitions

NAME = "growth"

QUICK_SIZES = ((10, 10), (100, 20))
SIZES = ((10, 10), (100, 20), (2_000, 20))


async def run(settings: Settings) -> list[Row]:
    """One registration row and one memory row per size."""
    rows: list[Row] = []
    rounds = 2 if settings.quick else 5
    for peer_count, tool_count in QUICK_SIZES if settings.quick else SIZES:
        started = time.perf_counter()
        definitions = tool_definitions()[:tool_count]
        count = peer_count * tool_count
        size = f"{peer_count:,}x{tool_count}"
        async with AsyncExitStack() as stack:
            peers = [
                (
                    f"peer{i:04d}",
                    await stack.enter_async_context(mcp.Client(MCPServer(f"p{i}", tools=definitions))),
                )
                for i in range(peer_count)
            ]
            connected = time.perf_counter() - started
            print(f"growth, {size} tools ({peer_count:,} peers connected in {connected:.1f} s):")
            plain, subject = await compare(peers, rounds, size, count)
            ratio = median(subject.ratios(plain))
            mem = await memory(peers)
        print(
            f"  {size}: plain {fmt_seconds(plain.median)}, adapter {fmt_seconds(subject.median)} -> "
            f"{ratio:.3f}x; memory per tool {fmt_bytes(mem.adapter / count)} vs the plain list's "
            f"{fmt_bytes(mem.plain / count)}"
        )
        rows.append(
            Row(
                NAME,
                f"register {size} tools + get_openai_tools() (diagnostic)",
                fmt_seconds(plain.median),
                fmt_seconds(subject.median),
                f"{ratio:.3f}x",
                "—",
                None,
            )
        )
        rows.append(
            Row(
                NAME,
                f"retained memory per tool, {size} (diagnostic)",
                fmt_bytes(mem.plain / count),
                fmt_bytes(mem.adapter / count),
                f"{mem.adapter / mem.plain:.2f}x",
                "—",
                None,
            )
        )
    return rows
