"""Helpers for the inspector's tests: a Router with in-process peers, served on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as mt
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from mcpx_router import InProcessPeer, Router
from mcpx_router.inspector import Inspector, serve
from mcpx_router.testing import weather_station

WAIT = 15.0


class Point(BaseModel):
    """A point on the plane."""

    x: int
    y: int


def counter_server(name: str = "counter") -> tuple[MCPServer, list[dict[str, Any]]]:
    """An in-process server whose `record` tool keeps every call's arguments (to see whether it ran),
    with a nested argument, an array, an enum and a default; and a tool that fails."""
    server = MCPServer(name)
    calls: list[dict[str, Any]] = []

    @server.tool()
    def record(
        label: str, point: Point, tags: list[str], mode: Literal["fast", "slow"] = "fast", repeat: int = 1
    ) -> str:
        """Record a labelled point."""
        calls.append(
            {"label": label, "point": point.model_dump(), "tags": tags, "mode": mode, "repeat": repeat}
        )
        return f"recorded {label} at {point.x},{point.y} with {len(tags)} tags ({mode})"

    @server.tool()
    def broken(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"broken: {reason}")

    @server.prompt()
    def summarise(text: str) -> str:
        """Summarise a text."""
        return f"Summarise: {text}"

    @server.resource("memo://today", description="Today's memo")
    def memo() -> str:
        return "nothing planned"

    return server, calls


@asynccontextmanager
async def inspected(
    *, stats: bool = True, **options: Any
) -> AsyncIterator[tuple[Router, Inspector, str, list[dict[str, Any]]]]:
    """A Router with the weather station and the counter joined, its inspector served; yields the
    Router, the inspector, the URL it prints (with the token) and the counter's calls."""
    server, calls = counter_server()
    async with Router(stats=stats) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("counter", InProcessPeer(server))
        async with serve(router, **options) as (inspector, url):
            yield router, inspector, url, calls


def base_of(url: str) -> str:
    return url.split("?", 1)[0].rstrip("/")


@asynccontextmanager
async def session(url: str) -> AsyncIterator[httpx2.AsyncClient]:
    """A client that has opened the printed URL: it holds the session cookie."""
    async with httpx2.AsyncClient(base_url=base_of(url), timeout=WAIT) as client:
        first = await client.get(url)
        assert first.status_code == 303, first.text
        yield client


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def odd_server() -> Server[Any]:
    """A low-level server: `snapshot` answers with text and an image; `listy`, whose input schema
    no 2020-12 form can say, is held back by the adapter."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(
            tools=[
                mt.Tool(name="snapshot", description="A picture.", input_schema={"type": "object"}),
                mt.Tool(
                    name="listy",
                    description="A draft-3 schema: `required: true` on a property.",
                    input_schema={
                        "type": "object",
                        "properties": {"q": {"type": "string", "required": True}},
                    },
                ),
            ]
        )

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(
            content=[mt.TextContent(text="a dot"), mt.ImageContent(data=PNG, mime_type="image/png")]
        )

    return Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)


def many_tools_server(count: int) -> Server[Any]:
    """A low-level server with `count` tools `t0000`, `t0001`...; each answers with its own name."""
    tools = [
        mt.Tool(
            name=f"t{i:04d}",
            description=f"Tool {i}.",
            input_schema={"type": "object", "properties": {"key": {"type": "string"}}},
        )
        for i in range(count)
    ]

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(text=params.name)])

    return Server("many", on_list_tools=list_tools, on_call_tool=call_tool)


class Page:
    """An open event stream of the inspector, read in the background as the page's EventSource
    reads it: the events so far in `events`, `ready` set once the stream said hello."""

    def __init__(
        self, client: httpx2.AsyncClient, since: int | None = 0, headers: dict[str, str] | None = None
    ):
        self._client = client
        self._path = "/api/events" if since is None else f"/api/events?since={since}"
        self._headers = headers or {}
        self.events: list[dict[str, Any]] = []
        self.ready = anyio.Event()

    async def run(self) -> None:
        async with self._client.stream("GET", self._path, headers=self._headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    data = json.loads(line.removeprefix("data: "))
                    if "type" in data:
                        self.events.append(data)
                    else:
                        self.ready.set()

    async def wait_for(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The first event of `kind` with these fields; fail after WAIT seconds."""
        with anyio.fail_after(WAIT):
            while True:
                for event in self.events:
                    if event["type"] == kind and all(event.get(k) == v for k, v in fields.items()):
                        return event
                await anyio.sleep(0.01)

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]


@asynccontextmanager
async def page(client: httpx2.AsyncClient, since: int | None = 0, **options: Any) -> AsyncIterator[Page]:
    """A page listening for the block."""
    opened = Page(client, since, **options)
    async with anyio.create_task_group() as tg:
        tg.start_soon(opened.run)
        with anyio.fail_after(WAIT):
            await opened.ready.wait()
        yield opened
        tg.cancel_scope.cancel()
