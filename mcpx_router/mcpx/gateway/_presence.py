"""Presence on the gateway: joins and leaves told one by one, or coalesced, or not at all.

A participant says how it wants to hear presence when it connects, with `presence=` on the
WebSocket URL (`GET /v0/ws?topic=room&presence=batched`); gateways that do not know the
parameter ignore it, and their clients read what the draft sends (see docs/mcpx.md, "Wire format"):

- `each` (nothing given, or a value we do not know: what clients of the draft expect): a `join`
  or `leave` envelope per participant, at once; the welcome lists everyone present.
- `batched`: at most one presence frame per topic every `presence_interval` seconds,
  `{"event": "batch", "version": n, "joined": [...], "left": [...]}`: the net change since
  batch n - 1, encoded once and the same text queued to every such participant. Its welcome
  lists the roster now, as one text shared by every welcome until the roster changes, each
  entry encoded once. Entries name the participant's `connection`, so that a `joined` entry
  the welcome already had is known for what it is, and leave out what every entry would say
  (`compact_entry`): about 50 bytes each instead of 80.
- `none`: no presence frames at all, and a welcome that lists no one (`participants: []`):
  joining costs O(1) bytes; `GET /v0/topics/{topic}/participants` lists the topic when wanted.

`RosterBook` is the bookkeeping of one topic (no I/O); `PresenceClock` runs the batches of every
topic of a gateway, one task for all of them, while `running()` lasts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import anyio

from .._welcome import shared_welcome_frame
from ._gateway_state import History, system_frame

__all__ = ["BATCHED", "EACH", "NONE", "PresenceClock", "RosterBook", "presence_mode"]

EACH: Final = "each"
BATCHED: Final = "batched"
NONE: Final = "none"


def presence_mode(value: str | None) -> str:
    """The mode a participant asked for; anything unknown is `each`, what the draft sends."""
    return value if value in (BATCHED, NONE) else EACH


class RosterBook:
    """One topic's roster now, as its last batch told it, and the shared text of the roster now.

    Entries carry the participant's `connection` (an id per connection): a reconnect changes it,
    so a batch names a participant that reconnected in `joined` again, and a client that already
    has an entry with that connection (it was in its welcome) knows the entry is no news.

    Args:
        present: Who is present when the book is opened (on other gateways, in the NATS mode).
    """

    def __init__(self, present: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.version = 0
        """The number of the last batch; the welcome's `roster_version`."""
        self._live: dict[str, Mapping[str, Any]] = dict(present or {})
        self._told: dict[str, Mapping[str, Any]] = dict(self._live)
        self._texts = {pid: _encode(entry) for pid, entry in self._live.items()}
        """Each entry of the roster now, encoded once, in the roster's order."""
        self._touched: set[str] = set()
        self._shown: dict[str, Mapping[str, Any]] = {}
        """Entries a welcome listed that no batch has told yet: their leave must be told."""
        self._welcomes = 0
        """Welcomes given so far; with `_set_at`, whether one showed an entry (O(1) a welcome)."""
        self._set_at: dict[str, int] = {}
        """For each entry not yet told: `_welcomes` when it was set."""
        self._snapshot: str | None = None
        """The roster now as a JSON array, kept as entries are appended: a join in a storm costs
        a copy of it, not a new join of every entry."""

    @property
    def pending(self) -> bool:
        return bool(self._touched)

    def untold(self, participant_id: str) -> bool:
        """Whether a change of `participant_id` waits for the next batch."""
        return participant_id in self._touched

    def touch(self, participant_id: str, entry: Mapping[str, Any] | None) -> None:
        """`participant_id` joined (its `entry`) or left (None)."""
        old = self._live.pop(participant_id, None)
        if old is not None:
            self._texts.pop(participant_id, None)
            self._snapshot = None  # taken out of the middle: built again when next asked for
            set_at = self._set_at.pop(participant_id, None)
            if set_at is not None and self._welcomes > set_at:
                self._shown[participant_id] = old  # a welcome listed it, no batch told it
        if entry is not None:
            text = _encode(entry)
            self._live[participant_id] = entry
            self._texts[participant_id] = text
            self._set_at[participant_id] = self._welcomes
            if self._snapshot is not None:
                self._snapshot = f"{self._snapshot[:-1]}{',' if len(self._texts) > 1 else ''}{text}]"
        self._touched.add(participant_id)

    def batch(self) -> str | None:
        """The presence frame of the changes since the last batch, or None when nothing changed."""
        joined: list[Mapping[str, Any]] = []
        left: list[Mapping[str, Any]] = []
        for pid in self._touched:
            now, before = self._live.get(pid), self._told.get(pid)
            if now is not None and now != before:
                joined.append(now)
                self._told[pid] = now
            elif now is None and (before is not None or pid in self._shown):
                left.append(before or self._shown[pid])
                self._told.pop(pid, None)
        self._touched.clear()
        self._shown.clear()
        self._set_at.clear()  # told now: a leave of theirs is told as such
        if not joined and not left:
            return None
        self.version += 1
        payload = {"event": "batch", "version": self.version, "joined": joined, "left": left}
        return system_frame("presence", payload)

    def welcome(self, participant_id: str, topic: str, history: History, mode: str) -> str:
        """The welcome of a `batched` participant: the roster now, its text shared by every
        welcome until the next change, each entry encoded once. A `none` participant's lists no
        one: it reads no presence, and joining costs it O(1) bytes however large the topic."""
        if mode == NONE:
            return shared_welcome_frame(
                participant_id, topic, "[]", history.text(), presence=mode, version=self.version
            )
        self._welcomes += 1  # shows every entry set before it (`touch` reads this)
        if self._snapshot is None:
            self._snapshot = f"[{','.join(self._texts.values())}]"
        return shared_welcome_frame(
            participant_id, topic, self._snapshot, history.text(), presence=mode, version=self.version
        )


def _encode(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


class Batching(Protocol):
    """A topic with presence to batch (the gateway's room)."""

    def flush(self) -> None: ...


class PresenceClock:
    """Sends every topic's batches: the first change after a quiet spell at once, the ones after
    it at most once every `interval` seconds. Without `running()`, each change goes out at once."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._due: dict[int, Batching] = {}
        self._wake: anyio.Event | None = None

    def mark(self, room: Batching) -> None:
        """`room` has changes to send."""
        if self._wake is None:
            room.flush()
            return
        self._due[id(room)] = room
        self._wake.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._wake = anyio.Event()
            tg.start_soon(self._run)
            try:
                yield
            finally:
                self._wake = None
                tg.cancel_scope.cancel()
        for room in self._take():  # what is still due goes out now
            room.flush()

    def _take(self) -> list[Batching]:
        rooms = list(self._due.values())
        self._due.clear()
        return rooms

    async def _run(self) -> None:
        while self._wake is not None:
            await self._wake.wait()
            self._wake = anyio.Event()
            for room in self._take():
                room.flush()
            await anyio.sleep(self.interval)
