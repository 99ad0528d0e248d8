"""A topic client's send budget: the queue of frames waiting for the pacer, what the gateway's
rate-limit errors teach it, the frames it dropped (sent again), and requests that cannot go out
in time (answered at once, saying why)."""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._envelope import Envelope, encode_envelope
from .._errors import MCPxConnectionError, WebSocketClosed
from .._rpc import classify
from ._pace import Pacer, describe_rate
from ._ratelimit import RateLimited

if TYPE_CHECKING:
    from .._ws import WebSocket

__all__ = ["Outgoing", "SendBudget", "outgoing"]

logger = logging.getLogger("mcpx_router.mcpx")

_REMEMBERED = 512
"""Frames kept after sending, so that one the gateway reports dropped can be sent again."""
_RETRIES = 3
"""Times one frame is sent again after rate-limit errors before it is given up."""


@dataclass(slots=True)
class Outgoing:
    env_id: str
    text: str
    request: bool = False
    queued_at: float = 0.0
    retries: int = 0


WAKE = Outgoing("", "")
"""Put in the outbox to wake the writer for a frame to send again."""


def outgoing(envelope: Envelope) -> Outgoing:
    """An envelope, encoded, on its way to the outbox."""
    request = envelope.kind == "mcp" and classify(envelope.payload) == "request"
    return Outgoing(envelope.id, encode_envelope(envelope), request, anyio.current_time())


class SendBudget:
    """Sends what the outbox holds, paced; learns from rate-limit errors (see `rate_limited`).

    `fail(env_id, message)` answers a request we give up sending; `send_timeout` (None: never)
    is how long a request may wait for its turn.
    """

    def __init__(
        self, rate: float | None, send_timeout: float | None, fail: Callable[[str, str], None]
    ) -> None:
        if send_timeout is not None and not send_timeout > 0:
            raise ValueError(f"send_timeout must be positive seconds or None, not {send_timeout!r}")
        self.pacer = Pacer(rate)
        self.send_timeout = send_timeout
        self.queued = 0
        self.outbox: MemoryObjectSendStream[Outgoing] | None = None
        """The current connection's outbox (None while disconnected)."""
        self._fail = fail
        self._sent: OrderedDict[str, Outgoing] = OrderedDict()
        self._again: deque[Outgoing] = deque()
        self._sent_at: deque[float] = deque()

    # -- the outbox ----------------------------------------------------------------------------

    def open(self, size: int) -> MemoryObjectReceiveStream[Outgoing]:
        """A new connection's outbox (`outbox`); returns the end `run` reads."""
        self.outbox, receive = anyio.create_memory_object_stream[Outgoing](size)
        self.queued = 0
        return receive

    def close(self) -> None:
        """The connection ended: its outbox closes, and frames waiting to be sent again go with it."""
        if self.outbox is not None:
            self.outbox.close()
        self.outbox = None
        self._again.clear()

    async def put(self, envelope: Envelope, topic: str) -> None:
        """Queue an envelope; a request that could not go out within `send_timeout` is answered
        at once instead. Raises `MCPxConnectionError` if the connection is gone."""
        item = outgoing(envelope)
        if item.request and (refusal := self.refusal(self.queued)) is not None:
            self._fail(envelope.id, refusal)
            return
        if self.outbox is None:
            raise MCPxConnectionError(f"topic {topic!r} is not connected")
        try:
            await self.outbox.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise MCPxConnectionError(f"topic {topic!r} lost its connection") from None
        self.queued += 1

    def put_nowait(self, envelope: Envelope) -> bool:
        """Queue an envelope if there is room; whether it was."""
        if self.outbox is None:
            return False
        try:
            self.outbox.send_nowait(outgoing(envelope))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self.queued += 1
        return True

    # -- accounting for the outbox ------------------------------------------------------------

    def refusal(self, frames_ahead: int) -> str | None:
        """Why a request queued now could not go out within `send_timeout`, or None if it can."""
        if self.send_timeout is None:
            return None
        wait = self.pacer.delay(frames_ahead)
        if wait <= self.send_timeout:
            return None
        return self._explain(frames_ahead, wait)

    def _explain(self, frames_ahead: int | None, wait: float) -> str:
        learned = ", lowered after the gateway's rate-limit errors" if self.pacer.learned else ""
        queue = f"{frames_ahead} frame(s) queued ahead, " if frames_ahead is not None else ""
        return (
            f"could not be sent within {self.send_timeout:g} s: the topic's send budget "
            f"({describe_rate(self.pacer.rate)}{learned}) is spent ({queue}about {wait:.0f} s to wait); "
            "try again later, make fewer calls at once, or raise send_rate if the gateway allows more"
        )

    # -- rate-limit errors --------------------------------------------------------------------

    def rate_limited(self, info: RateLimited) -> bool:
        """The gateway refused a frame for its rate: slow down, and queue the frame to be sent
        again when it names one we sent. Returns whether one was queued again."""
        now = anyio.current_time()
        while self._sent_at and self._sent_at[0] < now - 1.0:
            self._sent_at.popleft()
        self.pacer.slow_down(info.retry_after, info.limit, len(self._sent_at))
        logger.info(
            "gateway rate limit: sending at most %s now (retry after %s s)",
            describe_rate(self.pacer.rate),
            info.retry_after,
        )
        item = self._sent.pop(info.ref, None) if info.ref else None
        if item is None:
            return False
        if item.retries >= _RETRIES:
            if item.request:
                self._fail(item.env_id, f"the gateway refused it {item.retries + 1} times for its rate limit")
            return False
        item.retries += 1
        self._again.append(item)
        if self.outbox is not None:
            try:
                self.outbox.send_nowait(WAKE)
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the writer has frames to send anyway, or the connection is gone
        return True

    # -- the writer ---------------------------------------------------------------------------

    async def run(
        self, ws: WebSocket, outbox: MemoryObjectReceiveStream[Outgoing], scope: anyio.CancelScope
    ) -> None:
        """Write the outbox's frames to `ws`, paced; frames to send again go first."""
        try:
            async with outbox:
                async for item in outbox:
                    if item is not WAKE:
                        self.queued -= 1
                        self._again.append(item)
                    while self._again:
                        await self._send(ws, self._again.popleft())
        except WebSocketClosed:
            scope.cancel()

    async def _send(self, ws: WebSocket, item: Outgoing) -> None:
        await self.pacer.wait()
        if item.request and self.send_timeout is not None and item.retries == 0:
            waited = anyio.current_time() - item.queued_at
            if waited > self.send_timeout:
                self._fail(item.env_id, self._explain(None, waited))
                return
        await ws.send_text(item.text)
        now = anyio.current_time()
        self._sent_at.append(now)
        if item.env_id:
            self._sent[item.env_id] = item
            while len(self._sent) > _REMEMBERED:
                self._sent.popitem(last=False)
