"""An HTTP peer that answers badly on purpose costs only the call or the entry it spoils.

The answers of `support/hostile_stdio_server.py` are served over HTTP on 127.0.0.1
(`support/hostile_http_server.py`), as JSON responses and SSE responses of streamable HTTP and
as events of the legacy HTTP+SSE transport, beside an ordinary
stdio peer that must keep working. Calls are given a time limit far beyond the test's own
timeout, so an answer that were lost would fail the test instead of being answered "did not
answer within N s". An in-process server's -32000 error is its own too.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp
import pytest
from mcp.server.mcpserver import MCPServer

from mcpx_router import HttpPeer, InProcessPeer, Router, SsePeer

from ...support.hostile_http_server import serve_hostile
from .test_hostile_peer import NEVER, UNUSABLE, hostile, still_fine

KINDS = pytest.mark.parametrize("kind", ["json", "sse", "legacy"])
"""The peer's answers as JSON responses or SSE responses of streamable HTTP, or as events of the
legacy HTTP+SSE transport's stream (an `SsePeer`)."""

# mcp 2.3's streamable HTTP client returns from `async for` over an SSE response without closing the
# httpx2 async generators; trio warns when they are garbage collected (asyncio does not).
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning"),
]


NOT_JSON = {
    "json": "EOF while parsing a string at line 1 column 75)",  # the SDK's parser
    "sse": "EOF while parsing a string at line 1 column 75)",
    "legacy": "Unterminated string starting at: line 1 column 68 (char 67))",  # Python's json
}


@asynccontextmanager
async def routed(*options: str, kind: str) -> AsyncIterator[Router]:
    """A Router with the hostile HTTP peer `h` and an ordinary stdio one, `plain`."""
    with serve_hostile(*options, sse=kind == "sse", legacy=kind == "legacy") as url:
        async with Router(connect_timeout=NEVER, call_timeout=NEVER) as router:
            await router.join("h", SsePeer(url) if kind == "legacy" else HttpPeer(url))
            await router.join("plain", hostile())
            yield router


@KINDS
@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("five", "its result is 5, not an object"),
        ("null", "its result is null, not an object"),
        ("not_json", "it is not valid JSON ("),
        ("deep_result", "it is nested deeper than 200 levels"),
        ("deeper_result", "it is nested deeper than 200 levels"),
        ("content_string", "content: Input should be a valid list"),
        ("unknown_block", 'content/0: not one of the shapes allowed there ({"type": "hologram"})'),
        ("empty", "content: Field required"),
    ],
)
async def test_an_answer_that_is_no_result_is_answered_at_once(
    tool: str, why: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with routed(kind=kind) as router:
        outcome = await router.call(f"h__{tool}", {})
        if tool == "not_json":  # in the words of the parser that refused it
            why += NOT_JSON[kind]
        assert (outcome.text, outcome.error_type) == (UNUSABLE + why, "tool_error")
        assert "pydantic" not in outcome.text
        await still_fine(router)
    # The SDK's own record of an answer it could not parse (with a traceback) is not repeated.
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


@KINDS
async def test_an_error_with_the_connection_closed_code_is_the_peers_own_failure(kind: str) -> None:
    async with routed(kind=kind) as router:
        outcome = await router.call("h__failing", {})
        assert outcome.text == "Error: peer 'h' failed to run 'failing': MCPError: database down"
        assert outcome.error_type == "peer_error"  # not peer_unavailable
        long = await router.call("h__long_error", {})
        assert long.error_type == "peer_error"
        assert len(long.text) < 100_200 and long.text.endswith("the end")
        await still_fine(router)


async def test_a_stream_the_transport_says_ended_is_a_lost_connection() -> None:
    async with routed(kind="json") as router:
        outcome = await router.call("h__vanish", {})
        assert outcome.error_type == "peer_unavailable"
        assert outcome.text == (
            "Error: h__vanish: the call was sent, but the connection to peer 'h' failed (MCPError: "
            "SSE stream ended without a response) before it answered; it may or may not have taken effect"
        )
        await still_fine(router)


@KINDS
async def test_a_lone_surrogate_escape_is_read_as_json_reads_it(kind: str) -> None:
    """The SDK's parser refuses it; Python's `json` reads it, as the stdio transport does."""
    async with routed(kind=kind) as router:
        outcome = await router.call("h__surrogate", {})
        assert not outcome.is_error, outcome.text
        assert outcome.text.startswith("half ")
        await still_fine(router)


@KINDS
async def test_a_malformed_entry_of_a_listing_is_held_back_alone(kind: str) -> None:
    async with routed("--bad-listing", kind=kind) as router:
        names = {tool.name for tool in router.tools}
        assert {"h__ok", "h__echo", "h__nested_95", "h__vanish"} <= names
        unreadable = "peer 'h' listed a tool that cannot be read: "
        not_a_schema = "inputSchema: Input should be a valid dictionary or instance of InputSchema"
        assert router.rejected_tools("h") == {
            "schema_string": unreadable + not_a_schema,
            "schema_null": unreadable + not_a_schema,
            "(entry 17, no name)": unreadable + "name: Field required",
            "(entry 18, the name 42)": unreadable + "name: Input should be a valid string",
            "nested_120": unreadable + "it is nested deeper than 200 levels",
            "nested_5000": unreadable + "it is nested deeper than 200 levels",
        }
        assert [prompt.prompt.name for prompt in router.prompts("h")] == ["greet"]
        assert [resource.resource.name for resource in router.resources("h")] == ["a"]
        await still_fine(router)


@KINDS
async def test_large_results_are_read_and_cut_to_their_end(kind: str) -> None:
    async with routed("--blocks", "5000", "--mb", "3", kind=kind) as router:
        blocks = await router.call("h__blocks", {})
        assert blocks.text.startswith("[4,000 earlier content blocks left out]\nblock 4000\n")
        assert blocks.text.endswith("\nblock 4999")
        huge = await router.call("h__huge", {})
        assert huge.text.startswith("xxx") and huge.text.endswith("xxxend")
        assert "characters omitted" in huge.text and len(huge.text) < 100_200
        await still_fine(router)


def failing_server() -> MCPServer:
    server = MCPServer("failing")

    @server.tool()
    def failing() -> str:
        """Fails with the first code of JSON-RPC's range of server errors."""
        raise mcp.MCPError(code=-32000, message="database down")

    return server


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_in_process_servers_connection_closed_code_is_its_own_failure(mode: str) -> None:
    async with Router(call_timeout=NEVER) as router:
        await router.join("p", InProcessPeer(failing_server(), mode=mode))  # type: ignore[arg-type]
        outcome = await router.call("p__failing", {})
        assert outcome.text == "Error: peer 'p' failed to run 'failing': MCPError: database down"
        assert outcome.error_type == "peer_error"
        assert router.status("p").healthy
