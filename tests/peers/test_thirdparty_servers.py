"""Smoke tests for tests/support/_servers.py: each real third-party server installs, starts,
lists and answers.

Plain ``mcp.Client`` only. Sessions are opened inside the tests, so each runs on asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.session import ClientRequestContext, IncomingMessage

from ..support import _servers

# The usual per-test limit, but without the module's install step (first run only, can take minutes).
pytestmark = [pytest.mark.anyio, pytest.mark.thirdparty, pytest.mark.timeout(600, func_only=True)]

EVERYTHING_BASE_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "simulate-research-query",  # registered after `initialized`, whatever the client declares
}

PAGE_TEXT = "The router found this paragraph on a local test page."


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Install every server once per module (lazily, reused from .cache/ when present)."""
    _servers.install_all()


@pytest.fixture
def web_page() -> Iterator[str]:
    with _servers.local_web_page(PAGE_TEXT) as url:
        yield url


def _texts(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_time_server_over_stdio() -> None:
    async with Client(_servers.time_server_params()) as client:
        listing = await client.list_tools()
        result = await client.call_tool(
            "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
    assert {tool.name for tool in listing.tools} == {"get_current_time", "convert_time"}
    assert not result.is_error, _texts(result)
    assert result.structured_content is not None
    assert result.structured_content["target"]["datetime"].endswith("T21:00:00+09:00")


async def test_fetch_server_over_stdio(web_page: str) -> None:
    async with Client(_servers.fetch_server_params()) as client:
        listing = await client.list_tools()
        result = await client.call_tool("fetch", {"url": web_page})
    assert [tool.name for tool in listing.tools] == ["fetch"]
    assert not result.is_error, _texts(result)
    assert f"Contents of {web_page}:" in _texts(result)
    assert PAGE_TEXT in _texts(result)


async def test_git_server_over_stdio(tmp_path: Path) -> None:
    repo = _servers.init_git_repo(tmp_path / "repo", message="Seed commit for the router")
    async with Client(_servers.git_server_params(repo)) as client:
        listing = await client.list_tools()
        result = await client.call_tool("git_log", {"repo_path": str(repo), "max_count": 1})
    assert {"git_status", "git_log", "git_diff", "git_add", "git_commit", "git_show"} <= {
        tool.name for tool in listing.tools
    }
    assert len(listing.tools) == 12
    assert not result.is_error, _texts(result)
    assert "Seed commit for the router" in _texts(result)


async def test_everything_server_over_stdio() -> None:
    async with Client(_servers.everything_stdio_params()) as client:
        listing = await client.list_tools()
        result = await client.call_tool("echo", {"message": "hello router"})
    assert {tool.name for tool in listing.tools} == EVERYTHING_BASE_TOOLS
    assert _texts(result) == "Echo: hello router"


# mcp 2.3's streamable HTTP client returns from `async for` over an SSE response without closing the
# httpx2 async generators; trio warns when they are garbage collected (asyncio does not).
@pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning")
async def test_everything_server_over_streamable_http() -> None:
    async with _servers.everything_http() as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with Client(url) as client:
            listing = await client.list_tools()
            result = await client.call_tool("get-sum", {"a": 2, "b": 3})
        port = int(url.removeprefix("http://127.0.0.1:").removesuffix("/mcp"))
    assert {tool.name for tool in listing.tools} == EVERYTHING_BASE_TOOLS
    assert _texts(result) == "The sum of 2 and 3 is 5."
    with pytest.raises(OSError):  # the server was stopped on exit
        await anyio.connect_tcp("127.0.0.1", port)


async def _decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def test_everything_server_features_for_a_router() -> None:
    """The server-everything facts written down in tests/support/_servers.py, checked in one session."""
    list_changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            list_changed.set()

    updates: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))

    params = _servers.everything_stdio_params()
    async with Client(params, message_handler=on_message, elicitation_callback=_decline) as client:
        listing = await client.list_tools()
        with anyio.fail_after(10):
            await list_changed.wait()
        tools = {tool.name: tool for tool in listing.tools}
        long_running = await client.call_tool(
            "trigger-long-running-operation", {"duration": 0.2, "steps": 2}, progress_callback=on_progress
        )
        image = await client.call_tool("get-tiny-image", {})
        links = await client.call_tool("get-resource-links", {"count": 2})
        embedded = await client.call_tool("get-resource-reference", {"resourceType": "Blob", "resourceId": 2})
        structured = await client.call_tool("get-structured-content", {"location": "Chicago"})
        invalid = await client.call_tool("get-sum", {"a": "x"})
        research = await client.call_tool("simulate-research-query", {"topic": "x"})
        with pytest.raises(MCPError) as url_error:
            await client.call_tool(
                "trigger-url-elicitation", {"url": "https://example.com", "errorPath": True}
            )

    assert listing.next_cursor is None
    assert {"trigger-elicitation-request", "trigger-url-elicitation"} <= tools.keys()
    assert tools["trigger-long-running-operation"].input_schema["properties"]["steps"]["default"] == 5
    assert tools["simulate-research-query"].execution is not None
    assert tools["simulate-research-query"].execution.task_support == "required"
    assert not long_running.is_error
    assert updates == [(1, 2), (2, 2)]
    assert [type(block) for block in image.content] == [
        types.TextContent,
        types.ImageContent,
        types.TextContent,
    ]
    assert [type(block) for block in links.content] == [
        types.TextContent,
        types.ResourceLink,
        types.ResourceLink,
    ]
    assert any(isinstance(block, types.EmbeddedResource) for block in embedded.content)
    assert structured.structured_content is not None
    assert set(structured.structured_content) == {"temperature", "conditions", "humidity"}
    assert invalid.is_error and "-32602" in _texts(invalid)
    assert research.is_error and "-32601" in _texts(research)
    assert url_error.value.code == -32042
