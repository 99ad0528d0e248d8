"""The inspector's JSON endpoints against a live Router of real in-process MCP peers: what each
panel of the page reads (peers, the model's view, the names, a request's offer, a call)."""

from __future__ import annotations

import contextlib
import math
import os
import signal
from typing import Any

import anyio
import pytest

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, Reconnect, Router
from mcpx_router.inspector import CHARS_PER_TOKEN, Inspector, serve
from mcpx_router.mcpx.gateway._serve import serve_asgi
from mcpx_router.testing import docs_library, search_agent, weather_station

from ..support.inspector_support import PNG, WAIT, inspected, odd_server, session
from ..support.router_support import tiny

pytestmark = pytest.mark.anyio

RECORD = {"label": "home", "point": {"x": 3, "y": 4}, "tags": ["a", "b"], "mode": "slow"}


async def test_peers_show_transport_state_tools_content_and_statistics() -> None:
    async with inspected() as (router, _, url, _), session(url) as client:
        await router.join("odd", InProcessPeer(odd_server()))
        assert not (await router.call("counter__record", RECORD)).is_error
        assert (await router.call("counter__broken", {"reason": "x"})).error_type == "tool_error"
        view = (await client.get("/api/overview")).json()
        assert view["stats_kept"] is True and view["read_only"] is False and view["topic"] is None
        peers = {peer["id"]: peer for peer in view["peers"]}
        assert list(peers) == ["weather", "counter", "odd"]
        weather = peers["weather"]
        assert weather["transport"] == {"kind": "in-process", "detail": "MCPServer"}
        assert weather["state"] == "connected" and weather["last_error"] is None
        assert [t["name"] for t in weather["tools"]] == ["weather__forecast", "weather__alerts"]
        counter = peers["counter"]
        assert counter["prompts"] == [
            {"name": "counter__summarise", "title": "summarise", "description": "Summarise a text."}
        ]
        assert [r["uri"] for r in counter["resources"]] == ["memo://today"]
        stats = counter["stats"]
        assert stats["calls"] == 2
        assert {kind: n for kind, n in stats["errors"].items() if n} == {"tool_error": 1}
        assert stats["p50_ms"] > 0 and stats["p95_ms"] >= stats["p50_ms"]
        assert stats["last_failure"]["kind"] == "tool_error"
        assert 0 < stats["score"] < 1
        odd = peers["odd"]
        assert [t["tool"] for t in odd["tools"]] == ["snapshot"]
        assert list(odd["held_back"]) == ["listy"]
        assert "#/properties/q/required" in odd["held_back"]["listy"]
        assert peers["weather"]["stats"] is None  # never called: nothing recorded yet


async def test_without_statistics_the_page_is_told() -> None:
    async with inspected(stats=False) as (_, _, url, _), session(url) as client:
        view = (await client.get("/api/overview")).json()
        assert view["stats_kept"] is False
        assert all(peer["stats"] is None for peer in view["peers"])


@pytest.mark.parametrize("fmt", ["chat", "responses", "functions"])
async def test_the_model_view_is_exactly_what_the_model_is_sent(fmt: str) -> None:
    async with (
        OpenAIPeerToolAdapter(strict=None, stats=True) as adapter,
        Router(adapter=adapter) as router,
    ):
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("docs", InProcessPeer(docs_library()))
        async with serve(router) as (_, url), session(url) as client:
            view = (await client.get("/api/model")).json()
            sent = {
                "chat": router.get_openai_tools,
                "responses": router.get_responses_tools,
                "functions": router.get_openai_functions,
            }[fmt](max_tools=None)
            shown = view["formats"][fmt]
            assert shown["tools"] == list(_plain(sent))
            assert shown["count"] == len(sent) == 4
            compact = len(__import__("json").dumps(list(sent), separators=(",", ":"), ensure_ascii=False))
            assert shown["chars"] == compact
            assert shown["tokens"] == math.ceil(compact / CHARS_PER_TOKEN)
            assert view["strict"] == sum(1 for tool in router.tools if tool.strict) > 0
            assert view["version"] == router.version


async def test_the_model_view_follows_the_catalogue_and_is_made_once_per_version() -> None:
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        async with serve(router) as (_, url), session(url) as client:
            first = await client.get("/api/model")
            again = await client.get("/api/model")
            assert first.headers["content-type"] == "application/json"
            assert again.content == first.content and first.json()["version"] == router.version
            await router.join("docs", InProcessPeer(docs_library()))
            after = (await client.get("/api/model")).json()
            assert after["version"] == router.version != first.json()["version"]
            names = [tool["function"]["name"] for tool in after["formats"]["chat"]["tools"]]
            assert names == [tool["function"]["name"] for tool in router.get_openai_tools(max_tools=None)]
            assert after["formats"]["chat"]["count"] == first.json()["formats"]["chat"]["count"] + 2
            await router.leave("docs")
            gone = (await client.get("/api/model")).json()
            assert gone["formats"]["chat"]["tools"] == first.json()["formats"]["chat"]["tools"]


def _plain(value: Any) -> Any:
    """The tool list as JSON decodes it (tuples as lists)."""
    return __import__("json").loads(__import__("json").dumps(value))


async def test_the_name_table_and_groups() -> None:
    async with Router(aliases={"search": ["web/search", "docs/search"]}) as router:
        await router.join("web", InProcessPeer(search_agent()))
        await router.join("docs", InProcessPeer(docs_library()))
        async with serve(router) as (_, url), session(url) as client:
            table = (await client.get("/api/names")).json()
            rows = {row["name"]: row for row in table["tools"]}
            (page,) = [row for row in table["tools"] if row["tool"] == "page.get"]
            assert page["peer"] == "docs" and page["name"] == router.public_name("docs", "page.get")
            assert rows["web__search"] == {
                "name": "web__search",
                "peer": "web",
                "tool": "search",
                "strict": False,
                "groups": ["search"],
            }
            (group,) = table["groups"]
            # The two searches take different arguments: the group stands, unpublished, with why.
            assert group["name"] == "search" and group["published"] is False
            assert "input schemas of its members differ" in group["reason"]
            assert [m["name"] for m in group["members"]] == ["web__search", "docs__search"]


async def test_a_request_box_shows_the_budget_and_the_search_ranked_with_scores() -> None:
    async with inspected() as (_, _, url, _), session(url) as client:
        result = (
            await client.get("/api/select", params={"q": "weather forecast for Paris", "max_tools": 2})
        ).json()
        assert result["max_tools"] == 2 and result["total"] == 4 and result["offered"] == 2
        ranked = result["ranked"]
        assert ranked[0]["name"] == "weather__forecast" and ranked[0]["rank"] == 1
        assert ranked[0]["score"] > 0
        assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
        assert sum(r["offered"] for r in ranked) == 2 and ranked[0]["offered"]
        assert result["tool_search"]["found"][0] == "weather__forecast"
        assert result["tool_search"]["name"] == "find_tools"
        for bad in ("0", "many"):
            refused = await client.get("/api/select", params={"q": "x", "max_tools": bad})
            assert refused.status_code == 400
            assert "max_tools" in refused.json()["error"]


async def test_a_call_shows_what_the_model_reads_beside_the_raw_result() -> None:
    async with inspected() as (router, _, url, calls), session(url) as client:
        await router.join("odd", InProcessPeer(odd_server()))
        detail = (await client.get("/api/tool", params={"name": "counter__record"})).json()
        schema = detail["input_schema"]
        point = schema["properties"]["point"]
        nested = schema["$defs"][point["$ref"].rsplit("/", 1)[1]] if "$ref" in point else point
        assert set(nested["properties"]) == {"x", "y"}
        assert schema["properties"]["mode"]["enum"] == ["fast", "slow"]
        # The default shows: the peer's own `default`, or (where the conversion stands in for the
        # peer's schema) the sentence the conversion writes into the description.
        mode = schema["properties"]["mode"]
        assert mode.get("default") == "fast" or '"fast"' in mode["description"]
        answer = (
            await client.post("/api/call", json={"name": "counter__record", "arguments": RECORD})
        ).json()
        assert calls == [{**RECORD, "repeat": 1}]
        assert answer["peer"] == "counter" and answer["tool"] == "record" and answer["ms"] > 0
        assert answer["model"] == {
            "text": "recorded home at 3,4 with 2 tags (slow)",
            "is_error": False,
            "error_type": None,
            "images": [],
        }
        assert answer["raw"]["content"][0]["text"] == "recorded home at 3,4 with 2 tags (slow)"

        failed = (
            await client.post("/api/call", json={"name": "counter__broken", "arguments": {"reason": "z"}})
        ).json()
        assert failed["model"]["is_error"] and failed["model"]["error_type"] == "tool_error"
        assert failed["raw"]["isError"] is True

        refused = (
            await client.post("/api/call", json={"name": "counter__record", "arguments": {"label": 1}})
        ).json()
        assert refused["model"]["error_type"] == "invalid_arguments" and refused["raw"] is None
        assert len(calls) == 1

        unknown = (await client.post("/api/call", json={"name": "nope", "arguments": {}})).json()
        assert unknown["model"]["error_type"] == "unknown_tool" and unknown["peer"] is None

        picture = (await client.post("/api/call", json={"name": "odd__snapshot"})).json()
        assert picture["model"]["images"] == [{"mime": "image/png", "data": PNG}]

        for body, why in (
            (b"[1]", "JSON object"),
            (b"{", "JSON object"),
            (b'{"name": "x", "arguments": [1]}', "arguments"),
        ):
            bad = await client.post("/api/call", content=body, headers={"Content-Type": "application/json"})
            assert bad.status_code == 400 and why in bad.json()["error"]
        assert (await client.get("/api/tool", params={"name": "nope"})).status_code == 404


async def test_a_bare_adapter_can_be_inspected() -> None:
    server_peer = weather_station()
    import mcp

    async with mcp.Client(server_peer) as client, OpenAIPeerToolAdapter(stats=True) as adapter:
        await adapter.add_peer("weather", client)
        inspector = Inspector(adapter)
        async with serve_asgi(inspector) as base, session(inspector.url(base)) as http:
            view = (await http.get("/api/overview")).json()
            (peer,) = view["peers"]
            assert peer["id"] == "weather" and peer["state"] == "connected"
            assert peer["transport"]["kind"] == "session"
            answer = (
                await http.post(
                    "/api/call", json={"name": "weather__alerts", "arguments": {"region": "Norway"}}
                )
            ).json()
            assert "storm warning" in answer["model"]["text"]


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_a_lost_peer_shows_as_reconnecting_with_its_error() -> None:
    async with Router(reconnect=Reconnect(initial_delay=30, jitter=0), stats=True) as router:
        await router.join("small", tiny())
        async with serve(router) as (_, url), session(url) as client:
            pid = int((await router.call("small__pid", {})).text)
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(WAIT):
                while True:
                    (peer,) = (await client.get("/api/overview")).json()["peers"]
                    if peer["state"] != "connected":
                        break
                    await anyio.sleep(0.05)
            assert peer["state"] == "reconnecting"
            assert peer["tools"] == []
            assert peer["last_error"]
            assert peer["transport"]["kind"] == "stdio"


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_a_hung_peer_shows_as_hung() -> None:
    """A stdio peer stopped (SIGSTOP) answers no health probe: the Router ends it as hung."""
    settings: dict[str, Any] = {"health_interval": 0.2, "health_timeout": 0.3}
    async with Router(reconnect=Reconnect(initial_delay=30, jitter=0), **settings) as router:
        await router.join("small", tiny())
        async with serve(router) as (_, url), session(url) as client:
            pid = int((await router.call("small__pid", {})).text)
            os.kill(pid, signal.SIGSTOP)
            try:
                with anyio.fail_after(WAIT):
                    while True:
                        (peer,) = (await client.get("/api/overview")).json()["peers"]
                        if peer["state"] != "connected":
                            break
                        await anyio.sleep(0.05)
            finally:
                with contextlib.suppress(ProcessLookupError):  # ended by the Router by now, most likely
                    os.kill(pid, signal.SIGCONT)
            assert peer["state"] == "hung"
            assert "did not answer a probe" in peer["last_error"]
