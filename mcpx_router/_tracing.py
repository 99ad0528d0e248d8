"""OpenTelemetry spans for tool calls and peer connections, following the GenAI conventions.

One `execute_tool {name}` span (kind INTERNAL) per tool call, current while the call runs, so
the `mcp` SDK's own spans (`MCP send tools/call ...`, and a server's span through the trace
context it puts in `_meta`) are its children; one `connect_peer {peer}` / `reconnect_peer {peer}`
span per connection attempt of a Router peer, current during the handshake and first listing.

What a span records never shows a secret (`_errors.redact`): its status description, the
tool's description, and a failed connection's `exception` event, which is written here (type,
message and stack trace, masked) instead of by the SDK's `record_exception`.

Everything here costs nothing beyond one check per call until a tracer provider is configured
(`opentelemetry.trace.set_tracer_provider`, or `OTEL_PYTHON_TRACER_PROVIDER`), and nothing at all
without `opentelemetry-api` (the `otel` extra; the `mcp` SDK depends on it too).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._errors import redact

try:
    from opentelemetry import context as _context
    from opentelemetry import trace as _trace
except ImportError:  # the `otel` extra is not installed
    _context = _trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from ._dispatch import Outcome
    from .model.calls._calls import ToolCall

__all__ = [
    "ConnectSpan",
    "attached",
    "connect_span",
    "current_context",
    "traced_call",
    "tracing",
]

TRACER_NAME = "mcpx_router"
PEER = "mcpx_router.peer.id"
TOOL = "mcpx_router.tool.original_name"
OUTCOME = "mcpx_router.outcome"
_cached: tuple[object, Tracer] | None = None
_UNKNOWN = object()
# `get_tracer_provider()` looks this variable up in `os.environ` on every call while no provider is
# set, at the cost of two exceptions when it is absent; the same look-up in the mapping behind
# `os.environ` (when there is one) costs a dict probe. Both see the same, live environment.
_ENV_DATA: object = getattr(os.environ, "_data", None)
_ENV_KEY: object = getattr(os.environ, "encodekey", lambda key: key)("OTEL_PYTHON_TRACER_PROVIDER")


def _tracer() -> Tracer | None:
    """The configured provider's tracer, or None while no provider is configured (or no API installed)."""
    global _cached
    if _trace is None:
        return None
    provider = _trace.get_tracer_provider()
    if _cached is not None and _cached[0] is provider:
        return _cached[1]
    if isinstance(provider, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider):
        return None
    tracer = provider.get_tracer(TRACER_NAME)
    _cached = (provider, tracer)
    return tracer


def tracing() -> bool:
    """Whether spans are recorded: a tracer provider is configured.

    Called for every tool call: while no provider is set (`set_tracer_provider`) nor named in
    the environment, the answer comes from two look-ups, without the API's own path.
    """
    if (
        getattr(_trace, "_TRACER_PROVIDER", _UNKNOWN) is None
        and type(_ENV_DATA) is dict
        and _ENV_KEY not in _ENV_DATA
    ):
        return False
    return _tracer() is not None


async def traced_call(call: ToolCall, outcome: Awaitable[Outcome]) -> Outcome:
    """Await a tool call's outcome inside its `execute_tool` span, and record what became of it."""
    tracer = _tracer()
    if tracer is None:  # the provider went away between the check and now
        return await outcome
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.type": "function",
    }
    if call.call_id:
        attributes["gen_ai.tool.call.id"] = call.call_id
    kind = _trace.SpanKind.INTERNAL
    with tracer.start_as_current_span(f"execute_tool {call.name}", kind=kind, attributes=attributes) as span:
        result = await outcome
        if result.tool is not None:
            span.set_attribute(PEER, result.tool.peer)
            span.set_attribute(TOOL, result.tool.tool)
            span.set_attribute("gen_ai.tool.description", redact(result.tool.description))
        if result.is_error:
            kind_of_error = result.error_type or "error"
            span.set_attribute(OUTCOME, kind_of_error)
            span.set_attribute("error.type", kind_of_error)
            span.set_status(_trace.StatusCode.ERROR, redact(result.text)[:500])
        else:
            span.set_attribute(OUTCOME, "ok")
        return result


class ConnectSpan:
    """The span of one connection attempt: current from `__enter__` until `connected()` or the exit."""

    def __init__(
        self, tracer: Tracer | None, peer: str, transport: str, reconnect: bool, attempt: int
    ) -> None:
        self._tracer = tracer
        self._span: Span | None = None
        self._token: object = None
        self._args = peer, transport, reconnect, attempt

    def __enter__(self) -> ConnectSpan:
        if self._tracer is not None:
            peer, transport, reconnect, attempt = self._args
            self._span = self._tracer.start_span(
                f"{'reconnect' if reconnect else 'connect'}_peer {peer}",
                kind=_trace.SpanKind.INTERNAL,
                attributes={
                    PEER: peer,
                    "mcpx_router.peer.transport": transport,
                    "mcpx_router.connect.failed_attempts": attempt,
                    "mcpx_router.connect.reconnect": reconnect,
                },
            )
            self._token = _context.attach(_trace.set_span_in_context(self._span))
        return self

    def connected(self, tools: int) -> None:
        """The handshake and first listing are done: end the span as a success."""
        span = self._end()
        if span is not None:
            span.set_attribute("mcpx_router.peer.tools", tools)
            span.set_attribute(OUTCOME, "ok")
            span.end()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        span = self._end()
        if span is None:
            return
        # Leaving the block without `connected()` and without an exception: the connect deadline
        # (the cancel scope inside caught its own cancellation).
        if exc is not None and not isinstance(exc, Exception):
            span.set_attribute(OUTCOME, "cancelled")  # the peer left while connecting
            span.end()
            return
        error = "timeout" if exc is None else f"{type(exc).__module__}.{type(exc).__qualname__}"
        span.set_attribute(OUTCOME, "error")
        span.set_attribute("error.type", error)
        if exc is not None:
            record_exception(span, exc)
        span.set_status(_trace.StatusCode.ERROR, redact(str(exc)) if exc is not None else "connect timeout")
        span.end()

    def _end(self) -> Span | None:
        span, self._span = self._span, None
        if span is not None:
            _context.detach(self._token)  # type: ignore[arg-type]
        return span


def record_exception(span: Span, exc: BaseException) -> None:
    """The `exception` event of the OpenTelemetry conventions, its message and stack trace masked."""
    module, name = type(exc).__module__, type(exc).__qualname__
    span.add_event(
        "exception",
        {
            "exception.type": f"{module}.{name}" if module and module != "builtins" else name,
            "exception.message": redact(str(exc)),
            "exception.stacktrace": redact("".join(traceback.format_exception(exc))),
            "exception.escaped": "False",
        },
    )


def connect_span(peer: str, spec: object, *, reconnect: bool, attempt: int) -> ConnectSpan:
    """The span of a Router peer's connection attempt; `spec` is its `PeerSpec` (`StdioPeer` → "stdio")."""
    transport = type(spec).__name__.removesuffix("Peer").lower()
    return ConnectSpan(_tracer(), peer, transport, reconnect, attempt)


def current_context() -> object:
    """The caller's OpenTelemetry context, to carry into another thread (None without the API)."""
    return None if _context is None else _context.get_current()


@contextmanager
def attached(context: object) -> Iterator[None]:
    """Run the block in a context taken by `current_context()` elsewhere."""
    if context is None or _context is None:
        yield
        return
    token = _context.attach(context)  # type: ignore[arg-type]
    try:
        yield
    finally:
        _context.detach(token)
