"""In-process MCP peers for the model-facing tests: exact schemas, recorded calls, rich results.

`RecordingPeer` is a lowlevel server whose tools carry exactly the input schemas given (no
framework rewrites them) and which records every call it receives, so a test can prove that a
call never reached it. `media_peer()` is an `MCPServer` whose tools return images, audio,
embedded resources, resource links, structured content and very long text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp
import mcp_types as mt
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Audio, Image, MCPServer
from pydantic import BaseModel

Handler = Callable[[dict[str, Any]], Awaitable[mt.CallToolResult]]

# A 1x1 PNG and a few bytes of WAV: real headers, tiny payloads.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = (
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"@\x1f\x00\x00@\x1f\x00\x00\x01\x00\x08\x00data\x00\x00\x00\x00"
)
PNG_B64 = base64.b64encode(PNG).decode()
WAV_B64 = base64.b64encode(WAV).decode()


def text_result(value: str, *, is_error: bool = False) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=value)], is_error=is_error)


async def echo_arguments(arguments: dict[str, Any]) -> mt.CallToolResult:
    """Answer with the arguments received, as sorted JSON."""
    return text_result(json.dumps(arguments, sort_keys=True))


@dataclass
class RecordingPeer:
    """A lowlevel MCP server with tools of exactly the given schemas; records every call."""

    name: str = "rec"
    tools: list[mt.Tool] = field(default_factory=list)
    handlers: dict[str, Handler] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tool(
        self,
        name: str,
        schema: dict[str, Any],
        handler: Handler = echo_arguments,
        description: str = "",
    ) -> RecordingPeer:
        self.tools.append(
            mt.Tool(name=name, description=description or f"The {name} tool.", input_schema=schema)
        )
        self.handlers[name] = handler
        return self

    def server(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
            return mt.ListToolsResult(tools=list(self.tools))

        async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            arguments = dict(params.arguments or {})
            self.calls.append((params.name, arguments))
            return await self.handlers[params.name](arguments)

        return Server(self.name, on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def connected(**servers: Any) -> AsyncIterator[dict[str, mcp.Client]]:
    """An `mcp.Client` connected to each server (a RecordingPeer or anything `mcp.Client` takes)."""
    async with AsyncExitStack() as stack:
        clients = {}
        for key, server in servers.items():
            target = server.server() if isinstance(server, RecordingPeer) else server
            clients[key] = await stack.enter_async_context(mcp.Client(target))
        yield clients


class Reading(BaseModel):
    station: str
    celsius: float


def media_peer(*, long_text_chars: int = 50_000) -> MCPServer:
    """Tools returning each kind of content a model may need to see or read about."""
    server = MCPServer("media")

    @server.tool(structured_output=False)
    def snapshot(camera: str) -> list[Any]:
        """Take a picture with a camera."""
        return [f"Picture from {camera}:", Image(data=PNG, format="png")]

    @server.tool()
    def recording() -> Audio:
        """Record a second of sound."""
        return Audio(data=WAV, format="wav")

    @server.tool(structured_output=False)
    def report() -> list[Any]:
        """A report with an embedded text document, a binary attachment and a link."""
        return [
            mt.EmbeddedResource(
                type="resource",
                resource=mt.TextResourceContents(
                    uri="file:///reports/summary.md", mime_type="text/markdown", text="# Summary\nAll green."
                ),
            ),
            mt.EmbeddedResource(
                type="resource",
                resource=mt.BlobResourceContents(
                    uri="file:///reports/data.pdf", mime_type="application/pdf", blob=PNG_B64
                ),
            ),
            mt.ResourceLink(
                type="resource_link",
                uri="https://example.com/reports/full",
                name="full-report",
                mime_type="text/html",
                description="The full report.",
            ),
        ]

    @server.tool()
    def weather(station: str) -> Reading:
        """The current reading of a weather station."""
        return Reading(station=station, celsius=21.5)

    @server.tool()
    def dump() -> str:
        """A very long log."""
        return "".join(f"line {i:06d}\n" for i in range(long_text_chars // 12 + 1))[:long_text_chars]

    return server
