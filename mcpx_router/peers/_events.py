"""What a Router reports: membership, tool-list, health and progress events, and their fan-out.

Every event names its peer and carries the catalogue version after it: a host that sent the
model its tools at another version should send them again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self, TypeAlias

import anyio

from .._dispatch import CallProgress
from ..groups._caller import GroupFailover
from ..groups._grouping import CallFinished
from ..groups._groups import GroupChanged

__all__ = [
    "CallFinished",
    "CallProgress",
    "ContentChanged",
    "EventHub",
    "EventStream",
    "GroupChanged",
    "GroupFailover",
    "HealthChanged",
    "PeerJoined",
    "PeerLeft",
    "RouterEvent",
    "ToolsChanged",
]

logger = logging.getLogger("mcpx_router")


@dataclass(frozen=True, slots=True)
class PeerJoined:
    """A peer connected and its tools were published under `tools` (public names)."""

    peer: str
    version: int
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PeerLeft:
    """A peer left: its connection is closed and its tools and names are withdrawn."""

    peer: str
    version: int
    reason: str


@dataclass(frozen=True, slots=True)
class ToolsChanged:
    """A peer's tool list changed; each field holds public names."""

    peer: str
    version: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    """Tools whose description or schema changed; their names did not."""


@dataclass(frozen=True, slots=True)
class HealthChanged:
    """A peer was lost (tools withdrawn, names kept), failed a reconnect attempt, or came back.

    When `healthy` is true its tools are published again under the same names.
    """

    peer: str
    version: int
    healthy: bool
    error: str | None = None
    attempt: int = 0
    """How many reconnect attempts have failed since the peer was lost."""
    retry_in: float | None = None
    """Seconds until the next attempt (None: none is planned)."""


@dataclass(frozen=True, slots=True)
class ContentChanged:
    """A peer's resources, resource templates or prompts changed (`kind`); each field holds public names.

    Not emitted when a peer joins, leaves, is lost or comes back: the other events say so.
    """

    peer: str
    version: int
    kind: Literal["resources", "resource_templates", "prompts"]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()


RouterEvent: TypeAlias = (
    PeerJoined
    | PeerLeft
    | ToolsChanged
    | HealthChanged
    | CallProgress
    | ContentChanged
    | GroupChanged
    | GroupFailover
    | CallFinished
)
"""Any event a Router reports to its `on_event` callback and its event streams."""

DEFAULT_EVENT_BUFFER = 1024


class EventStream:
    """An async iterator over the events emitted while it is open (`with router.events() as s`).

    Emitting never waits for a slow reader: past `max_buffer` unread events the oldest are
    dropped and counted in `dropped` (the catalogue version still tells what is current).
    """

    def __init__(self, hub: EventHub, max_buffer: int = DEFAULT_EVENT_BUFFER) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, not {max_buffer!r}")
        self._hub = hub
        self._queue: deque[RouterEvent] = deque(maxlen=max_buffer)
        self._wake = anyio.Event()
        self._closed = False
        self.dropped = 0

    def __enter__(self) -> Self:
        self._hub._streams.add(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._hub._streams.discard(self)
        self.close()

    def push(self, event: RouterEvent) -> None:
        if self._closed:
            return
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(event)
        self._wake.set()

    def close(self) -> None:
        """End the iteration once the buffered events are read."""
        self._closed = True
        self._wake.set()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> RouterEvent:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            await self._wake.wait()
            self._wake = anyio.Event()
        return self._queue.popleft()


class EventHub:
    """Hands each event to the callback (synchronously) and to every open EventStream."""

    def __init__(self, callback: Callable[[RouterEvent], object] | None = None) -> None:
        self._callback = callback
        self._streams: set[EventStream] = set()

    def stream(self, max_buffer: int = DEFAULT_EVENT_BUFFER) -> EventStream:
        return EventStream(self, max_buffer)

    def emit(self, event: RouterEvent) -> None:
        if self._callback is not None:
            try:
                self._callback(event)
            except Exception:
                logger.exception("the event callback raised on %r", event)
        for stream in list(self._streams):
            stream.push(event)

    def close(self) -> None:
        for stream in list(self._streams):
            stream.close()
        self._streams.clear()
