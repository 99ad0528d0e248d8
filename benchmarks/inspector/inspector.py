"""What the inspector costs the Router, and how fast its endpoints answer for a large catalogue.

(a) A Router (statistics kept) with one in-process peer (the dispatch benchmark's `echo`) and an
    inspector served on 127.0.0.1. Blocks of `router.call("echo__echo", ...)` alternate between
    no page open and one page listening to the event stream (an SSE client in another process,
    as a browser is, reading every event; each call adds one `CallFinished`); order alternated.
    The ratio is the median over rounds of (median latency with a page / without). Without a
    page the Router runs the very code it runs with no inspector at all (nothing is subscribed),
    so that side is the baseline. Target: ≤ 1.25x with a page open.
(b) One peer with 5,000 tools: the time each JSON endpoint takes to answer over HTTP (median of
    several requests): the overview, the three tool lists with their size, the name table, a
    request ranked. Target: each under 1 s, the page's budget for staying responsive.
(c) 100 events a second for 3 s into a page: the events the page received, and the ring's size
    (bounded by `events`, 2000).
(d) The page in headless Chromium (`_inspector_page`), 5,000 tools, 100 calls a second through
    the Router: the time each view takes to show, and with it open, the main thread's longest
    task and the longest gap between two frames. Target: no task and no gap over 200 ms once
    a view is shown (a frozen page is felt from about a tenth to a fifth of a second).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as mt
import sniffio
from mcp.server import Server

from mcpx_router import InProcessPeer, Router
from mcpx_router.inspector import serve

from .._common import Row, Settings, collect, fmt_seconds, median
from ..dispatch import echo_server
from . import _inspector_page

NAME = "inspector"
TARGET_CALL = 1.25
TARGET_ENDPOINT = 1.0
TARGET_FRAME_MS = 200.0


READER = """
import sys, httpx2
with httpx2.stream("GET", sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]}, timeout=None) as r:
    for line in r.iter_lines():
        if line.startswith("event: hello"):
            print("ready", flush=True)
"""


@asynccontextmanager
async def _browser(url: str, token: str) -> AsyncIterator[None]:
    """A page in another process, as a browser is: it reads every event of the stream."""
    process = await anyio.open_process([sys.executable, "-c", READER, f"{url}api/events", token])
    try:
        assert process.stdout is not None
        with anyio.fail_after(30):
            await process.stdout.receive()
        yield
    finally:
        process.kill()
        await process.wait()
        await process.aclose()


@asynccontextmanager
async def _page(client: httpx2.AsyncClient, seen: list[int]) -> AsyncIterator[None]:
    """An SSE reader in this process counting every event, open for the block."""
    ready = anyio.Event()

    async def read() -> None:
        async with client.stream("GET", "/api/events") as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    if '"type"' in line:
                        seen[0] += 1
                    else:
                        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await ready.wait()
        yield
        tg.cancel_scope.cancel()


@asynccontextmanager
async def _stalls() -> AsyncIterator[list[float]]:
    """The event loop's stalls while the block runs: how much later than asked a 1 ms sleep woke."""
    stalls = [0.0]

    async def probe() -> None:
        while True:
            start = time.perf_counter()
            await anyio.sleep(0.001)
            stalls.append(time.perf_counter() - start - 0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe)
        yield stalls
        tg.cancel_scope.cancel()


async def _block(router: Router, n: int) -> float:
    clock = time.perf_counter_ns
    out = []
    for _ in range(n):
        start = clock()
        await router.call("echo__echo", {"text": "hi"})
        out.append((clock() - start) / 1e9)
    return median(out)


def _many_tools(count: int) -> Server[Any]:
    tools = [
        mt.Tool(
            name=f"tool_{i:04d}",
            description=f"Tool number {i}: looks up record {i} in table {i % 37} by key and date.",
            input_schema={
                "type": "object",
                "properties": {"key": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
                "required": ["key"],
            },
        )
        for i in range(count)
    ]

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(text="ok")])

    return Server("many", on_list_tools=list_tools, on_call_tool=call_tool)


async def run(settings: Settings) -> list[Row]:
    rounds, block = (6, 40) if settings.quick else (20, 100)
    rows: list[Row] = []
    seen = [0]
    async with Router(stats=True) as router:
        await router.join("echo", InProcessPeer(echo_server()))
        async with serve(router) as (inspector, url):
            base, token = url.split("?")[0], inspector.token or ""
            await _block(router, block)
            without: list[float] = []
            with_page: list[float] = []
            print(f"(a) {rounds} rounds x {block} calls, no page and one page listening, order rotated")
            for index in range(rounds):
                collect()
                if index % 2:
                    async with _browser(base, token):
                        with_page.append(await _block(router, block))
                    without.append(await _block(router, block))
                else:
                    without.append(await _block(router, block))
                    async with _browser(base, token):
                        with_page.append(await _block(router, block))
    ratios = [p / b for p, b in zip(with_page, without, strict=True)]
    ratio = median(ratios)
    shown = f"{fmt_seconds(median(with_page))} with a page vs {fmt_seconds(median(without))}"
    print(f"  {shown}; per-round ratios {min(ratios):.3f}-{max(ratios):.3f}, median {ratio:.3f}x")
    rows.append(
        Row(
            NAME,
            "router.call with a page listening to the events, against none",
            fmt_seconds(median(without)),
            fmt_seconds(median(with_page)),
            f"{ratio:.3f}x",
            f"≤ {TARGET_CALL}x",
            ratio <= TARGET_CALL,
        )
    )

    count = 5000
    async with Router() as router:
        await router.join("many", InProcessPeer(_many_tools(count)))
        async with (
            serve(router) as (inspector, url),
            httpx2.AsyncClient(base_url=url.split("?")[0], timeout=60) as client,
        ):
            await client.get(url)
            print(f"(b) the endpoints with {count} tools")
            for path, params in (
                ("/api/overview", {}),
                ("/api/model", {}),
                ("/api/names", {}),
                ("/api/select", {"q": "record 4242 in table 2"}),
            ):
                times = []
                size = 0
                async with _stalls() as stalled:
                    for _ in range(3 if settings.quick else 7):
                        start = time.perf_counter()
                        response = await client.get(path, params=params)
                        times.append(time.perf_counter() - start)
                        size = len(response.content)
                        assert response.status_code == 200, response.text
                took = median(times)
                print(
                    f"  {path}: {fmt_seconds(took)} (the first {fmt_seconds(times[0])}), {size / 1e6:.1f} MB;"
                    f" the event loop's longest stall {fmt_seconds(max(stalled))}"
                )
                rows.append(
                    Row(
                        NAME,
                        f"GET {path}, {count} tools: the event loop's longest stall over the requests",
                        "—",
                        fmt_seconds(max(stalled)),
                        "—",
                        "—",
                        None,
                    )
                )
                rows.append(
                    Row(
                        NAME,
                        f"GET {path} with {count} tools ({size / 1e6:.1f} MB)",
                        "—",
                        fmt_seconds(took),
                        "—",
                        f"< {TARGET_ENDPOINT:g} s",
                        took < TARGET_ENDPOINT,
                    )
                )

            print("(c) 100 events a second for 3 s into one page")
            seen[0] = 0
            async with _page(client, seen):
                for n in range(300):
                    inspector.feed.add("TryCall", {"name": f"t{n}", "peer": "many", "ms": 1.0})
                    await anyio.sleep(0.01)
                await anyio.sleep(0.5)
            ring = len(json.dumps(inspector.feed.after(0)[1]))
            print(f"  the page read {seen[0]} of 300 events; the ring holds {ring / 1e3:.0f} kB")
            rows.append(
                Row(
                    NAME,
                    "events read by a page at 100 a second (of 300)",
                    "300",
                    str(seen[0]),
                    "—",
                    "—",
                    None,
                )
            )
    rows.extend(await _in_a_browser(count, 3.0 if settings.quick else 10.0))
    return rows


async def _in_a_browser(count: int, window: float) -> list[Row]:
    print(f"(d) the page in headless Chromium, {count} tools, 100 calls a second, {window:g} s per view")
    if sniffio.current_async_library() != "asyncio":
        print("  Playwright's async API runs on asyncio only: not measured on this backend")
        return []
    if _inspector_page.chromium() is None:
        print("  no chromium on PATH (python tests/support/_servers.py installs it): not measured")
        return [Row(NAME, "the page in headless Chromium", "—", "no chromium", "—", "—", False)]
    async with Router(stats=True) as router:
        await router.join("many", InProcessPeer(_many_tools(count)))
        async with serve(router) as (_, url):
            figures = await _inspector_page.measure(router, url, "many__tool_0042", count, window)
    rows = []
    for view, took, seen in figures:
        worst = max(seen["longest"], seen["gap"])
        rows.append(
            Row(
                NAME,
                f"page, {view}: shown (its longest task), then longest task / frame gap"
                f" at {seen['calls']:.0f} calls/s",
                "—",
                f"{took * 1e3:.0f} ms ({seen['showing']:.0f} ms), then {seen['longest']:.0f} /"
                f" {seen['gap']:.0f} ms",
                "—",
                f"≤ {TARGET_FRAME_MS:g} ms",
                worst <= TARGET_FRAME_MS,
            )
        )
    return rows
