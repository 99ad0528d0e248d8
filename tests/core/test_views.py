"""The catalogue's views are kept per peer: after any history of joins, changes, withdrawals and
departures, every view equals the one a fresh catalogue builds for the same state, and a view
returned earlier never changes under its holder.

The catalogue is pure (no I/O), so the property is checked on it directly with `mcp_types.Tool`
listings; one test checks the adapter's views over real in-process MCP servers.
"""

from __future__ import annotations

import copy
from contextlib import AsyncExitStack
from typing import Any, get_args

import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server import Server

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router._catalogue import Catalogue, Format
from mcpx_router.model._budget import IndexPart

FORMATS: tuple[Format, ...] = get_args(Format)
PEERS = ("p", "q", "r", "s")
WORDS = ("search", "order", "ship", "parcel", "notify", "customer", "tax", "weather", "city")
TYPES = ({"type": "string"}, {"type": "integer", "default": 3}, {"type": "boolean"}, {"enum": ["a", "b"]})


@st.composite
def tools(draw: st.DrawFn) -> list[mt.Tool]:
    """A listing: up to 5 tools with words for descriptions; now and then a repeated name."""
    listed: list[mt.Tool] = []
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.sampled_from(("get", "put", "find", "list", "ping", "sort")))
        properties = {
            word: draw(st.sampled_from(TYPES)) for word in draw(st.lists(st.sampled_from(WORDS), max_size=3))
        }
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if properties and draw(st.booleans()):
            schema["required"] = [next(iter(properties))]
        words = draw(st.lists(st.sampled_from(WORDS), max_size=4))
        listed.append(mt.Tool(name=name, description=" ".join(words) or None, input_schema=schema))
    return listed


OPERATIONS = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(PEERS), tools()),
    st.tuples(st.just("withdraw"), st.sampled_from(PEERS), st.none()),
    st.tuples(st.just("remove"), st.sampled_from(PEERS), st.none()),
    # The relevance index built elsewhere, as `Ranking.warm` builds it in a worker thread: "build"
    # reads what is stale now, "keep" hands back everything built so far (some of it outdated).
    st.tuples(st.just("build"), st.none(), st.none()),
    st.tuples(st.just("keep"), st.none(), st.none()),
    # The views compared with a fresh catalogue's (and at the end): between two looks, the index
    # is built only by "build" and "keep", or by the look itself.
    st.tuples(st.just("look"), st.none(), st.none()),
)


def fresh(strict: bool | None, state: dict[str, list[mt.Tool] | None]) -> Catalogue:
    """A catalogue built from scratch for `state` (per peer in order: its listing, or None when withdrawn)."""
    catalogue = Catalogue(strict=strict, description_limit=40)
    for peer, listing in state.items():
        catalogue.set_peer(peer, listing or [])
        if listing is None:
            catalogue.withdraw_peer(peer, "lost")
    return catalogue


def every_view(catalogue: Catalogue, queries: list[str]) -> dict[tuple[Format, str, int | None], Any]:
    """Every format: whole, cut to a limit without a query, and chosen by relevance to each query."""
    views: dict[tuple[Format, str, int | None], Any] = {}
    for fmt in FORMATS:
        views[fmt, "", None] = catalogue.view(fmt)
        for limit in (1, 3):
            views[fmt, "", limit] = catalogue.select(fmt, "", limit)
            for query in queries:
                views[fmt, query, limit] = catalogue.select(fmt, query, limit)
    return views


@settings(max_examples=400, deadline=None)
@given(
    strict=st.sampled_from((False, True, None)),
    operations=st.lists(OPERATIONS, min_size=1, max_size=16),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), max_size=2),
)
def test_views_equal_a_fresh_catalogues_and_never_change(
    strict: bool | None, operations: list[tuple[str, str, list[mt.Tool] | None]], queries: list[str]
) -> None:
    catalogue = Catalogue(strict=strict, description_limit=40)
    state: dict[str, list[mt.Tool] | None] = {}
    held: list[tuple[Any, Any]] = []
    built: list[tuple[str, int, IndexPart]] = []
    def look() -> None:
        views = every_view(catalogue, queries)
        assert views == every_view(fresh(strict, state), queries)
        whole = views["chat", "", None]
        assert whole is catalogue.view("chat")  # the same object while nothing changes
        held.extend((view, copy.deepcopy(view)) for view in views.values())
        for view, seen in held:
            assert isinstance(view, tuple)
            assert view == seen

    for op, peer, listing in operations:
        if op == "look":
            look()
        elif op == "build":
            built += [(part_peer, stamp, build()) for part_peer, stamp, build in catalogue.stale_index()]
        elif op == "keep":
            for part_peer, stamp, part in built:
                catalogue.keep_index(part_peer, stamp, part)
        elif op == "set":
            assert listing is not None
            catalogue.set_peer(peer, listing)
            state[peer] = listing
        elif op == "withdraw" and peer in state:
            catalogue.withdraw_peer(peer, "lost")
            state[peer] = None
        elif op == "remove":
            catalogue.remove_peer(peer)
            state.pop(peer, None)
    look()


def test_a_change_rebuilds_only_the_changed_peers_entries() -> None:
    catalogue = Catalogue()
    listing = [mt.Tool(name=f"t{i}", input_schema={"type": "object", "properties": {}}) for i in range(3)]
    for peer in PEERS:
        catalogue.set_peer(peer, listing)
    before = {fmt: catalogue.view(fmt) for fmt in FORMATS}
    catalogue.set_peer("q", [*listing, mt.Tool(name="extra", input_schema={"type": "object"})])
    for fmt in FORMATS:
        after = catalogue.view(fmt)
        assert len(after) == len(before[fmt]) + 1
        # p's entries come first and are the very same objects; q's are rebuilt; r's and s's are kept.
        assert all(a is b for a, b in zip(after[:3], before[fmt][:3], strict=True))
        assert all(a is not b for a, b in zip(after[3:6], before[fmt][3:6], strict=True))
        assert all(a is b for a, b in zip(after[7:], before[fmt][6:], strict=True))


def _server(name: str, listing: list[mt.Tool]) -> Server[Any]:
    """A real MCP server listing whatever `listing` holds at the time it is asked."""

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(listing))

    return Server(name, on_list_tools=list_tools)


@pytest.mark.anyio
async def test_the_adapters_views_after_a_refresh_equal_a_fresh_adapters() -> None:
    listings = {
        peer: [
            mt.Tool(name=f"t{i}", description=f"{peer} {WORDS[i]}", input_schema={"type": "object"})
            for i in range(3)
        ]
        for peer in PEERS
    }
    async with AsyncExitStack() as stack:
        clients = {
            peer: await stack.enter_async_context(mcp.Client(_server(peer, listing)))
            for peer, listing in listings.items()
        }
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=5))
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        # More tools than a request carries: each join built its part of the index, in a worker
        # thread, before any ranking needed it.
        assert adapter._catalogue.stale_index() == []

        def views(a: OpenAIPeerToolAdapter) -> list[tuple[Any, ...]]:
            return [
                get(**kwargs)
                for get in (a.get_openai_tools, a.get_responses_tools, a.get_openai_functions)
                for kwargs in ({}, {"max_tools": None}, {"relevant_to": "weather city"})
            ]

        before = views(adapter)
        seen = copy.deepcopy(before)
        listings["q"].append(
            mt.Tool(name="city", description="the weather of a city", input_schema={"type": "object"})
        )
        assert await adapter.refresh_peer("q")
        assert adapter._catalogue.stale_index() == []
        after = views(adapter)
        assert before == seen  # what was returned before did not change
        assert after != before
        fresh = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=5))
        for peer, client in clients.items():
            await fresh.add_peer(peer, client)
        assert after == views(fresh)
        assert "q__city" in [tool["function"]["name"] for tool in after[1]]
