"""Peers with resources, resource templates and prompts, for the Router's content tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as mt
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import TextResource


def library(name: str = "library") -> MCPServer:
    """An in-process server with two resources, a template and a prompt.

    Its tools `add_resource(name)` and `add_prompt(name)` add one and announce it, as a
    `subscriptions/listen` event at 2026-07-28 and as the older notification otherwise;
    `drop_resource(uri)` takes one away the same way.
    """
    server = MCPServer(name)

    @server.resource("doc://readme", name="readme", description="The readme.")
    def readme() -> str:
        return "Read me first."

    @server.resource("doc://notes", name="notes", mime_type="text/markdown")
    def notes() -> str:
        return "# Notes"

    @server.resource("doc://pages/{page}", name="page")
    def page(page: str) -> str:
        return f"page {page}"

    @server.prompt(description="Greet someone.")
    def greet(who: str, mood: str = "glad") -> str:
        return f"Hello {who}, I am {mood}."

    @server.tool()
    async def add_resource(name: str, ctx: Context) -> str:
        server.add_resource(TextResource(uri=f"doc://{name}", name=name, text=f"text of {name}"))
        if (ctx.protocol_version or "") >= "2026":
            await ctx.notify_resources_changed()
        else:
            await ctx.session.send_resource_list_changed()
        return "added"

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        server.add_prompt(Prompt.from_function(lambda: f"prompt {name}", name=name))
        if (ctx.protocol_version or "") >= "2026":
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        return "added"

    return server


@dataclass
class PagedContent:
    """A lowlevel server listing the given resources, templates and prompts `page_size` to a page.

    Each resource's text is its own URI; a prompt answers with its arguments. With `tools`
    the server also offers tools of those names (each echoes).
    """

    resources: list[mt.Resource]
    prompts: list[mt.Prompt] = field(default_factory=list)
    page_size: int = 2
    tools: list[str] = field(default_factory=list)
    templates: list[mt.ResourceTemplate] = field(default_factory=list)
    cursors: list[str | None] = field(default_factory=list)

    def _page(
        self, items: list[Any], params: mt.PaginatedRequestParams | None
    ) -> tuple[list[Any], str | None]:
        cursor = params.cursor if params is not None else None
        self.cursors.append(cursor)
        start = int(cursor) if cursor else 0
        end = start + self.page_size
        return items[start:end], (str(end) if end < len(items) else None)

    def server(self) -> Server[Any]:
        async def list_resources(
            ctx: Any, params: mt.PaginatedRequestParams | None
        ) -> mt.ListResourcesResult:
            page, cursor = self._page(self.resources, params)
            return mt.ListResourcesResult(resources=page, next_cursor=cursor)

        async def list_templates(
            ctx: Any, params: mt.PaginatedRequestParams | None
        ) -> mt.ListResourceTemplatesResult:
            page, cursor = self._page(self.templates, params)
            return mt.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

        async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
            return mt.ReadResourceResult(contents=[mt.TextResourceContents(uri=params.uri, text=params.uri)])

        async def list_prompts(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListPromptsResult:
            page, cursor = self._page(self.prompts, params)
            return mt.ListPromptsResult(prompts=page, next_cursor=cursor)

        async def get_prompt(ctx: Any, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
            text = f"{params.name}: {sorted((params.arguments or {}).items())}"
            return mt.GetPromptResult(
                messages=[mt.PromptMessage(role="user", content=mt.TextContent(type="text", text=text))]
            )

        async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
            schema = {"type": "object", "properties": {}}
            return mt.ListToolsResult(tools=[mt.Tool(name=n, input_schema=schema) for n in self.tools])

        async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=f"own {params.name}")])

        return Server(
            "paged",
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )


def tools_only() -> Server[Any]:
    """A lowlevel server with one tool and no resources or prompts capability."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[mt.Tool(name="t", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="t")])

    return Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
