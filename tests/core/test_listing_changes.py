"""add_peer and refresh_peer either happen completely or not at all; a refresh sees every change.

Peers are real in-process MCP servers (lowlevel `Server` through `mcp.Client`) whose paged
`tools/list` handler can fail, cancel the listing, close the adapter, or act on the adapter
(add, remove, refresh) at any page. After a failed `add_peer` or `refresh_peer` everything a
host can observe is as it was: peers, version, published tools and their names, the views.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp
import mcp_types as mt
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp.server.lowlevel import Server
from openai._utils._json import openapi_dumps

from mcpx_router import (
    AdapterClosedError,
    DuplicatePeerError,
    OpenAIPeerToolAdapter,
    PeerUnavailableError,
    UnknownPeerError,
)

BACKENDS = ["asyncio", "trio"]
PEER = "a"
"""The peer under test; the other peer, `a__b`, offers `c`, which `a`'s `b__c` would collide with."""

Hook = Callable[[int], Awaitable[None]]


@dataclass
class PagedPeer:
    """A lowlevel server listing `tools`, `page_size` a page; `hook(page)` runs before each page."""

    tools: list[mt.Tool]
    page_size: int = 2
    hook: Hook | None = None
    pages: int = 0

    def server(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
            start = int(params.cursor) if params is not None and params.cursor else 0
            self.pages += 1
            end = start + self.page_size
            page = mt.ListToolsResult(
                tools=self.tools[start:end], next_cursor=str(end) if end < len(self.tools) else None
            )
            if self.hook is not None:
                await self.hook(start // self.page_size)
            return page

        async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=params.name)])

        return Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


def tool(name: str, schema: dict[str, Any] | None = None, description: str = "A tool.") -> mt.Tool:
    return mt.Tool(name=name, description=description, input_schema=schema or {"type": "object"})


OTHER = [tool("c"), tool("t1")]
NAMES = st.sampled_from(["b__c", "t1", "t2", "x.y", "x y", "t3", "u"])
LISTINGS = st.lists(NAMES, min_size=1, max_size=6, unique=True).map(lambda names: [tool(n) for n in names])


def observed(adapter: OpenAIPeerToolAdapter) -> Any:
    """Everything a host can see of the adapter's peers and catalogue."""
    return (
        adapter.peers,
        adapter.version,
        [(t.name, t.peer, t.tool, t.description, json.dumps(t.parameters)) for t in adapter.tools],
        {peer: adapter.rejected_tools(peer) for peer in (*adapter.peers, PEER)},
        openapi_dumps(list(adapter.get_openai_tools(max_tools=None))),
        openapi_dumps(list(adapter.get_responses_tools(max_tools=None))),
        openapi_dumps(list(adapter.get_openai_functions(max_tools=None))),
    )


async def fresh_views(listing: list[mt.Tool], other: list[mt.Tool] = OTHER, **options: Any) -> Any:
    """What a new adapter shows that registered the other peer (if any), then `PEER` listing `listing`."""
    async with (
        mcp.Client(PagedPeer(other).server()) as first,
        mcp.Client(PagedPeer(listing).server()) as mine,
        OpenAIPeerToolAdapter(**options) as adapter,
    ):
        if other:
            await adapter.add_peer("a__b", first)
        await adapter.add_peer(PEER, mine)
        return observed(adapter)[2:]


@dataclass
class Injection:
    failure: str
    """none | raise | cancel | close"""
    interference: str
    """none | add | remove | refresh: what the adapter is asked meanwhile"""
    page: int
    seen: list[str] = field(default_factory=list)
    fired: bool = False


INJECTIONS = st.builds(
    Injection,
    failure=st.sampled_from(["none", "raise", "cancel", "close"]),
    interference=st.sampled_from(["none", "add", "remove", "refresh"]),
    page=st.integers(0, 3),
)


def injector(
    adapter: OpenAIPeerToolAdapter, scope: anyio.CancelScope, spare: mcp.Client, how: Injection
) -> Hook:
    async def hook(page: int) -> None:
        if page != how.page or how.fired:
            return
        how.fired = True  # once: a refresh started here lists through this hook too
        if how.interference == "add":
            with pytest.raises(DuplicatePeerError):
                await adapter.add_peer(PEER, spare)
        elif how.interference == "remove":
            try:
                await adapter.remove_peer(PEER)
                how.seen.append("removed")
            except UnknownPeerError:
                how.seen.append("not yet registered")
        elif how.interference == "refresh":
            try:
                await adapter.refresh_peer(PEER)
                how.seen.append("refreshed")
            except UnknownPeerError:
                how.seen.append("not yet registered")
        if how.failure == "raise":
            raise RuntimeError("the listing broke")
        if how.failure == "cancel":
            scope.cancel()
            await anyio.sleep(1)  # cancelled here, and the client's request with it
        if how.failure == "close":
            await adapter.__aexit__(None, None, None)

    return hook


async def run_injected(
    op: str, before: list[mt.Tool], after: list[mt.Tool], page_size: int, how: Injection
) -> None:
    mine = PagedPeer(before, page_size=page_size)
    async with (
        mcp.Client(PagedPeer(OTHER).server()) as other,
        mcp.Client(mine.server()) as client,
        mcp.Client(PagedPeer(before).server()) as spare,
    ):
        adapter = OpenAIPeerToolAdapter()
        async with adapter:
            await adapter.add_peer("a__b", other)
            if op == "refresh":
                await adapter.add_peer(PEER, client)
                mine.tools = after
            start = observed(adapter)
            outcome: BaseException | None = None
            with anyio.CancelScope() as scope:
                mine.hook = injector(adapter, scope, spare, how)
                try:
                    if op == "add":
                        await adapter.add_peer(PEER, client)
                    else:
                        await adapter.refresh_peer(PEER)
                except Exception as exc:
                    outcome = exc
            mine.hook = None
            ended = "cancelled" if scope.cancelled_caught else type(outcome).__name__ if outcome else "done"
            event(f"{op}: {ended}; meanwhile {how.seen or how.interference}")
            if how.failure == "close" and how.page * page_size < len(mine.tools):
                assert isinstance(outcome, AdapterClosedError), outcome
                assert adapter.peers == () and adapter.tools == ()
                return
            failed = how.failure in ("raise", "cancel") and how.page * page_size < len(mine.tools)
            acted = "removed" in how.seen or "refreshed" in how.seen  # a change of its own, meanwhile
            if failed:
                assert (
                    scope.cancelled_caught
                    if how.failure == "cancel"
                    else isinstance(outcome, PeerUnavailableError)
                )
                if not acted:
                    assert observed(adapter) == start  # nothing happened, nothing half-happened
            else:
                assert outcome is None, outcome
            # Whatever went on, the adapter works on: the peer (re-)registers, under fresh names.
            if PEER in adapter.peers:
                await adapter.refresh_peer(PEER)
            else:
                await adapter.add_peer(PEER, client)
            assert observed(adapter)[2:] == await fresh_views(mine.tools)
            for entry in adapter.tools_of(PEER):
                assert (await adapter.call(entry.name, {})).text == entry.tool


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(["add", "refresh"]),
    before=LISTINGS,
    after=LISTINGS,
    page_size=st.integers(1, 3),
    how=INJECTIONS,
)
def test_a_failed_add_or_refresh_leaves_no_trace(
    backend: str, op: str, before: list[mt.Tool], after: list[mt.Tool], page_size: int, how: Injection
) -> None:
    anyio.run(run_injected, op, before, after, page_size, how, backend=backend)


async def test_an_older_listing_never_replaces_a_newer_one(anyio_backend: str) -> None:
    peer = PagedPeer([tool("one")])
    async with mcp.Client(peer.server()) as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer(PEER, client)
        entered, gate = anyio.Event(), anyio.Event()

        async def hold(page: int) -> None:
            entered.set()
            await gate.wait()

        peer.tools, peer.hook = [tool("two")], hold
        async with anyio.create_task_group() as tg:
            tg.start_soon(adapter.refresh_peer, PEER)  # lists "two", then waits
            await entered.wait()
            peer.tools, peer.hook = [tool("three")], None
            assert await adapter.refresh_peer(PEER)  # lists "three" and publishes it
            gate.set()  # now the older listing arrives
        assert [t.tool for t in adapter.tools] == ["three"]


# -- a tool whose conversion fails unexpectedly ------------------------------------------------


class Exploding(dict[str, Any]):
    """A schema mapping that fails when read, as no JSON value can (an in-process oddity)."""

    def items(self) -> Any:
        raise KeyError("boom")

    def __iter__(self) -> Any:
        raise KeyError("boom")


@dataclass
class OddSession:
    """A `ToolSession` listing a tool built without validation (no transport can deliver it)."""

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        odd = mt.Tool.model_construct(name="odd", input_schema=Exploding(type="object"))
        return mt.ListToolsResult(tools=[tool("fine"), odd])

    async def call_tool(self, name: str, arguments: Any = None, read_timeout_seconds: Any = None) -> Any:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=name)])


async def test_a_tool_whose_check_raises_is_rejected_and_the_rest_published(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with caplog.at_level(logging.WARNING, logger="mcpx_router"):
            assert await adapter.add_peer(PEER, OddSession()) == ("a__fine",)
        reason = adapter.rejected_tools(PEER)["odd"]
        assert reason == (
            "tool 'odd' of peer 'a' cannot be offered to OpenAI: converting it failed (KeyError: \"'boom'\")"
        )
        assert [r.getMessage() for r in caplog.records] == [reason]
        assert caplog.records[0].exc_info is not None  # an unexpected failure comes with its traceback
        assert adapter.resolve("a__fine").tool == "fine"
        assert "a__odd" not in {t.name for t in adapter.tools}
        await adapter.refresh_peer(PEER)  # the same again: nothing changes
        assert adapter.version == 1


async def test_a_session_that_lists_something_else_fails_the_join_cleanly(anyio_backend: str) -> None:
    class Wrong(OddSession):
        async def list_tools(self, cursor: str | None = None) -> Any:
            return mt.ListToolsResult.model_construct(tools=[{"name": "not a Tool"}], next_cursor=None)

    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(PeerUnavailableError, match=r"where an mcp_types\.Tool belongs"):
            await adapter.add_peer(PEER, Wrong())
        assert adapter.peers == () and adapter.version == 0
        assert await adapter.add_peer(PEER, OddSession()) == ("a__fine",)


# -- what counts as a change -------------------------------------------------------------------

SCALARS = st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, 2.5, True, False, None, "", "0", "a"])
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["k", "l", "m"]), inner, max_size=3)
    ),
    max_leaves=6,
)
KEYWORDS = st.sampled_from(["minimum", "maximum", "default", "enum", "const", "description", "examples"])


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Object schemas whose properties differ only in ways Python's == can miss: 0/False, 1/1.0,
    0.0/-0.0, key order."""
    names = draw(st.permutations(["p", "q"]))
    properties: dict[str, Any] = {}
    for name in names[: draw(st.integers(0, 2))]:
        prop: dict[str, Any] = {"type": draw(st.sampled_from(["integer", "number", "boolean"]))}
        for keyword in draw(st.lists(KEYWORDS, max_size=3, unique=True)):
            value = draw(JSON_VALUES)
            prop[keyword] = (
                str(value) if keyword == "description" else [value] if keyword == "enum" else value
            )
        properties[name] = prop
    return {"type": "object", "properties": properties}


def similar(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A schema often equal to `schema` under Python's ==, and sometimes also in JSON."""

    def swap(value: Any) -> Any:  # keyed by type: a dict of these would itself merge 0, False and 0.0
        if type(value) is bool:
            return int(value)
        if type(value) is int and value in (0, 1):
            return bool(value)
        if type(value) is float and value == 0:
            return -value
        if type(value) is float and value.is_integer():
            return int(value)
        return value

    def twist(value: Any, how: int) -> Any:
        if isinstance(value, dict):
            items = list(value.items())
            return (
                dict(reversed(items) if how == 2 else items)
                if how != 3
                else {k: twist(v, 1) for k, v in items}
            )
        if isinstance(value, list):
            return [twist(v, how) for v in value]
        if how == 1:
            return swap(value)
        return value

    # The SDK puts the root's `type` first whatever the server sent: only what is below is twisted.
    return (
        st.sampled_from([0, 1, 2, 3]).map(
            lambda how: {"type": "object", "properties": twist(schema["properties"], how)}
        )
        | schemas()
    )


OPTIONS = [{}, {"strict": None}, {"json_string_params": True}]


async def run_change(first: dict[str, Any], second: dict[str, Any], options: dict[str, Any]) -> None:
    peer = PagedPeer([tool("t", first), tool("u")])
    async with mcp.Client(peer.server()) as client, OpenAIPeerToolAdapter(**options) as adapter:
        await adapter.add_peer(PEER, client)
        version, before = adapter.version, adapter.tools
        peer.tools = [tool("t", second), tool("u")]
        offered_before = "t" not in adapter.rejected_tools(PEER)
        changed = await adapter.refresh_peer(PEER)
        offered_after = "t" not in adapter.rejected_tools(PEER)
        # A definition the API would refuse is withheld with a reason: two such definitions, however
        # different, leave what the model sees as it was.
        assert changed == (json.dumps(first) != json.dumps(second) and (offered_before or offered_after))
        assert adapter.version == version + changed
        if not offered_after:
            assert [t.tool for t in adapter.tools] == ["u"]
        elif before[0].tool == "t":
            assert (adapter.tools[0] is before[0]) == (not changed)
            assert adapter.tools[0].name == before[0].name  # a changed tool keeps its name
        refreshed = observed(adapter)[2:]
    assert refreshed == await fresh_views(peer.tools, other=[], **options)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), options=st.sampled_from(OPTIONS))
def test_a_refresh_reports_a_change_exactly_when_the_json_differs(
    backend: str, data: st.DataObject, options: dict[str, Any]
) -> None:
    first = data.draw(schemas())
    second = data.draw(similar(first))
    json_differs = json.dumps(first) != json.dumps(second)
    event(f"JSON differs: {json_differs}; Python's == says equal: {first == second}")
    anyio.run(run_change, first, second, options, backend=backend)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"enum": [0, 1]}, {"enum": [False, True]}),
        ({"minimum": 1}, {"minimum": 1.0}),
        ({"const": 0.0}, {"const": -0.0}),
        ({"minimum": 0, "maximum": 9}, {"maximum": 9, "minimum": 0}),
    ],
)
async def test_changes_pythons_equality_misses(
    anyio_backend: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    assert first == second  # Python sees no difference; the model does
    await run_change(
        {"type": "object", "properties": {"x": first}}, {"type": "object", "properties": {"x": second}}, {}
    )


@dataclass
class MutableSession:
    """A `ToolSession` whose listing the test replaces (no transport carries a lone surrogate key)."""

    tools: list[mt.Tool]

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(self.tools))

    async def call_tool(self, name: str, arguments: Any = None, read_timeout_seconds: Any = None) -> Any:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=name)])


async def test_a_tool_that_changes_into_one_that_cannot_be_sent_is_withdrawn_with_the_reason(
    anyio_backend: str,
) -> None:
    session = MutableSession([tool("t", {"type": "object", "properties": {"k": {}}}), tool("u")])
    async with OpenAIPeerToolAdapter() as adapter:
        assert await adapter.add_peer(PEER, session) == ("a__t", "a__u")
        session.tools = [tool("t", {"type": "object", "properties": {"k\ud800": {}}}), tool("u")]
        assert await adapter.refresh_peer(PEER)
        assert [t.name for t in adapter.tools] == ["a__u"]
        reason = adapter.rejected_tools(PEER)["t"]
        assert "not valid Unicode at /properties/k\\ud800" in reason
        [answer] = await adapter.dispatch([{"id": "c", "type": "function", "function": {"name": "a__t"}}])
        assert answer["content"] == f"Error: 'a__t' is not available now: {reason} (it changed). " + (
            "Call only the functions offered now."
        )
        session.tools = [tool("t", {"type": "object", "properties": {"k": {}}}), tool("u")]
        assert await adapter.refresh_peer(PEER)
        assert [t.name for t in adapter.tools] == ["a__t", "a__u"]  # back, under its name
        assert adapter.rejected_tools(PEER) == {}
