"""Running one tool call on one peer: the call bounded, whatever became of it rendered."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp
import mcp_types as mt
import sniffio
from mcp.shared.dispatcher import ProgressFnT

from ._errors import PeerUnavailableError, UsageError, redact
from ._published import PublishedTool
from ._session import (
    ToolSession,
    call_tool,
    first_round_session,
    is_peer_answer,
    rejected,
    resume,
    unusable_answer,
)
from .model._budget import matches
from .model._results import render, truncate

__all__ = [
    "MAY_HAVE_RUN",
    "NOT_SENT",
    "CallProgress",
    "Outcome",
    "PeerEntry",
    "Turn",
    "backend_clock",
    "check_limit",
    "check_timeout",
    "describe",
    "error",
    "patterns",
    "run_on_peer",
]

logger = logging.getLogger("mcpx_router")


@dataclass(frozen=True, slots=True)
class CallProgress:
    """A progress notification from a peer about a tool call that is still running."""

    peer: str
    version: int
    name: str
    """The public name that was called."""
    tool: str
    call_id: str | None
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one tool call."""

    text: str
    """What the model reads; starts with "Error:" when `is_error`."""
    is_error: bool
    tool: PublishedTool | None = None
    """The tool that was called, when the name resolved."""
    result: mt.CallToolResult | None = None
    """The peer's own result, when it answered."""
    error_type: str | None = None
    """What kind of failure, when `is_error` (None when the call succeeded); the one vocabulary
    spans (`error.type`), statistics and failover use:

    - "unknown_tool", "invalid_call": no tool of that name, or not a function call; no peer called.
    - "invalid_arguments": refused by the schema check, or by the peer (JSON-RPC -32602).
    - "peer_busy": not sent: no slot of the peer's `max_concurrency` came free in time.
    - "not_sent": not sent: the peer had left or its connection failed before the call was written.
    - "peer_unavailable": the connection failed after the call was written: it may have run.
    - "timeout": no answer in time; the call was abandoned and may have run.
    - "tool_error": the tool answered with `isError`, or the peer answered with something that is
      no tool result (not JSON, not an object, the wrong shape, nested too deep).
    - "peer_error": the peer answered the call with a JSON-RPC error of its own (any code but
      -32602, -32000 included while its connection is open), or its session raised any other
      exception; counted as a tool error.

    `NOT_SENT` holds the kinds of a call that never reached its peer, `MAY_HAVE_RUN` those of a
    call that got no answer but may have taken effect."""
    group: str | None = None
    """The group the model called, when it called one; `tool` is the member that served it."""


NOT_SENT = frozenset({"peer_busy", "not_sent"})
"""`Outcome.error_type`s of a call that never reached its peer: it is safe to send it elsewhere."""
MAY_HAVE_RUN = frozenset({"peer_unavailable", "timeout"})
"""`Outcome.error_type`s of a call that was sent and got no answer: it may have taken effect."""

_FIELDS = ("text", "is_error", "tool", "result", "error_type", "group")
"""`Outcome`'s fields, each of which `success` sets (a test holds the two together)."""
_SETTERS = [Outcome.__dict__[name].__set__ for name in _FIELDS]
_SET_TEXT, _SET_IS_ERROR, _SET_TOOL, _SET_RESULT, _SET_ERROR_TYPE, _SET_GROUP = _SETTERS


def success(
    text: str, tool: PublishedTool | None, result: mt.CallToolResult | None, group: str | None = None
) -> Outcome:
    """`Outcome(text, False, tool, result, None, group)`, made for every answered call at a third
    of the cost: a frozen dataclass's `__init__` goes through `object.__setattr__` once per
    field, while the slots' own setters store the values directly (the instance is the same)."""
    outcome = object.__new__(Outcome)
    _SET_TEXT(outcome, text)
    _SET_IS_ERROR(outcome, False)
    _SET_TOOL(outcome, tool)
    _SET_RESULT(outcome, result)
    _SET_ERROR_TYPE(outcome, None)
    _SET_GROUP(outcome, group)
    return outcome


def error(message: str, tool: PublishedTool | None = None, kind: str = "error") -> Outcome:
    """The answer the model reads for a call that failed here; its words never show a secret."""
    return Outcome(f"Error: {redact(message)}", True, tool, error_type=kind)


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def backend_clock() -> Callable[[], float]:
    """`anyio.current_time` of the running event loop, found once instead of on every call: on
    asyncio the loop's own `time` (what anyio reads there, and the clock the SDK sets its request
    deadlines on), elsewhere `anyio.current_time` itself. `anyio.current_time()` finds the
    backend (sniffio) on each call, several times the cost of reading the clock."""
    with contextlib.suppress(sniffio.AsyncLibraryNotFoundError, RuntimeError):  # no loop running
        if sniffio.current_async_library() == "asyncio":
            return asyncio.get_running_loop().time
    return anyio.current_time


@dataclass(slots=True)
class PeerEntry:
    """How the adapter reaches one peer, and the limits it keeps there."""

    session: ToolSession
    timeout: float | None
    limiter: anyio.CapacityLimiter | None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    tool_timeouts: dict[str, float | None] = field(default_factory=dict)
    native: bool = False
    """An `mcp` session: it times its requests itself and tells the peer when it gives up."""
    clock: Callable[[], float] = anyio.current_time
    """`anyio.current_time` of the event loop the peer was added on (`backend_clock`)."""

    def offered(self, tools: list[mt.Tool]) -> list[mt.Tool]:
        """The tools that pass this peer's include/exclude patterns."""
        if self.include is None and not self.exclude:
            return tools
        return [t for t in tools if matches(t.name, self.include, self.exclude)]

    def offered_names(self, reasons: dict[str, str]) -> dict[str, str]:
        """The entries of `reasons` whose names pass this peer's include/exclude patterns."""
        if self.include is None and not self.exclude:
            return reasons
        return {n: r for n, r in reasons.items() if matches(n, self.include, self.exclude)}


Turn = tuple[anyio.Event | None, anyio.Event]
"""A call's place among a batch's calls to a peer with a slot limit: the event of the call before
it (None for the first), which it waits for before taking a slot, and its own, set once it has one."""


async def run_on_peer(
    peer: PeerEntry,
    tool: PublishedTool,
    name: str,
    arguments: dict[str, Any],
    limit: float | None,
    *,
    max_output_chars: int | None,
    progress: ProgressFnT | None = None,
    turn: Turn | None = None,
) -> Outcome:
    """Call `tool` on `peer` within `limit` seconds; whatever the peer does, say what became of it.

    The limit bounds the whole call as the caller waits for it, the wait for one of the peer's
    `max_concurrency` slots included: a call that gets no slot in time is answered "not sent",
    and one that does is sent with the time left.
    """
    if peer.limiter is None:
        return await _run(peer, tool, name, arguments, limit, limit, max_output_chars, progress)
    return await _run_limited(
        peer, peer.limiter, tool, name, arguments, limit, max_output_chars, progress, turn
    )


async def _run_limited(
    peer: PeerEntry,
    limiter: anyio.CapacityLimiter,
    tool: PublishedTool,
    name: str,
    arguments: dict[str, Any],
    limit: float | None,
    max_output_chars: int | None,
    progress: ProgressFnT | None,
    turn: Turn | None,
) -> Outcome:
    """`_run` once one of the peer's slots is free (after the call before it in `turn` has one),
    with what is left of `limit` by then."""
    clock = peer.clock
    start = clock()
    acquired = False
    with anyio.move_on_after(math.inf if limit is None else limit):
        if turn is not None and turn[0] is not None and not turn[0].is_set():
            await turn[0].wait()
        await limiter.acquire()
        acquired = True
    if turn is not None:
        turn[1].set()
    if not acquired:
        return _not_sent(limiter, tool, name)
    try:
        left = None if limit is None else limit - (clock() - start)
        if left is not None and left <= 0:
            return _not_sent(limiter, tool, name)
        return await _run(peer, tool, name, arguments, limit, left, max_output_chars, progress)
    finally:
        limiter.release()


def _not_sent(limiter: anyio.CapacityLimiter, tool: PublishedTool, name: str) -> Outcome:
    running = limiter.borrowed_tokens
    calls = "call" if running == 1 else "calls"
    return error(
        f"{name} was not sent (peer {tool.peer!r} was busy: {running} {calls} already running); "
        "it is safe to retry",
        tool,
        "peer_busy",
    )


# The session's deadline starts after ours on the same clock; this only absorbs float rounding.
_CLOCK_SLACK = 1e-3


async def _run(
    peer: PeerEntry,
    tool: PublishedTool,
    name: str,
    arguments: dict[str, Any],
    limit: float | None,
    left: float | None,
    max_output_chars: int | None,
    progress: ProgressFnT | None,
) -> Outcome:
    """Send the call with `left` of its `limit` seconds, and render what became of it.

    An `mcp` session bounds the request itself, from the moment it is written, and sends the
    peer a cancellation when it gives up: it gets the time left as its `read_timeout_seconds`,
    and no second cancel scope is entered on the hot path. Other sessions are bounded here.
    """
    deadline: anyio.CancelScope | None = None
    session: Any = peer.session
    started = peer.clock()
    try:
        if peer.native:
            # An `mcp.Client`'s first round goes straight to its session (see `_session._client_call`).
            direct = first_round_session(session)
            if direct is None:
                result: mt.CallToolResult = await call_tool(session, tool.tool, arguments, left, progress)
            else:
                try:
                    first = await direct.call_tool(
                        tool.tool, arguments, left, progress, allow_input_required=True
                    )
                except mcp.MCPError as exc:
                    first = await rejected(session, exc, tool.tool, arguments, left, progress)
                if isinstance(first, mt.CallToolResult):
                    result = first
                else:
                    result = await resume(session, first, tool.tool, arguments, left, progress)
        else:
            options = {} if progress is None else {"progress_callback": progress}
            if left is None:
                result = await session.call_tool(tool.tool, arguments, **options)
            else:
                with anyio.fail_after(left) as deadline:
                    result = await session.call_tool(tool.tool, arguments, **options)
        text, is_error = render(result, max_output_chars)
    except Exception as exc:
        # A peer may answer with the timeout code itself (a deadline of its own, upstream): that is
        # its answer, not ours, unless our time was really up.
        timed_out = (
            isinstance(exc, mcp.MCPError)
            and exc.code == mt.REQUEST_TIMEOUT
            and left is not None
            and peer.clock() - started >= left - _CLOCK_SLACK
        ) or (isinstance(exc, TimeoutError) and deadline is not None and deadline.cancel_called)
        if timed_out:
            message = f"{name} did not answer within {limit:g} s; the call was abandoned"
            return error(message, tool, "timeout")
        if isinstance(exc, PeerUnavailableError):
            # The connection's own account: left, sent and lost, or not sent.
            kind = "not_sent" if exc.sent is False else "peer_unavailable"
            return error(truncate(f"{name}: {exc}", max_output_chars), tool, kind)
        unusable = unusable_answer(exc, tool.peer)
        if unusable is not None:
            # The peer answered, with something no tool result is: said at once, shortly.
            logger.info("call to %s on peer %r: %s", tool.tool, tool.peer, unusable)
            return error(truncate(unusable, max_output_chars), tool, "tool_error")
        # A JSON-RPC error is the peer's answer (no traceback of ours to show); anything else is kept whole.
        answered = isinstance(exc, mcp.MCPError)
        logger.info(
            "call to %s on peer %r failed: %s", tool.tool, tool.peer, _shortened(exc), exc_info=not answered
        )
        message = f"peer {tool.peer!r} failed to run {tool.tool!r}: {describe(exc)}"
        return error(truncate(message, max_output_chars), tool, _error_type(exc))
    if is_error:
        text = f"Error: {name} reported a failure: {text}"
        return Outcome(text, True, tool, result, error_type="tool_error")
    return success(text, tool, result)


def _shortened(exc: Exception) -> str:
    """An exception's text for the log, cut to a few lines' worth."""
    text = str(exc)
    return text if len(text) <= 1_000 else truncate(text, 1_000)


_CLOSED = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, ConnectionError)


def _error_type(exc: Exception) -> str:
    """The `error_type` of an exception the peer's session raised (other than a timeout or a
    left peer): refused arguments, a lost connection, or the peer's own failure."""
    if isinstance(exc, mcp.MCPError) and exc.code == mt.INVALID_PARAMS:
        return "invalid_arguments"
    if isinstance(exc, _CLOSED) or (
        isinstance(exc, mcp.MCPError) and exc.code == mt.CONNECTION_CLOSED and not is_peer_answer(exc)
    ):
        return "peer_unavailable"
    return "peer_error"


def patterns(what: str, patterns: Sequence[str] | None) -> tuple[str, ...] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str) or not all(isinstance(p, str) for p in patterns):
        raise UsageError(f"{what} must be a list of glob patterns, not {patterns!r}")
    return tuple(patterns)


def check_limit(what: str, value: Any, *, minimum: int = 1) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
        raise UsageError(f"{what} must be an integer of at least {minimum}, or None; not {value!r}")


def check_timeout(timeout: Any) -> None:
    if timeout is not None and (
        not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0
    ):
        raise UsageError(f"a timeout must be a positive number of seconds or None, not {timeout!r}")
