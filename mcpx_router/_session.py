"""Talking to a connected peer: `mcp.Client`, `mcp.ClientSession`, or anything shaped like them."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import mcp
import mcp_types as mt

from ._errors import PeerUnavailableError

__all__ = ["NativeSession", "ToolSession", "is_native", "list_all_tools"]

MAX_PAGES = 10_000
"""A peer whose `tools/list` pagination goes on longer than this is treated as broken."""


@runtime_checkable
class ToolSession(Protocol):
    """What the adapter needs of a connected MCP peer: `mcp.Client` and `mcp.ClientSession` both fit."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
    ) -> mt.CallToolResult: ...


class NativeSession:
    """Marks a session that forwards to a real MCP client session, whatever its transport.

    Such a session takes the SDK's `read_timeout_seconds` and `progress_callback` the way
    `mcp.Client` does, so the adapter hands them on instead of bounding the call itself.
    """

    __slots__ = ()


def is_native(session: object) -> bool:
    """Whether `session` takes the SDK's call options: `mcp.Client`, `mcp.ClientSession`, a NativeSession."""
    return isinstance(session, mcp.Client | mcp.ClientSession | NativeSession)


async def _page(session: Any, cursor: str | None, refresh: bool) -> mt.ListToolsResult:
    if isinstance(session, mcp.Client):
        return await session.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
    if isinstance(session, mcp.ClientSession):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return await session.list_tools(params=params)
    result: mt.ListToolsResult = await session.list_tools(cursor=cursor)
    return result


async def list_all_tools(session: Any, *, peer: str, refresh: bool = False) -> list[mt.Tool]:
    """Every tool the peer offers, following `nextCursor` through all pages of `tools/list`."""
    tools: list[mt.Tool] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await _page(session, cursor, refresh)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
        if cursor in seen:
            raise PeerUnavailableError(
                f"peer {peer!r} returned the tools/list cursor {cursor!r} twice; its pagination loops",
                peer=peer,
            )
        seen.add(cursor)
    raise PeerUnavailableError(f"peer {peer!r} listed more than {MAX_PAGES} pages of tools", peer=peer)
