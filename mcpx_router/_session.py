"""Talking to a connected peer: `mcp.Client`, `mcp.ClientSession`, or anything shaped like them."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, runtime_checkable

import anyio
import mcp
import mcp_types as mt
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._errors import PeerUnavailableError

__all__ = [
    "NativeSession",
    "ToolSession",
    "call_tool",
    "first_round_session",
    "is_native",
    "list_all_tools",
    "rejected",
    "resume",
]

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


def call_tool(
    session: Any,
    name: str,
    arguments: dict[str, Any] | None,
    read_timeout_seconds: float | None,
    progress_callback: ProgressFnT | None,
) -> Awaitable[mt.CallToolResult]:
    """`session.call_tool(name, arguments, read_timeout_seconds, progress_callback)` for a native
    session; an `mcp.Client` without extensions is called the cheaper way `_client_call` takes."""
    if type(session) is mcp.Client and not session.extensions:
        return _client_call(session, name, arguments, read_timeout_seconds, progress_callback)
    return session.call_tool(  # type: ignore[no-any-return]
        name, arguments, read_timeout_seconds=read_timeout_seconds, progress_callback=progress_callback
    )


async def _client_call(
    client: mcp.Client,
    name: str,
    arguments: dict[str, Any] | None,
    read_timeout_seconds: float | None,
    progress_callback: ProgressFnT | None,
) -> mt.CallToolResult:
    """What `client.call_tool` returns or raises, its first round sent on the client's session.

    `mcp.Client.call_tool` wraps `ClientSession.call_tool` (which checks the result against the
    tool's output schema) in a driver for the cases below, at a cost on every call. Here the
    first round goes to the session itself; the client takes over only where its driver has
    work to do (`rejected`, `resume`), and no round is sent twice. (`_dispatch._run` makes the
    same three steps inline, one coroutine fewer on the usual call.)
    """
    try:
        first = await client.session.call_tool(
            name, arguments, read_timeout_seconds, progress_callback, allow_input_required=True
        )
    except mcp.MCPError as exc:
        return await rejected(client, exc, name, arguments, read_timeout_seconds, progress_callback)
    if isinstance(first, mt.CallToolResult):
        return first
    return await resume(client, first, name, arguments, read_timeout_seconds, progress_callback)


def first_round_session(session: Any) -> mcp.ClientSession | None:
    """The session that takes the first round of an `mcp.Client`'s calls (one without extensions,
    which may claim a result's shape); None for any other session, called as it is."""
    if type(session) is mcp.Client and not session.extensions:
        return session.session
    return None


def rejected(
    client: mcp.Client,
    exc: mcp.MCPError,
    name: str,
    arguments: dict[str, Any] | None,
    read_timeout_seconds: float | None,
    progress_callback: ProgressFnT | None,
) -> Awaitable[mt.CallToolResult]:
    """After a first round that raised `exc`: a `HEADER_MISMATCH` on a 2026-07-28 connection,
    which the server sends without running the tool, goes to `client.call_tool`, which sends the
    call again and recovers as it does (re-list, resend once); anything else is raised."""
    if exc.code != mt.HEADER_MISMATCH or client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise exc
    return client.call_tool(name, arguments, read_timeout_seconds, progress_callback)


async def resume(
    client: mcp.Client,
    first: mt.InputRequiredResult,
    name: str,
    arguments: dict[str, Any] | None,
    read_timeout_seconds: float | None,
    progress_callback: ProgressFnT | None,
) -> mt.CallToolResult:
    """After a first round answered with an `InputRequiredResult` (2026-07-28): its input
    requests are answered through the client's own callbacks (all at once, as the client does; a
    refusal raises `MCPError`), or, when it carries only a `request_state`, after the driver's
    first pause; then `client.call_tool` resumes the call from there with the answers and that
    state."""
    if first.input_requests:
        responses: mt.InputResponses | None = await _answer_inputs(client.session, first.input_requests)
    else:
        await anyio.sleep(_STATE_ONLY_PAUSE)
        responses = None
    return await client.call_tool(
        name,
        arguments,
        read_timeout_seconds,
        progress_callback,
        input_responses=responses,
        request_state=first.request_state,
    )


_STATE_ONLY_PAUSE = 0.05
"""The SDK driver's first pause before resuming a call answered with only a `request_state`."""


async def _answer_inputs(
    session: mcp.ClientSession, requests: dict[str, mt.InputRequest]
) -> mt.InputResponses:
    """Each input request answered by the session's callbacks, concurrently; a refusal ends them all."""
    responses: mt.InputResponses = {}
    refused: list[mt.ErrorData] = []

    async def answer(key: str, request: mt.InputRequest) -> None:
        meta = request.params.meta if request.params else None
        response = await session.dispatch_input_request(
            ClientRequestContext(session=session, request_id=key, meta=meta), request
        )
        if isinstance(response, mt.ErrorData):
            refused.append(response)
            tg.cancel_scope.cancel()
        else:
            responses[key] = response

    async with anyio.create_task_group() as tg:
        for key, request in requests.items():
            tg.start_soon(answer, key, request)
    if refused:
        raise mcp.MCPError.from_error_data(refused[0])
    return responses
