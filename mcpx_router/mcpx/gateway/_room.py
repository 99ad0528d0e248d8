"""One topic on the gateway: its connections, its broadcasts, and the presence it tells.

A frame meant for one connection goes through `enqueue(text)`; a frame meant for many is
encoded once (`text_frame`) and the same bytes are queued to each of them (`enqueue_encoded`).
Presence goes out in the form each participant asked for when it connected (`_presence.py`):
a frame per join and leave, batches, or nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._welcome import compact_entry, welcome_frame
from ._gateway_state import History, Member, system_frame
from ._presence import BATCHED, EACH, PresenceClock, RosterBook
from ._wspeer import text_frame

if TYPE_CHECKING:
    from .cluster._cluster import Cluster

__all__ = ["CLOSE_REPLACED", "Connection", "Room"]

logger = logging.getLogger("mcpx_router.mcpx.gateway")

CLOSE_REPLACED = 4000


class Connection(Protocol):
    """What a room needs of a participant's connection (the gateway's `_Connection`)."""

    member: Member
    conn_id: str

    @property
    def participant_id(self) -> str: ...
    @property
    def closing(self) -> bool: ...
    def enqueue(self, text: str) -> None: ...
    def enqueue_encoded(self, frame: bytes) -> None: ...
    def shut(self, code: int, reason: str) -> None: ...


class Room:
    """The connections of one topic, by participant id, and by how they hear presence."""

    def __init__(self, topic: str, history: History, cluster: Cluster | None, clock: PresenceClock) -> None:
        self.topic = topic
        self.members: dict[str, Connection] = {}
        self.history = history
        self.cluster = cluster
        self._clock = clock
        self._hearing: dict[str, dict[str, Connection]] = {EACH: {}, BATCHED: {}}
        remote = {} if cluster is None else cluster.roster.remote(topic)
        self.book = RosterBook({pid: compact_entry(p.info, p.conn) for pid, p in remote.items()})

    # -- membership ---------------------------------------------------------------------------

    def add(self, conn: Connection) -> Connection | None:
        """`conn` is the participant's connection now; the one it replaces, if any."""
        pid = conn.participant_id
        old = self.members.get(pid)
        if old is not None:
            self._forget(pid, old)
        self.members[pid] = conn
        hearing = self._hearing.get(conn.member.presence)
        if hearing is not None:
            hearing[pid] = conn
        return old

    def remove(self, pid: str, conn: Connection | None = None) -> Connection | None:
        """Take `pid`'s connection (only if it is `conn`, when given) out of the room; it, or None."""
        known = self.members.get(pid)
        if known is None or (conn is not None and known is not conn):
            return None
        del self.members[pid]
        self._forget(pid, known)
        return known

    def _forget(self, pid: str, conn: Connection) -> None:
        hearing = self._hearing.get(conn.member.presence)
        if hearing is not None and hearing.get(pid) is conn:
            del hearing[pid]

    # -- frames -------------------------------------------------------------------------------

    def broadcast(self, text: str, *, exclude: str | None = None) -> None:
        frame = text_frame(text)  # encoded once, the same bytes for everyone
        for pid, conn in list(self.members.items()):
            if pid != exclude:
                conn.enqueue_encoded(frame)

    def admit(self, conn: Connection, remote: Mapping[str, Any], history: History) -> None:
        """Register `conn`, welcome it, close an older connection under its id, announce it.

        The welcome's list of everyone present is built here and is garbage once queued: a
        connection never keeps it (O(participants) each: O(participants²) for a topic)."""
        pid = conn.participant_id
        old = self.add(conn)
        mode = conn.member.presence
        if mode == EACH:
            others = [c.member.info() for p, c in self.members.items() if p != pid]
            others += [dict(i) for p, i in remote.items() if p != pid]  # on the other gateways
            conn.enqueue(welcome_frame(pid, self.topic, others, history.items()))
        else:
            conn.enqueue(self.book.welcome(pid, self.topic, history, mode))
        if old is not None:
            logger.info("%r reconnected to %r; closing its previous connection", pid, self.topic)
            old.shut(CLOSE_REPLACED, "replaced by a new connection")
        self.announce(conn, "join", exclude=pid)

    def announce(self, conn: Connection, event: str, *, exclude: str | None = None) -> None:
        """A presence frame (`join` or `leave` of `conn`) to everyone, and to the other gateways."""
        text = system_frame("presence", {"event": event, "participant": conn.member.info()})
        if self.cluster is None:
            self.history.add(json.loads(text), text)
        elif event == "join":
            self.cluster.joined(self.topic, conn.participant_id, conn.conn_id, text)
        else:
            self.cluster.left(self.topic, conn.participant_id, conn.conn_id, text)
        self.tell(conn.participant_id, event, text, exclude=exclude)

    def tell(self, pid: str, event: str, text: str, *, exclude: str | None = None) -> None:
        """A `join` or `leave` of `pid` (`text`, its frame of the draft's form): at once to those
        who hear each one, in the next batch to those who hear batches."""
        hearing = [conn for other, conn in self._hearing[EACH].items() if other != exclude]
        if hearing:
            frame = text_frame(text)
            for conn in hearing:
                conn.enqueue_encoded(frame)
        self.book.touch(pid, self._entry(pid))
        self._clock.mark(self)

    def settle(self, sender: str) -> None:
        """Before a frame of `sender` is handed out: its join (or reconnect) goes first.

        A batched participant must never get a frame from a connection that presence has not
        told it of yet (a client that reads the later batch as a reconnect would drop what that
        frame began), so a sender whose change waits for the next batch sends that batch now.
        Only a participant's first frames within `presence_interval` of its join pay for it."""
        if self.book.untold(sender) and self._hearing[BATCHED]:
            self.flush()

    def flush(self) -> None:
        """Send the batch of what changed since the last one (if anything did)."""
        if not self.book.pending:
            return
        text = self.book.batch()
        if text is not None:
            frame = text_frame(text)
            for conn in list(self._hearing[BATCHED].values()):
                conn.enqueue_encoded(frame)

    def _entry(self, pid: str) -> Mapping[str, Any] | None:
        """`pid`'s entry in batches and shared welcomes (`compact_entry`), or None: absent."""
        conn = self.members.get(pid)
        if conn is not None:
            return compact_entry(conn.member.info(), conn.conn_id)
        if self.cluster is not None:
            placement = self.cluster.roster.remote(self.topic).get(pid)
            if placement is not None:
                return compact_entry(placement.info, placement.conn)
        return None
