"""Talking to a connected peer: `mcp.Client`, `mcp.ClientSession`, or anything shaped like them."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, Protocol, runtime_checkable

import anyio
import mcp
import mcp_types as mt
import pydantic
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._errors import PeerUnavailableError

__all__ = [
    "HELD_BACK",
    "LostByTransport",
    "NativeSession",
    "ToolSession",
    "UnusableAnswer",
    "call_tool",
    "describe_invalid",
    "first_round_session",
    "is_native",
    "is_peer_answer",
    "list_all_tools",
    "mark_peer_answer",
    "rejected",
    "resume",
    "unusable_answer",
]

MAX_PAGES = 10_000
"""A peer whose `tools/list` pagination goes on longer than this is treated as broken."""
HELD_BACK = "io.github.mcpx-router/held-back"
"""The `_meta` key of a listing page under which a transport of the Router's names the entries it
took out, each with its reason (`{name: reason}`): entries the SDK could not have read."""


class UnusableAnswer(str):
    """The `data` of the error a transport of the Router answers a request with when the peer's
    answer to it could not be used (not a JSON-RPC result, not JSON, nested too deep): the text
    says why. The adapter tells the model what the peer answered instead of waiting for a timeout."""

    __slots__ = ()


class LostByTransport(str):
    """The `data` of a "connection closed" (-32000) error that a transport made up itself for a
    request whose answer can no longer come (its HTTP stream broke or ended): the text is the
    transport's. Any other -32000 error over an open connection is the peer's own answer."""

    __slots__ = ()


def mark_peer_answer(exc: mcp.MCPError) -> mcp.MCPError:
    """Mark a JSON-RPC error that the peer itself answered over a connection known to be open, so
    that it counts as the peer's failure whatever its code (the SDK's "connection closed" included)."""
    exc._mcpx_peer_answer = True  # type: ignore[attr-defined]
    return exc


def is_peer_answer(exc: BaseException) -> bool:
    """Whether `mark_peer_answer` marked `exc`."""
    return getattr(exc, "_mcpx_peer_answer", False) is True


def unusable_answer(exc: BaseException, peer: str) -> str | None:
    """What to tell the model when a call failed because the peer answered with something that is
    no tool result (its transport said so, or the SDK refused the result's shape); else None."""
    if isinstance(exc, mcp.MCPError) and isinstance(exc.data, UnusableAnswer):
        return exc.message
    if isinstance(exc, pydantic.ValidationError):
        return f"peer {peer!r} answered with something that is not a tool result: {describe_invalid(exc)}"
    return None


def describe_invalid(exc: pydantic.ValidationError, *, skip: int = 0) -> str:
    """A validation error in a few words: where and what, for at most three places, no links.

    The errors of one value against each member of a union (a content block of an unknown type)
    are told as one."""
    parts: list[str] = []
    seen: set[tuple[Any, ...]] = set()
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"][skip:])
        member = next((i for i, part in enumerate(loc) if isinstance(part, str) and part[:1].isupper()), None)
        if member is not None:
            place = loc[:member]
            if place in seen:
                continue
            seen.add(place)
            text = f"{_place(place)}: not one of the shapes allowed there ({_value(error.get('input'))})"
        else:
            text = f"{_place(loc)}: {error['msg']}"
        if text not in parts:
            parts.append(text)
    more = len(parts) - 3
    return "; ".join(parts[:3]) + (f" (and {more} more)" if more > 0 else "")


def _place(loc: tuple[Any, ...]) -> str:
    return "/".join(str(part) for part in loc) or "the whole"


def _value(value: Any) -> str:
    """A value as JSON, cut to a few dozen characters."""
    if isinstance(value, str) and len(value) > 60:
        value = value[:60]
    elif isinstance(value, list | dict) and len(value) > 8:
        return f"{'an array' if isinstance(value, list) else 'an object'} of {len(value)} items"
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:59] + "…"


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


async def list_all_tools(
    session: Any, *, peer: str, refresh: bool = False, held_back: dict[str, str] | None = None
) -> list[mt.Tool]:
    """Every tool the peer offers, following `nextCursor` through all pages of `tools/list`.

    `held_back` gets the entries a transport took out of the pages as unreadable (`HELD_BACK`)."""
    tools: list[mt.Tool] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await _page(session, cursor, refresh)
        tools.extend(page.tools)
        if held_back is not None and isinstance(page.meta, dict):
            taken = page.meta.get(HELD_BACK)
            if isinstance(taken, dict):
                held_back.update({str(k): str(v) for k, v in taken.items()})
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
