"""The inspector's page in headless Chromium (Playwright) with 5,000 tools and 100 calls a second.

While real calls stream through the Router (each one a `CallFinished` event for the page), it
measures the time each view takes to show (from the click to its content on screen, as Playwright
sees it) and, for a few seconds with each view open, the main thread's longest task (the
browser's `longtask` entries) and the longest gap between two animation frames (what a person
feels as a frozen page). Chromium is the `chromium` on PATH (or MCPX_TEST_CHROMIUM), as the tests
install it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcpx_router import Router

# Installed before the page's own script: long tasks and the gaps between animation frames.
PROBE = """
window.__probe = { tasks: [], gaps: [] };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__probe.tasks.push(entry.duration);
}).observe({ type: "longtask", buffered: true });
let last = performance.now();
const tick = (now) => { window.__probe.gaps.push(now - last); last = now; requestAnimationFrame(tick); };
requestAnimationFrame(tick);
"""
READ = """() => {
  const p = window.__probe;
  const out = { tasks: p.tasks.length, longest: Math.max(0, ...p.tasks),
    blocked: p.tasks.reduce((a, b) => a + b, 0), gap: Math.max(0, ...p.gaps), frames: p.gaps.length };
  p.tasks = []; p.gaps = [];
  return out;
}"""
WAIT_MS = 120_000
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def chromium() -> str | None:
    return os.environ.get("MCPX_TEST_CHROMIUM") or shutil.which("chromium")


def describe(took: float, figures: dict[str, float]) -> str:
    return (
        f"shown in {took * 1e3:.0f} ms (its longest task {figures['showing']:.0f} ms); then the"
        f" longest task {figures['longest']:.0f} ms, the longest frame gap {figures['gap']:.0f} ms,"
        f" {figures['blocked']:.0f} ms in long tasks,"
        f" at {figures['calls']:.0f} calls/s"
    )


async def _stream(router: Router, tool: str, rate: float, made: list[int]) -> None:
    """`rate` calls a second through the Router, on a fixed schedule, until cancelled."""
    start = time.perf_counter()
    while True:
        await router.call(tool, {"key": "k"})
        made[0] += 1
        delay = start + made[0] / rate - time.perf_counter()
        await anyio.sleep(max(0.0, delay))


async def measure(
    router: Router, url: str, tool: str, count: int, window: float
) -> list[tuple[str, float, dict[str, float]]]:
    """(view, seconds to show it, the probe's figures over `window` s with it open) per view."""
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    assert executable, "no chromium on PATH (python tests/support/_servers.py installs it)"
    out: list[tuple[str, float, dict[str, float]]] = []
    made = [0]
    async with async_playwright() as playwright, anyio.create_task_group() as tg:
        browser = await playwright.chromium.launch(executable_path=executable, args=FLAGS)
        page = await browser.new_page(viewport={"width": 1200, "height": 900})
        await page.add_init_script(PROBE)
        tg.start_soon(_stream, router, tool, 100.0, made)

        async def view(name: str, show: Callable[[], Awaitable[Any]]) -> None:
            if name != "peers, its tools open":  # no page yet to read before the first
                await page.evaluate(READ)
            start = time.perf_counter()
            await show()
            took = time.perf_counter() - start
            showing = await page.evaluate(READ)  # then the window starts, the view shown
            before = made[0]
            await anyio.sleep(window)
            figures = await page.evaluate(READ)
            figures["calls"] = (made[0] - before) / window
            figures["showing"] = showing["longest"]
            out.append((name, took, figures))
            print(f"  {name}: {describe(took, figures)}", flush=True)

        async def peers() -> None:
            await page.goto(url)
            card = page.locator('article[data-peer="many"]')
            await expect(card.locator(".badge")).to_have_text("connected", timeout=WAIT_MS)
            await card.get_by_text(f"tools ({count})").click()
            await expect(card.locator("li").first).to_be_attached(timeout=WAIT_MS)

        async def model() -> None:
            await page.get_by_role("tab", name="Model's view").click()
            await expect(page.locator("#model-size")).to_contain_text(f"{count} tools", timeout=WAIT_MS)
            await expect(page.locator("#names-table tbody tr").first).to_be_attached(timeout=WAIT_MS)

        async def model_json() -> None:
            await page.locator("#model-json-box summary").click()
            await expect(page.locator("#model-json")).to_contain_text(tool, timeout=WAIT_MS)

        async def call() -> None:
            await page.get_by_role("tab", name="Try a call").click()
            await page.get_by_label("Tool", exact=True).fill(tool)
            await page.get_by_role("button", name="Load form").click()
            await expect(page.get_by_label("key", exact=True)).to_be_visible(timeout=WAIT_MS)

        async def events() -> None:
            await page.get_by_role("tab", name="Events").click()
            await expect(page.locator("#event-table tbody tr").first).to_be_attached(timeout=WAIT_MS)
            await expect(page.locator("#chart svg polyline").first).to_be_attached(timeout=WAIT_MS)

        await view("peers, its tools open", peers)
        await view("model's view", model)
        await view("model's view, its JSON open", model_json)
        await view("try a call", call)
        await view("events and the chart", events)
        await browser.close()
        tg.cancel_scope.cancel()
    return out
