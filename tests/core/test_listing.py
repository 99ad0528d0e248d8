"""Whatever text a peer lists, or a host picks as a peer id, the tools go out legal and sendable.

Peers are real in-process MCP servers (lowlevel `Server` through `mcp.Client`, whose in-memory
transport carries lone surrogates as they are) and, for numbers JSON cannot carry, a stdio
server that writes `NaN` and `Infinity` as Python's `json` does. What we send is serialised
with the `openai` SDK's own encoder, and once through the real SDK to a local endpoint.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
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
    InvalidPeerIdError,
    OpenAIPeerToolAdapter,
    RouterError,
    StdioPeer,
    ToolKey,
)
from mcpx_router._naming import MAX_PEER_ID_LENGTH, check_peer_id

from ..support._openai_replay import one_turn

BACKENDS = ["asyncio", "trio"]
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SURROGATE = re.compile("[\ud800-\udfff]")
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
HERE = Path(__file__).resolve().parent.parent / "support"

EVERY_CHARACTER = st.characters(exclude_categories=())
"""Every code point: lone surrogates, NUL, controls, marks, emoji, unassigned ones."""
TRICKY = [
    "a__b", "__", "_", "-", "x.y", "x_y", "x y", "\x00", "\u202e", "\u200f", "e\u0301", "🙂",
    "\ud800", "\udfff", "\ud83d\ude00", "日本語", "a" * 64, "a" * 200, "a__b__c", "peer\x00nul",
]  # fmt: skip
TEXT = st.one_of(
    st.text(EVERY_CHARACTER, min_size=1, max_size=12),
    st.sampled_from(TRICKY),
    st.lists(st.sampled_from(["a", "_", "__", ".", "\ud800", "é"]), min_size=1, max_size=6).map("".join),
    st.text(EVERY_CHARACTER, min_size=60, max_size=300),
)


def legal(name: str) -> bool:
    return OPENAI_NAME.fullmatch(name) is not None


def sendable(value: Any) -> bytes:
    """`value` encoded as the openai SDK encodes a request body (raises if it cannot be)."""
    return openapi_dumps(value)


# -- peer ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "peer_id", ["time", "my peer", "a__b", "日本語", "emoji-🙂", "\u202eevil", "e\u0301", "p" * 128, "x.y"]
)
def test_peer_ids_that_are_accepted(peer_id: str) -> None:
    assert check_peer_id(peer_id) == peer_id


@pytest.mark.parametrize(
    ("peer_id", "says"),
    [
        ("", "non-empty"),
        (None, "non-empty"),
        (42, "non-empty"),
        (b"bytes", "non-empty"),
        ("p" * 129, "129 characters"),
        ("nul\x00", "control character (U+0000) at index 3"),
        ("line\nbreak", "control character (U+000A)"),
        ("\x85", "control character (U+0085)"),
        ("half\ud83d", "surrogate code point (U+D83D) at index 4"),
        ("\udc00", "surrogate code point (U+DC00)"),
    ],
)
def test_peer_ids_that_are_refused_say_why(peer_id: Any, says: str) -> None:
    with pytest.raises(InvalidPeerIdError) as info:
        check_peer_id(peer_id)
    message = str(info.value)
    assert says in message
    message.encode()  # the message itself is valid text, whatever the id held
    assert len(message) < 300


@settings(max_examples=500, deadline=None)
@given(st.one_of(TEXT, st.text(EVERY_CHARACTER, max_size=200)))
def test_check_peer_id_accepts_exactly_the_documented_ids(peer_id: str) -> None:
    valid = (
        0 < len(peer_id) <= MAX_PEER_ID_LENGTH
        and not SURROGATE.search(peer_id)
        and not CONTROL.search(peer_id)
    )
    try:
        assert check_peer_id(peer_id) == peer_id
    except InvalidPeerIdError as exc:
        assert not valid, exc
        str(exc).encode()
    else:
        assert valid
        peer_id.encode()


# -- any text in a listing ---------------------------------------------------------------------


def listing_server(tools: list[mt.Tool], calls: list[str] | None = None) -> Server[Any]:
    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(tools))

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        if calls is not None:
            calls.append(params.name)
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="ok")])

    return Server("listing", on_list_tools=list_tools, on_call_tool=call_tool)


@dataclass
class ListingSession:
    """A `ToolSession` listing exactly `tools`: no transport carries every code point (the SDK's
    JSON reader refuses lone surrogates; its in-memory transport fails on some of them)."""

    tools: list[mt.Tool]
    calls: list[str] = field(default_factory=list)

    async def list_tools(self, cursor: str | None = None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(self.tools))

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        self.calls.append(name)
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="ok")])


@st.composite
def tools(draw: st.DrawFn) -> mt.Tool:
    """A tool whose name, description, title and schema text may hold any code point."""
    properties = draw(
        st.dictionaries(
            TEXT,
            st.fixed_dictionaries(
                {"type": st.just("string")},
                optional={"description": TEXT, "title": TEXT, "enum": st.lists(TEXT, min_size=1, max_size=3)},
            ),
            max_size=3,
        )
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if draw(st.booleans()):
        schema["description"] = draw(TEXT)
    return mt.Tool(
        name=draw(TEXT),
        description=draw(st.none() | TEXT),
        title=draw(st.none() | TEXT),
        input_schema=schema,
    )


def must_reject(tool: mt.Tool) -> bool:
    """Whether text the model's arguments depend on (a property name, an enum value) is not valid Unicode."""
    for name, prop in tool.input_schema["properties"].items():
        if SURROGATE.search(name) or any(SURROGATE.search(v) for v in prop.get("enum", [])):
            return True
    return False


class Utf8Log(logging.Handler):
    """Writes records as a UTF-8 log file would, keeping what could not be written."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.unwritable: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.format(record).encode()
        except UnicodeEncodeError:
            self.unwritable.append(repr(record.getMessage()))


async def check_listing(peer_id: str, listed: list[mt.Tool], options: dict[str, Any]) -> None:
    log = Utf8Log()
    logger = logging.getLogger("mcpx_router")
    logger.addHandler(log)
    try:
        await check_published(peer_id, listed, options)
    finally:
        logger.removeHandler(log)
    assert log.unwritable == []  # what is logged about a listing can be written as UTF-8


async def check_published(peer_id: str, listed: list[mt.Tool], options: dict[str, Any]) -> None:
    client = ListingSession(listed)
    calls = client.calls
    async with OpenAIPeerToolAdapter(**options) as adapter:
        try:
            names = await adapter.add_peer(peer_id, client)
        except InvalidPeerIdError:
            with pytest.raises(InvalidPeerIdError):
                check_peer_id(peer_id)
            assert adapter.peers == () and adapter.version == 0
            return
        first = {tool.name: tool for tool in reversed(listed)}  # the first of each name is used
        published = {t.tool: t for t in adapter.tools_of(peer_id)}
        rejected = adapter.rejected_tools(peer_id)
        assert names == tuple(t.name for t in published.values())
        assert published.keys() | rejected.keys() == first.keys()
        listed_twice = {t.name for t in listed if [u.name for u in listed].count(t.name) > 1}
        assert published.keys() & rejected.keys() <= listed_twice
        for tool_name, tool in first.items():
            if tool_name in published:
                assert not must_reject(tool)
            else:
                assert must_reject(tool), rejected[tool_name]
                assert "not valid Unicode" in rejected[tool_name]
            rejected.get(tool_name, "").encode()
        # Names: legal, one per pair, resolved back to the pair.
        assert all(legal(t.name) for t in published.values())
        assert len({t.name for t in published.values()}) == len(published)
        for tool_name, entry in published.items():
            assert adapter.resolve(entry.name) == ToolKey(peer_id, tool_name)
            tool = first[tool_name]
            described = (tool.description or "").strip() or (tool.title or "").strip()
            if SURROGATE.search(described):
                assert "\ufffd" in entry.description
            assert not SURROGATE.search(entry.description)
        # What we send encodes as the SDK encodes it, in every format.
        for view in (
            adapter.get_openai_tools(max_tools=None),
            adapter.get_responses_tools(max_tools=None),
            adapter.get_openai_functions(max_tools=None),
        ):
            assert json.loads(sendable(list(view))) == json.loads(json.dumps(list(view)))
        # A call reaches the peer under the name the peer gave the tool.
        for tool_name, entry in published.items():
            if not entry.parameters.get("properties"):
                outcome = await adapter.call(entry.name, {})
                assert not outcome.is_error, outcome.text
                assert calls[-1] == tool_name
        # The names are a function of the pairs: a fresh adapter gives the same ones.
        await adapter.remove_peer(peer_id)
        assert await adapter.add_peer(peer_id, client) == names


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    peer_id=TEXT,
    listed=st.lists(tools(), min_size=1, max_size=4),
    strict=st.sampled_from([False, None, True]),
)
def test_any_text_in_a_listing_is_published_legally_or_rejected_with_a_reason(
    backend: str, peer_id: str, listed: list[mt.Tool], strict: bool | None
) -> None:
    anyio.run(check_listing, peer_id, listed, {"strict": strict}, backend=backend)


async def test_names_that_sanitise_alike_or_split_alike_stay_apart(anyio_backend: str) -> None:
    listed = [
        mt.Tool(name=n, input_schema={"type": "object"}) for n in ["x.y", "x y", "x_y", "x\ud800y", "x\x00y"]
    ]
    twin = [mt.Tool(name="b__c", input_schema={"type": "object"})]
    async with (
        mcp.Client(listing_server(listed)) as first,
        mcp.Client(listing_server(twin)) as second,
        OpenAIPeerToolAdapter() as adapter,
    ):
        names = await adapter.add_peer("a__b", first) + await adapter.add_peer("a", second)
        assert len(set(names)) == 6 and all(legal(n) for n in names)
        assert names[2] == "a__b__x_y"  # the readable name is the legal one's
        assert adapter.resolve(names[-1]) == ToolKey("a", "b__c")
        sendable(adapter.get_openai_tools())


# -- peer ids through the Router ---------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    peer_id=TEXT | st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=40),
    tool_name=TEXT,
)
def test_router_join_takes_any_text_as_an_id_or_refuses_it(
    backend: str, peer_id: str, tool_name: str
) -> None:
    from mcpx_router import InProcessPeer, Router

    async def main() -> None:
        server = listing_server(
            [mt.Tool(name=tool_name, description="d\ud800", input_schema={"type": "object"})]
        )
        async with Router() as router:
            try:
                names = await router.join(peer_id, InProcessPeer(server))
            except RouterError as exc:
                assert isinstance(exc, InvalidPeerIdError), exc
                assert router.peers == () and router.version == 0
                event("the id was refused")
                return
            event("joined")
            assert len(names) == 1 and legal(names[0])
            assert router.adapter.resolve(names[0]) == ToolKey(peer_id, tool_name)
            sendable(list(router.get_openai_tools()))
            await router.leave(peer_id)
            assert router.tools == ()

    anyio.run(main, backend=backend)


# -- numbers and text JSON cannot carry, from a server that writes them -----------------------


ODD_SERVER = HERE / "odd_listing_server.py"


async def test_nan_and_infinities_from_a_stdio_server_reject_only_their_tool(anyio_backend: str) -> None:
    """Python's `json` writes NaN and Infinity, and the SDK reads them (and 1e400) as floats; the
    `openai` SDK cannot send them on (`allow_nan=False`). Only those tools are held back."""
    from mcpx_router import Router

    async with Router() as router:
        names = await router.join("odd", StdioPeer(sys.executable, [str(ODD_SERVER)]))
        assert names == ("odd__fine",)
        rejected = router.adapter.rejected_tools("odd")
        assert set(rejected) == {"nan_bound", "huge", "infinite_default"}
        assert "the number nan at /properties/x/maximum, which JSON cannot carry" in rejected["nan_bound"]
        assert "the number -inf at /properties/x/minimum" in rejected["huge"]
        assert "the number inf at /properties/x/default" in rejected["infinite_default"]
        for view in (router.get_openai_tools(), router.get_responses_tools(), router.get_openai_functions()):
            sendable(list(view))
        assert not (await router.call("odd__fine", {"x": 1})).is_error


async def test_a_lone_surrogate_escape_on_the_wire_is_read_and_repaired(anyio_backend: str) -> None:
    """The SDK's JSON reader refuses a message holding a lone surrogate escape; the Router's stdio
    transport reads it as Python's `json` does, so the listing arrives at once and the surrogate
    in the description is replaced by U+FFFD, as for any listed tool."""
    from mcpx_router import Router

    async with Router(connect_timeout=3600) as router:  # a lost listing would meet the test's timeout
        spec = StdioPeer(sys.executable, [str(ODD_SERVER), "--lone-surrogate"])
        assert await router.join("odd", spec) == ("odd__fine", "odd__worn")
        [worn] = [tool for tool in router.tools if tool.name == "odd__worn"]
        assert worn.description is not None and "Half an emoji: \ufffd" in worn.description
        sendable(list(router.get_openai_tools()))


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_sdk_sends_a_catalogue_with_repaired_and_rejected_tools(
    anyio_backend: str, api: str
) -> None:
    listed = [
        mt.Tool(name="ok", description="Fine.", input_schema={"type": "object"}),
        mt.Tool(name="worn\ud800", description="Cut \ud83d", input_schema={"type": "object"}),
        mt.Tool(
            name="bad",
            input_schema={"type": "object", "properties": {"k\udc00": {"type": "string"}}},
        ),
    ]
    session = ListingSession(listed)
    async with OpenAIPeerToolAdapter() as adapter:
        names = await adapter.add_peer("p", session)
        assert names[0] == "p__ok" and len(names) == 2
        assert "k\\udc00" in adapter.rejected_tools("p")["bad"]
        _, bodies = await one_turn(api, adapter, [("c1", names[1], "{}")], prompt="go")
    tools = bodies[0]["tools"]
    sent = [t["function"] if api == "chat" else t for t in tools]
    assert [t["name"] for t in sent] == list(names)
    assert sent[1]["description"] == "Cut \ufffd (via p)"
    # The call reached the tool, and its answer went back in the second request.
    if api == "chat":
        answers = [m for m in bodies[1]["messages"] if m.get("role") == "tool"]
        assert [(m["tool_call_id"], m["content"]) for m in answers] == [("c1", "ok")]
    else:
        answers = [i for i in bodies[1]["input"] if i.get("type") == "function_call_output"]
        assert [(i["call_id"], i["output"]) for i in answers] == [("c1", "ok")]
    assert session.calls == ["worn\ud800"]


async def test_cyclic_and_very_deep_schemas_are_published_as_converted(anyio_backend: str) -> None:
    """A cycle (only an in-process schema can have one) or nesting beyond what JSON encoders
    follow is cut by the conversion; what is sent is that conversion, and it is sendable."""
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["again"] = cyclic
    deep: dict[str, Any] = {"type": "object"}
    inner = deep
    for _ in range(3000):
        inner["properties"] = {"x": {"type": "object"}}
        inner = inner["properties"]["x"]
    listed = [mt.Tool(name="cyclic", input_schema=cyclic), mt.Tool(name="deep", input_schema=deep)]
    session = ListingSession(listed)
    async with OpenAIPeerToolAdapter() as adapter:
        assert await adapter.add_peer("p", session) == ("p__cyclic", "p__deep")
        version = adapter.version
        sendable(list(adapter.get_openai_tools()))
        assert not await adapter.refresh_peer("p")  # the same listing again: no change
        assert adapter.version == version


@pytest.mark.anyio
@pytest.mark.parametrize("schema", [[1, 2], True, False, "object", 7, 1.5])
async def test_a_schema_that_is_not_an_object_rejects_only_its_tool(anyio_backend: str, schema: Any) -> None:
    """A session that skips the SDK's validation can hand over any value as an input schema: the
    tool is rejected with a reason (no traceback logged), its neighbour is published."""
    odd = mt.Tool.model_construct(name="odd", input_schema=schema)
    session = ListingSession([odd, mt.Tool(name="fine", input_schema={"type": "object"})])
    async with OpenAIPeerToolAdapter() as adapter:
        assert await adapter.add_peer("p", session) == ("p__fine",)
        reason = adapter.rejected_tools("p")["odd"]
        assert f"its input schema is {type(schema).__name__}, not a JSON object" in reason
        (answer,) = await adapter.dispatch([{"name": "p__odd", "arguments": "{}"}])
        assert answer["content"].startswith("Error:") and session.calls == []
