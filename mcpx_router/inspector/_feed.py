"""The inspector's live events: the Router's events, kept while a page listens, sent over SSE.

The Router pays nothing while no page is open: the feed subscribes (`router.events()`, or a
hook chained onto a bare adapter's `on_event`) only while an event stream is connected. While
one is, each event is turned into JSON once and kept in a ring of the most recent ones; a page
that reads slower than events come is told how many it missed (`Dropped`) rather than holding
anything back or growing a queue.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from starlette.requests import Request

from ..peers._events import RouterEvent
from ._guard import Receive, Scope, Send
from ._snapshot import Target

__all__ = ["Feed", "SSEEndpoint", "as_json"]

KEEPALIVE = 15.0
"""Seconds between comments on an idle event stream, so that a dead connection is noticed."""
GATHER = 0.05
"""Seconds a page's stream waits after an event for more to send with it: at most about twenty
writes a second per page, however many calls the Router makes (a write costs the Router's loop
far more than keeping an event does)."""


def as_json(value: Any) -> Any:
    """An event's field as JSON: dataclasses as objects, tuples as lists, anything else as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): as_json(item) for key, item in value.items()}
    return str(value)


class Feed:
    """The ring of recent events (as JSON), numbered; shared by every page of one inspector."""

    def __init__(self, target: Target, size: int = 2000) -> None:
        if size < 1:
            raise ValueError(f"the event ring must hold at least one event, not {size!r}")
        self._target = target
        self._ring: deque[dict[str, Any]] = deque(maxlen=size)
        self._seq = 0
        self._seen: OrderedDict[int, tuple[object, int]] = OrderedDict()
        self._wake: anyio.Event | None = None
        self._hooked = 0
        self._previous: Callable[[Any], object] | None = None
        self._hook: Callable[[Any], None] | None = None

    @property
    def seq(self) -> int:
        """The number of the newest event (0 before the first)."""
        return self._seq

    def record(self, event: RouterEvent) -> None:
        """Keep one event of the Router's; several pages' streams hand the same event in once each."""
        key = id(event)
        if key in self._seen and self._seen[key][0] is event:
            return
        self._seen[key] = (event, self._seq + 1)
        while len(self._seen) > 4096:
            self._seen.popitem(last=False)
        fields = as_json(event)
        if "seconds" in fields:
            fields["ms"] = round(fields["seconds"] * 1000, 3)
        self.add(type(event).__name__, fields)

    def add(self, kind: str, fields: dict[str, Any]) -> None:
        """Keep one entry of `kind` (an event's class name, or the inspector's own)."""
        self._seq += 1
        self._ring.append({"seq": self._seq, "at": time.time(), "type": kind, **fields})
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def after(self, cursor: int) -> tuple[int, list[dict[str, Any]]]:
        """(how many events after `cursor` the ring no longer holds, the entries it holds after it)."""
        if not self._ring or self._seq <= cursor:
            return 0, []
        first = self._ring[0]["seq"]
        missed = max(0, first - cursor - 1)
        start = max(0, cursor + 1 - first)
        return missed, [self._ring[i] for i in range(start, len(self._ring))]

    async def wait(self, cursor: int) -> None:
        """Return once an event newer than `cursor` is kept."""
        while self._seq <= cursor:
            if self._wake is None:
                self._wake = anyio.Event()
            await self._wake.wait()

    @asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        """Keep the Router's events while this is open (one per connected page)."""
        router = self._target.router
        if router is not None:
            with router.events(max_buffer=1024) as stream:
                async with anyio.create_task_group() as tg:

                    async def pump() -> None:
                        dropped = 0
                        async for event in stream:
                            if stream.dropped != dropped:
                                self.add("Dropped", {"count": stream.dropped - dropped})
                                dropped = stream.dropped
                            self.record(event)

                    tg.start_soon(pump)
                    try:
                        yield
                    finally:
                        tg.cancel_scope.cancel()
        else:
            with self._adapter_hook():
                yield

    @contextmanager
    def _adapter_hook(self) -> Iterator[None]:
        """A bare adapter's events (groups, calls with statistics), chained onto its `on_event`."""
        adapter = self._target.adapter
        if self._hooked == 0:
            previous = adapter.on_event

            def both(event: Any) -> None:
                if previous is not None:
                    previous(event)
                self.record(event)

            self._previous, self._hook = previous, both
            adapter.on_event = both
        self._hooked += 1
        try:
            yield
        finally:
            self._hooked -= 1
            if self._hooked == 0 and adapter.on_event is self._hook:
                adapter.on_event = self._previous


class SSEEndpoint:
    """`GET /api/events`: the ring's events after `?since=` (or `Last-Event-ID`), then live ones."""

    def __init__(self, feed: Feed) -> None:
        self._feed = feed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        given = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
        try:
            cursor = max(0, int(given))
        except ValueError:
            body = b"since must be an event number\n"
            await send(
                {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )

        async def chunk(text: str) -> None:
            await send({"type": "http.response.body", "body": text.encode(), "more_body": True})

        async def deliver() -> None:
            nonlocal cursor
            feed = self._feed
            await chunk(f"retry: 2000\nevent: hello\ndata: {json.dumps({'seq': feed.seq})}\n\n")
            while True:
                missed, entries = feed.after(cursor)
                if missed:
                    await chunk(
                        f"data: {json.dumps({'type': 'Dropped', 'count': missed, 'seq': cursor})}\n\n"
                    )
                if entries:  # what came while the last write was going out, in one write
                    await chunk(
                        "".join(
                            f"id: {entry['seq']}\ndata: {json.dumps(entry, ensure_ascii=False)}\n\n"
                            for entry in entries
                        )
                    )
                    cursor = entries[-1]["seq"]
                with anyio.move_on_after(KEEPALIVE) as idle:
                    await feed.wait(cursor)
                if idle.cancelled_caught:
                    await chunk(": keepalive\n\n")
                else:  # gather what follows for a moment: one write for a burst, not one per event
                    await anyio.sleep(GATHER)

        async with self._feed.listening(), anyio.create_task_group() as tg:
            tg.start_soon(deliver)
            while (await receive())["type"] != "http.disconnect":
                pass  # a page sends nothing on its stream: wait for it to go
            tg.cancel_scope.cancel()
