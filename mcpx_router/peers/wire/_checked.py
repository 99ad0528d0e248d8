"""Every answer an HTTP or SSE peer sends checked before the `mcp` SDK's session sees it.

The SDK's transports parse what the peer sends into `SessionMessage`s; the pair of streams they
yield is wrapped here, so that the peer's `Exchange` sees each request on its way out and each
message on its way back, as the stdio transport's own reader does (`_stdio.py`): a listing is
read entry by entry, a tool result's content is capped, an answer the transport could not parse
is answered at once in a few words, and a request the transport gave up on is marked as lost by
the transport, not by the peer. Something the transport hands on that is not a message (an event
that is not JSON-RPC) answers the waiting request it names, if it names one; else it is counted
as a stray line.

A JSON body the SDK's parser would refuse or take long over (nested deeper than it reads, more
than a mebibyte) is read first, by `read_body`, as a stdio line is: its checked answer is kept
by the `Exchange`, and the SDK parses a small stand-in with the same id in its place (so is one
holding a lone surrogate escape, which the SDK's parser refuses and Python's `json` reads). The events
of an SSE response are looked at one by one as they arrive (`read_events`), each such event's
data read the same way.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Final, Self

import anyio
import httpx2
import mcp_types as mt
from mcp.shared.message import SessionMessage

from ._answers import Exchange
from ._lines import MAX_DEPTH, SMALL
from ._stdio import message_of

__all__ = ["checked", "read_body", "read_events"]

class _AnsweredElsewhere(logging.Filter):
    """Drops the SDK's HTTP transport's ERROR record (with a traceback) of an answer it could not
    parse: the request is answered with why, which the Router tells and logs itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in _ANSWERED_ELSEWHERE


_ANSWERED_ELSEWHERE: Final = (
    "Error parsing JSON response",
    "Error parsing SSE message",
    "Error parsing server message",
)
logging.getLogger("mcp.client.streamable_http").addFilter(_AnsweredElsewhere())
logging.getLogger("mcp.client.sse").addFilter(_AnsweredElsewhere())

_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
_DROPPED = frozenset({"content-length", "content-encoding", "transfer-encoding"})
"""Headers of a body that no longer hold once it is read here (decoded, perhaps replaced)."""


async def read_body(
    request: httpx2.Request, response: httpx2.Response, exchange: Exchange
) -> httpx2.Response:
    """`response`, a JSON answer to a POST, read; its body replaced by a stand-in when it is one
    the SDK should not parse itself (see the module's docstring)."""
    body = await response.aread()
    if _ours(body):
        body = await _stand_in(body, exchange) or body
    headers = [(key, value) for key, value in response.headers.multi_items() if key.lower() not in _DROPPED]
    return httpx2.Response(
        response.status_code, headers=headers, content=body, request=request, extensions=response.extensions
    )


@asynccontextmanager
async def checked(transport: AbstractAsyncContextManager[Any], exchange: Exchange) -> AsyncIterator[Any]:
    """`transport`'s (read, write) streams, with what passes through them checked by `exchange`."""
    async with transport as (read, write):
        yield _CheckedRead(read, exchange), _CheckedWrite(write, exchange)


class _Stream:
    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def read_events(request: httpx2.Request, response: httpx2.Response, exchange: Exchange) -> httpx2.Response:
    """`response`, an SSE stream, with each event whose data the SDK should not parse itself
    replaced by a stand-in as it arrives (see the module's docstring)."""
    if "content-encoding" in response.headers:
        return response
    stream = _Events(response.stream, exchange)
    return httpx2.Response(
        response.status_code,
        headers=response.headers,
        stream=stream,
        request=request,
        extensions=response.extensions,
    )


class _Events(httpx2.AsyncByteStream):
    """The bytes of an SSE stream, a whole event at a time (an iterator of its own, not an async
    generator: the SDK leaves the stream unfinished once it has its answer)."""

    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._chunks: AsyncIterator[bytes] | None = None
        self._exchange = exchange
        self._pending = bytearray()  # grows in place: a long event costs its size, not its square
        self._searched = 0

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        if self._chunks is None:
            self._chunks = self._inner.__aiter__()
        while True:
            end = _event_end(self._pending, self._searched)
            if end >= 0:
                event = bytes(self._pending[:end])
                del self._pending[:end]
                self._searched = 0
                return await self._event(event)
            self._searched = max(0, len(self._pending) - 3)
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                rest = bytes(self._pending)
                self._pending.clear()
                if rest:
                    return rest
                raise
            self._pending += chunk

    async def _event(self, event: bytes) -> bytes:
        if not _ours(event):
            return event
        lines = event.splitlines()
        data = b"\n".join(line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:"))
        stand_in = await _stand_in(data, self._exchange)
        if stand_in is None:
            return event
        kept = b"".join(line + b"\n" for line in lines if line and not line.startswith(b"data:"))
        return kept + b"data: " + stand_in + b"\n\n"

    async def aclose(self) -> None:
        await self._inner.aclose()


def _ours(data: bytes) -> bool:
    """Whether `data` is to be read here: more than a mebibyte, perhaps nested deeper than the SDK
    reads, or holding a lone surrogate escape perhaps (which the SDK's parser refuses)."""
    return (
        len(data) > SMALL
        or data.count(b"{") + data.count(b"[") >= MAX_DEPTH
        or _SURROGATE.search(data) is not None
    )


def _event_end(data: bytes | bytearray, start: int) -> int:
    """Where the first whole event of `data` ends (after its blank line), or -1."""
    ends = [found + len(mark) for mark in (b"\n\n", b"\r\n\r\n") if (found := data.find(mark, start)) >= 0]
    return min(ends) if ends else -1


async def _stand_in(data: bytes, exchange: Exchange) -> bytes | None:
    """What the SDK is to parse in place of a message it should not parse itself, the message read
    and checked here and kept by `exchange`; None when `data` answers nothing (left as it is)."""
    exchange.answered = True  # no handshake to fail: an unreadable answer is an answer
    item = await message_of(data, exchange)
    if not isinstance(item, SessionMessage):
        return None
    message = item.message
    if isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError) and message.id is not None:
        exchange.read_ahead(message.id, item)
        return json.dumps({"jsonrpc": "2.0", "id": message.id, "result": {}}).encode()
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


class _CheckedWrite(_Stream):
    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    async def send(self, item: SessionMessage) -> None:
        self._exchange.outgoing(item)
        await self._inner.send(item)


class _CheckedRead(_Stream):
    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if isinstance(item, SessionMessage):
                return self._exchange.received(item)
            # What the transport could not parse, read as a stdio line is (Python's json's words).
            self._exchange.answered = True
            answer = await message_of(_raw(item).encode("utf-8", "surrogatepass"), self._exchange)
            if isinstance(answer, SessionMessage):
                return answer

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def _raw(error: Exception) -> str:
    """The text a transport could not parse, when its (pydantic) error keeps it: the text itself
    when it was not JSON, the message as JSON when it was not JSON-RPC; else the error's text."""
    errors_of = getattr(error, "errors", None)
    if callable(errors_of):
        try:
            inputs = [found.get("input") for found in errors_of()]
        except Exception:  # not pydantic's: its message will do
            inputs = []
        texts = [found for found in inputs if isinstance(found, str)]
        if texts:
            return max(texts, key=len)
        for found in inputs:
            if isinstance(found, dict) and "jsonrpc" in found:
                try:
                    return json.dumps(found, ensure_ascii=False, default=repr)
                except (ValueError, RecursionError):
                    break
    return str(error)
