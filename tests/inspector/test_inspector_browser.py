"""The inspector's page in a real browser (headless Chromium, driven by Playwright) against a live
Router of real peers, in-process and stdio: each view, a call with a nested argument filled in
the form, a peer lost and back. Chromium comes from `tests/support/_servers.py` (installed with
the other test servers); where it cannot be had, the test fails and says why.

With INSPECTOR_SCREENSHOTS=DIR, a screenshot of each view is written to DIR (docs/images holds
the ones docs/inspector.md shows).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from mcpx_router import InProcessPeer, Reconnect, Router
from mcpx_router.inspector import serve
from mcpx_router.testing import weather_station

from ..support._servers import install_chromium
from ..support.inspector_support import counter_server, many_tools_server
from ..support.router_support import tiny

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WAIT_MS = 15_000

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.subprocess,
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),  # Playwright's async API runs on asyncio
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


async def _shot(page: Any, name: str, tmp_path: Path) -> None:
    target = Path(os.environ.get("INSPECTOR_SCREENSHOTS") or tmp_path)
    await page.screenshot(path=str(target / f"inspector-{name}.png"), full_page=True)
    assert (target / f"inspector-{name}.png").stat().st_size > 1000


async def test_every_view_in_a_real_browser(tmp_path: Path) -> None:
    from playwright.async_api import async_playwright, expect

    chromium = install_chromium()  # raises, saying why, where there is none
    server, calls = counter_server()
    async with Router(reconnect=Reconnect(initial_delay=1.5, jitter=0), stats=True) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("counter", InProcessPeer(server))
        await router.join("small", tiny())
        await router.call("weather__forecast", {"city": "Paris"})
        async with serve(router) as (_, url), async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(chromium), args=FLAGS)
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            await page.goto(url)
            assert "token=" not in page.url  # swapped for the cookie
            await expect(page.locator("#status")).to_have_text("live", timeout=WAIT_MS)

            # 1. Peers
            for peer, kind in (("weather", "in-process"), ("counter", "in-process"), ("small", "stdio")):
                card = page.locator(f'article[data-peer="{peer}"]')
                await expect(card.locator(".badge")).to_have_text("connected", timeout=WAIT_MS)
                await expect(card).to_contain_text(kind)
            weather = page.locator('article[data-peer="weather"]')
            await expect(weather).to_contain_text("p50")
            # A section opened stays open when the page refreshes the card (a call makes it).
            await weather.get_by_text("tools (2)").click()
            await expect(weather.get_by_text("weather__alerts")).to_be_visible()
            await router.call("weather__alerts", {"region": "Norway"})
            await expect(weather.locator(".metrics")).to_contain_text("calls2", timeout=WAIT_MS)
            await expect(weather.get_by_text("weather__alerts")).to_be_visible()
            await _shot(page, "peers", tmp_path)

            # 2. The model's view, the names, a request's offer
            await page.get_by_role("tab", name="Model's view").click()
            await expect(page.locator("#model-size")).to_contain_text("tokens", timeout=WAIT_MS)
            await expect(page.locator("#names-table")).to_contain_text("weather__forecast")
            await page.get_by_label("Format").select_option("responses")
            await expect(page.locator("#model-size")).to_contain_text(f"{len(router.tools)} tools")
            await page.get_by_label("Last user message").fill("weather forecast for Paris")
            await page.get_by_role("button", name="Rank").click()
            first = page.locator("#ranked tbody tr").first
            await expect(first).to_contain_text("weather__forecast", timeout=WAIT_MS)
            await _shot(page, "model", tmp_path)

            # 3. Try a call, with a nested argument and an array filled in the form
            await page.get_by_role("tab", name="Try a call").click()
            await page.get_by_label("Tool", exact=True).fill("counter__record")
            await page.get_by_role("button", name="Load form").click()
            await page.get_by_label("label", exact=True).fill("home")
            await page.get_by_label("x", exact=True).fill("3")
            await page.get_by_label("y", exact=True).fill("4")
            await page.get_by_role("button", name="add tags item").click()
            await page.get_by_label("tags[0]", exact=True).fill("red")
            await page.get_by_role("button", name="Call through the router").click()
            await expect(page.locator("#call-text")).to_have_text(
                "recorded home at 3,4 with 1 tags (fast)", timeout=WAIT_MS
            )
            await expect(page.locator("#call-raw")).to_contain_text('"type": "text"')
            assert calls == [
                {"label": "home", "point": {"x": 3, "y": 4}, "tags": ["red"], "mode": "fast", "repeat": 1}
            ]
            await _shot(page, "call", tmp_path)

            # 4. Events and the latency chart
            await page.get_by_role("tab", name="Events").click()
            await expect(page.locator("#event-table")).to_contain_text("TryCall", timeout=WAIT_MS)
            await expect(page.locator("#event-table")).to_contain_text("CallFinished")
            await expect(page.locator("#chart svg polyline").first).to_be_attached()
            await page.get_by_label("Peer", exact=True).fill("nobody")
            await expect(page.locator("#event-table tbody tr")).to_have_count(0)
            await page.get_by_label("Peer", exact=True).fill("")

            # A peer lost and back: the events say so, and its card shows it.
            pid = int((await router.call("small__pid", {})).text)
            os.kill(pid, signal.SIGKILL)
            await expect(page.locator("#event-table")).to_contain_text("lost", timeout=WAIT_MS)
            await _shot(page, "events", tmp_path)
            await page.get_by_role("tab", name="Peers").click()
            badge = page.locator('article[data-peer="small"] .badge')
            await expect(badge).to_have_text("reconnecting", timeout=WAIT_MS)
            await expect(badge).to_have_text("connected", timeout=WAIT_MS)

            # Keyboard: the tabs move with the arrow keys.
            await page.get_by_role("tab", name="Peers").focus()
            await page.keyboard.press("ArrowRight")
            await expect(page.get_by_role("tab", name="Model's view")).to_have_attribute(
                "aria-selected", "true"
            )
            await browser.close()
            assert problems == []


async def test_a_large_catalogue_a_page_at_a_time(tmp_path: Path) -> None:
    """1,200 tools: the lists and the exact JSON a page at a time; a refresh keeps what was opened;
    new events go on top of the table."""
    from playwright.async_api import async_playwright, expect

    chromium = install_chromium()
    count = 1200
    async with Router(stats=True) as router:
        await router.join("many", InProcessPeer(many_tools_server(count)))
        async with serve(router) as (_, url), async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(chromium), args=FLAGS)
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            await page.goto(url)
            card = page.locator('article[data-peer="many"]')
            await expect(card.locator(".badge")).to_have_text("connected", timeout=WAIT_MS)

            # The tools, 500 at a time; a call (a refresh of the statistics) keeps the card as it is.
            await card.get_by_text(f"tools ({count})").click()
            await expect(card.locator("li")).to_have_count(500)
            await card.get_by_role("button", name="show 500 more (500 of 1200 shown)").click()
            await expect(card.locator("li")).to_have_count(1000)
            await router.call("many__t0007", {})
            await expect(card.locator(".metrics")).to_contain_text("calls1", timeout=WAIT_MS)
            await expect(card.locator("li")).to_have_count(1000)
            await card.get_by_role("button", name="show 200 more (1000 of 1200 shown)").click()
            await expect(card.locator("li")).to_have_count(count)
            await expect(card.locator("li").last).to_contain_text("many__t1199")
            await expect(card.get_by_role("button", name="show", exact=False)).to_be_hidden()

            # The model's exact JSON, 100 tools a page; the name table's first 500 rows.
            await page.get_by_role("tab", name="Model's view").click()
            await expect(page.locator("#names-count")).to_have_text(
                f"{count} of {count}, the first 500 shown: filter to see others", timeout=WAIT_MS
            )
            await expect(page.locator("#names-table tbody tr")).to_have_count(500)
            await page.locator("#names-filter").fill("t119")
            await expect(page.locator("#names-table tbody tr")).to_have_count(10)
            await page.get_by_text("The exact JSON").click()
            await expect(page.locator("#json-range")).to_have_text(f"tools 1\u2013100 of {count}")
            json_box = page.locator("#model-json")
            await expect(json_box).to_contain_text('"name": "many__t0099"')
            await expect(json_box).not_to_contain_text("many__t0100")
            await expect(page.get_by_role("button", name="previous tools")).to_be_disabled()
            await page.get_by_role("button", name="next tools").click()
            await expect(page.locator("#json-range")).to_have_text(f"tools 101\u2013200 of {count}")
            await expect(json_box).to_contain_text('"name": "many__t0100"')
            await expect(json_box).not_to_contain_text("many__t0099")

            # Events: the newest on top, new ones added while the table is shown, the filter applied.
            await page.get_by_role("tab", name="Events").click()
            rows = page.locator("#event-table tbody tr")
            await expect(rows.first).to_contain_text("t0007 ok", timeout=WAIT_MS)
            for n in (11, 12, 13):
                await router.call(f"many__t{n:04d}", {})
            await expect(rows.first).to_contain_text("t0013 ok", timeout=WAIT_MS)
            await expect(rows.nth(1)).to_contain_text("t0012 ok")
            await expect(rows.nth(2)).to_contain_text("t0011 ok")
            await expect(page.locator("#event-count")).to_contain_text("shown of")
            await page.get_by_label("errors only").check()
            await expect(rows).to_have_count(0)
            await page.get_by_label("errors only").uncheck()
            await expect(rows.first).to_contain_text("t0013 ok")
            await browser.close()
            assert problems == []
