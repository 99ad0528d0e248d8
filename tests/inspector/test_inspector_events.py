"""The inspector's live events over SSE, against a live Router: joins, leaves, tool changes,
health changes and calls; the ring they are kept in while a page listens, and nothing kept while none does."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, Reconnect, Router
from mcpx_router.inspector import Inspector, serve
from mcpx_router.inspector._feed import Feed
from mcpx_router.inspector._snapshot import Target
from mcpx_router.mcpx.gateway._serve import serve_asgi
from mcpx_router.testing import search_agent, weather_station

from ..support.inspector_support import inspected, page, session
from ..support.mcpx_support import eventually
from ..support.router_support import ABANDONED_HTTP_STREAMS, growing_server, tiny

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]


async def test_joins_calls_tool_changes_and_leaves_arrive_live() -> None:
    async with inspected() as (router, _, url, _), session(url) as client, page(client) as live:
        await router.join("web", InProcessPeer(search_agent()))
        joined = await live.wait_for("PeerJoined", peer="web")
        assert joined["tools"] == ["web__search"] and joined["version"] == router.version

        await router.call("weather__forecast", {"city": "Paris"})
        call = await live.wait_for("CallFinished", peer="weather")
        assert call["tool"] == "forecast" and call["error_type"] is None
        assert call["ms"] >= 50  # the station takes 0.05 s to answer
        await router.call("counter__broken", {"reason": "x"})
        failed = await live.wait_for("CallFinished", peer="counter")
        assert failed["error_type"] == "tool_error"

        await router.join("grower", InProcessPeer(growing_server()))
        await router.call("grower__grow", {"name": "fresh"})
        changed = await live.wait_for("ToolsChanged", peer="grower")
        assert changed["added"] == ["grower__fresh"]

        await router.leave("web")
        left = await live.wait_for("PeerLeft", peer="web")
        assert left["reason"]
        seqs = [event["seq"] for event in live.events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def test_calls_from_the_page_are_events_too() -> None:
    async with inspected(stats=False) as (_, _, url, _), session(url) as client, page(client) as live:
        body = {"name": "weather__alerts", "arguments": {"region": "Norway"}}
        assert (await client.post("/api/call", json=body)).status_code == 200
        tried = await live.wait_for("TryCall", peer="weather")
        assert tried["name"] == "weather__alerts" and tried["ms"] > 0 and tried["error_type"] is None
        assert "CallFinished" not in live.types()  # without statistics the Router reports no calls


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_a_peer_lost_and_back_shows_its_health_changes() -> None:
    async with Router(reconnect=Reconnect(initial_delay=0.05, jitter=0), stats=True) as router:
        await router.join("small", tiny())
        async with serve(router) as (_, url), session(url) as client, page(client) as live:
            pid = int((await router.call("small__pid", {})).text)
            os.kill(pid, signal.SIGKILL)
            lost = await live.wait_for("HealthChanged", peer="small", healthy=False)
            assert lost["error"]
            back = await live.wait_for("HealthChanged", peer="small", healthy=True)
            assert back["seq"] > lost["seq"]


async def test_two_pages_see_each_event_once_under_one_number() -> None:
    async with inspected() as (router, _, url, _), session(url) as client:
        async with page(client) as first, page(client) as second:
            await router.call("weather__alerts", {"region": "Portugal"})
            one = await first.wait_for("CallFinished", peer="weather")
            two = await second.wait_for("CallFinished", peer="weather")
            assert one == two
            await anyio.sleep(0.1)
            assert first.types().count("CallFinished") == 1 == second.types().count("CallFinished")


async def test_a_new_page_gets_the_recent_events_and_a_reconnecting_one_only_the_newer() -> None:
    async with inspected() as (router, _, url, _), session(url) as client:
        async with page(client) as live:
            await router.call("weather__alerts", {"region": "Portugal"})
            seen = await live.wait_for("CallFinished", peer="weather")
        # No page listens: what happens now is neither kept nor paid for.
        await router.call("weather__alerts", {"region": "Spain"})
        async with page(client) as later:
            assert (await later.wait_for("CallFinished")) == seen
            await router.call("counter__broken", {"reason": "x"})
            newer = await later.wait_for("CallFinished", peer="counter")
            assert later.types().count("CallFinished") == 2
        async with page(client, since=None, headers={"Last-Event-ID": str(seen["seq"])}) as resumed:
            assert (await resumed.wait_for("CallFinished")) == newer
            await anyio.sleep(0.1)
            assert resumed.types() == ["CallFinished"]


async def test_the_router_pays_nothing_while_no_page_listens() -> None:
    async with inspected() as (router, inspector, url, _), session(url) as client:
        streams = router._hub._streams
        assert streams == set()
        await router.call("weather__alerts", {"region": "Portugal"})
        assert inspector.feed.seq == 0
        async with page(client):
            assert len(streams) == 1
        await eventually(lambda: not streams)


async def test_a_bare_adapters_hook_is_chained_while_a_page_listens_and_put_back_after() -> None:
    seen: list[object] = []
    async with OpenAIPeerToolAdapter(stats=True) as adapter:
        import mcp

        async with mcp.Client(weather_station()) as peer:
            await adapter.add_peer("weather", peer)
            adapter.on_event = seen.append
            hook = adapter.on_event
            inspector = Inspector(adapter)
            async with serve_asgi(inspector) as base, session(inspector.url(base)) as client:
                async with page(client) as live:
                    assert adapter.on_event is not hook
                    await adapter.call("weather__alerts", {"region": "Norway"})
                    call = await live.wait_for("CallFinished", peer="weather")
                    assert call["tool"] == "alerts"
                await eventually(lambda: adapter.on_event is hook)
            assert len(seen) == 1  # the host's own callback still had the call


async def test_a_slow_page_is_told_how_many_events_it_missed() -> None:
    async with inspected(events=5) as (_, inspector, url, _), session(url) as client:
        for n in range(12):
            inspector.feed.add("TryCall", {"name": f"t{n}", "peer": "weather"})
        async with page(client) as late:
            await late.wait_for("TryCall", name="t11")
            assert late.events[0] == {**late.events[0], "type": "Dropped", "count": 7}
            assert [event["name"] for event in late.events[1:]] == ["t7", "t8", "t9", "t10", "t11"]
        refused = await client.get("/api/events", params={"since": "soon"})
        assert refused.status_code == 400


async def test_the_ring_keeps_the_newest_and_counts_the_rest() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        feed = Feed(Target(adapter), size=3)
        assert feed.after(0) == (0, [])
        for n in range(10):
            feed.add("TryCall", {"n": n})
        missed, kept = feed.after(0)
        assert missed == 7 and [entry["n"] for entry in kept] == [7, 8, 9]
        assert [entry["seq"] for entry in kept] == [8, 9, 10]
        assert feed.after(9) == (0, [kept[2]])
        assert feed.after(10) == (0, [])
        with pytest.raises(ValueError, match="at least one"):
            Feed(Target(adapter), size=0)
