"""Talking to a connected peer: `mcp.Client`, `mcp.ClientSession`, or anything shaped like them."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import anyio
import mcp
import mcp_types as mt
from mcp.shared.dispatcher import ProgressFnT

from ._errors import PeerUnavailableError

__all__ = ["NativeSession", "ToolSession", "call_client", "is_native", "list_all_tools"]

STATE_ONLY_DELAY = 0.05
"""Seconds `mcp.Client` waits before resending a call answered with only a `request_state`."""

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


async def call_client(
    client: mcp.Client,
    name: str,
    arguments: dict[str, Any] | None,
    read_timeout_seconds: float | None,
    progress_callback: ProgressFnT | None,
) -> mt.CallToolResult:
    """What `client.call_tool(...)` returns, sent on the client's own session when that suffices.

    `mcp.Client.call_tool` wraps `ClientSession.call_tool` (which sends the request, bounds it,
    reports progress and checks the result against the tool's output schema) in three coroutines
    that serve rare cases: results claimed by the client's extensions, a 2026-07-28
    `HEADER_MISMATCH` (the tool is re-listed and the call resent), and `InputRequiredResult`s
    (answered with the client's sampling, elicitation and roots callbacks, then resent). Here the
    call goes to the session; only those cases are handed to `client.call_tool`: a client with
    extensions from the start, a `HEADER_MISMATCH` (the server ran nothing) by resending the call
    through it, and an `InputRequiredResult` by resuming through it with the result's
    `request_state` (the server asks again and the client's callbacks answer; no input request
    is answered twice; a result with nothing to answer is resumed after the client's first
    polling delay).
    """
    if client.extensions:
        return await client.call_tool(name, arguments, read_timeout_seconds, progress_callback)
    try:
        result = await client.session.call_tool(
            name, arguments, read_timeout_seconds, progress_callback, allow_input_required=True
        )
    except mcp.MCPError as exc:
        if exc.code != mt.HEADER_MISMATCH:
            raise
        return await client.call_tool(name, arguments, read_timeout_seconds, progress_callback)
    if isinstance(result, mt.InputRequiredResult):
        if not result.input_requests:  # "still working": wait before asking again, as the client does
            await anyio.sleep(STATE_ONLY_DELAY)
        return await client.call_tool(
            name, arguments, read_timeout_seconds, progress_callback, request_state=result.request_state
        )
    return result


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
