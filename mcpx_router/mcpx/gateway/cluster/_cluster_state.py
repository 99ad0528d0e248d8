"""Who is present on the other gateways of a NATS cluster: pure bookkeeping, no I/O.

Every gateway keeps a `SharedRoster` of the participants connected to the *other* gateways,
per topic, fed by three sources that arrive in no guaranteed order:

- presence frames (`join`, `leave`) the gateway holding the connection publishes to the topic;
- each gateway's heartbeat, listing every participant it holds (so a lost frame heals within
  one heartbeat);
- silence: a gateway not heard for `expiry` seconds is dead, and its participants leave.

A participant has one connection at a time: the one with the later connection id wins
(`new_conn_id` orders by creation time), wherever it is. A connection that left is remembered
for a while, so that a heartbeat sent before the `leave` but read after it does not bring it back.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "Change",
    "HeartbeatParts",
    "Placement",
    "SharedRoster",
    "decode_token",
    "encode_token",
    "heartbeat_messages",
    "heartbeat_stamp",
    "new_conn_id",
]


def encode_token(text: str) -> str:
    """`text` as one NATS subject token: unpadded base64url of its UTF-8 (no `.`, `*`, `>`)."""
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii").rstrip("=")


def decode_token(token: str) -> str:
    """The inverse of `encode_token`."""
    padded = token + "=" * (-len(token) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8", "surrogatepass")


def new_conn_id() -> str:
    """A connection id that sorts by creation time (wall clock, nanoseconds), then at random."""
    return f"{heartbeat_stamp()}-{secrets.token_hex(4)}"


def heartbeat_stamp() -> str:
    """Now, comparable with the connection ids made on the same clock (see `new_conn_id`)."""
    return f"{time.time_ns():020d}"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a participant's connection is: its gateway, its connection id, its roster entry."""

    gateway: str
    conn: str
    info: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Change:
    """A change of the shared roster that the local participants of `topic` must be told."""

    event: Literal["join", "leave"]
    topic: str
    participant_id: str
    info: Mapping[str, Any]
    replaces_local: bool = False
    """A join of a newer connection of a participant this gateway holds: close ours (4000)."""


Member = tuple[str, str, str, Mapping[str, Any]]
"""(topic, participant id, connection id, roster entry) as a heartbeat lists them."""


class SharedRoster:
    """The participants connected to other gateways, per topic (see the module docstring).

    Args:
        me: This gateway's id (its own heartbeats and frames are not remote).
        expiry: Seconds of silence after which a gateway counts as dead.
        local_conn: The connection id this gateway holds for (topic, participant), if any.
    """

    def __init__(self, me: str, expiry: float, local_conn: Any) -> None:
        self._me = me
        self._expiry = expiry
        self._local_conn = local_conn
        self._topics: dict[str, dict[str, Placement]] = {}
        self._seen: dict[str, float] = {}
        self._gone: dict[tuple[str, str, str], float] = {}  # (topic, pid, conn) -> when it left

    # -- reading ------------------------------------------------------------------------------

    def remote(self, topic: str) -> Mapping[str, Placement]:
        return self._topics.get(topic, {})

    def topics(self) -> set[str]:
        return {t for t, entries in self._topics.items() if entries}

    def gateways(self) -> set[str]:
        return set(self._seen)

    # -- sources ------------------------------------------------------------------------------

    def joined(self, topic: str, pid: str, placement: Placement, now: float) -> Change | None:
        """A `join` of a connection on another gateway; the change to announce, if any."""
        if placement.gateway == self._me or (topic, pid, placement.conn) in self._gone:
            return None
        local = self._local_conn(topic, pid)
        if local is not None and local > placement.conn:
            return None  # ours is the newer connection: that one is being replaced
        entries = self._topics.setdefault(topic, {})
        known = entries.get(pid)
        if known is not None and known.conn >= placement.conn:
            return None  # the same connection, or an older one than we know
        entries[pid] = placement
        if placement.gateway not in self._seen:
            self._seen[placement.gateway] = now
        return Change("join", topic, pid, placement.info, replaces_local=local is not None)

    def left(self, topic: str, pid: str, conn: str, now: float) -> Change | None:
        """A `leave` of connection `conn`; the change to announce, if it was the one we knew."""
        self._gone[(topic, pid, conn)] = now
        entries = self._topics.get(topic, {})
        known = entries.get(pid)
        if known is None or known.conn != conn:
            return None
        del entries[pid]
        if not entries:
            del self._topics[topic]
        return Change("leave", topic, pid, known.info)

    def taken_over(self, topic: str, pid: str, now: float) -> None:
        """`pid` connected to this gateway: its connection elsewhere, if any, is over (the local
        `join` announces the move)."""
        entries = self._topics.get(topic, {})
        known = entries.pop(pid, None)
        if known is not None:
            self._gone[(topic, pid, known.conn)] = now
        if not entries:
            self._topics.pop(topic, None)

    def heartbeat(self, gateway: str, members: Iterable[Member], now: float, sent: str) -> list[Change]:
        """`gateway` is alive and held exactly `members` at `sent` (a `new_conn_id` time, on its
        clock): joins for those we missed, leaves for the connections it made before `sent` and
        no longer holds (a heartbeat older than a `join` says nothing about that connection)."""
        if gateway == self._me:
            return []
        self._seen[gateway] = now
        self._forget_gone(now)
        listed: set[tuple[str, str]] = set()
        changes: list[Change] = []
        for topic, pid, conn, info in members:
            listed.add((topic, pid))
            change = self.joined(topic, pid, Placement(gateway, conn, info), now)
            if change is not None:
                changes.append(change)
        for topic, entries in list(self._topics.items()):
            for pid, placement in list(entries.items()):
                if placement.gateway == gateway and (topic, pid) not in listed and placement.conn < sent:
                    change = self.left(topic, pid, placement.conn, now)
                    if change is not None:
                        changes.append(change)
        return changes

    def expire(self, now: float) -> list[Change]:
        """Leaves for every participant of the gateways not heard for `expiry` seconds."""
        dead = {gw for gw, seen in self._seen.items() if now - seen > self._expiry}
        changes: list[Change] = []
        for gateway in dead:
            del self._seen[gateway]
            changes.extend(self.drop_gateway(gateway, now))
        return changes

    def drop_gateway(self, gateway: str, now: float) -> list[Change]:
        """Every participant `gateway` held leaves (it said it is stopping, or it died)."""
        self._seen.pop(gateway, None)
        changes: list[Change] = []
        for topic, entries in list(self._topics.items()):
            for pid, placement in list(entries.items()):
                if placement.gateway == gateway:
                    change = self.left(topic, pid, placement.conn, now)
                    if change is not None:
                        changes.append(change)
        return changes

    def restart_clocks(self, now: float) -> None:
        """Our own link to NATS was down: nobody could be heard, so nobody is judged on it."""
        for gateway in self._seen:
            self._seen[gateway] = now

    def _forget_gone(self, now: float) -> None:
        horizon = now - 2 * self._expiry
        for key in [k for k, when in self._gone.items() if when < horizon]:
            del self._gone[key]


HEARTBEAT_BYTES: Final = 256 * 1024
"""Largest heartbeat message: NATS refuses messages over its `max_payload` (1 MiB by default)."""


def heartbeat_messages(
    gateway: str,
    sent: str,
    members: Sequence[Member],
    limit: int = HEARTBEAT_BYTES,
    *,
    stopping: bool = False,
) -> list[bytes]:
    """One heartbeat as messages of at most about `limit` bytes each: its members in parts, each
    part naming the heartbeat (`sent`) and how many parts it has (`stopping`: the gateway is
    stopping, the participants it no longer lists are moving to other gateways)."""
    entries = [json.dumps([t, p, c, dict(i)], separators=(",", ":")) for t, p, c, i in members]
    parts: list[list[str]] = [[]]
    size = 0
    for entry in entries:
        if parts[-1] and size + len(entry) > limit:
            parts.append([])
            size = 0
        parts[-1].append(entry)
        size += len(entry) + 1
    flag = {"stopping": True} if stopping else {}
    head = json.dumps({"gateway": gateway, "sent": sent, "parts": len(parts), **flag})[:-1]
    return [f'{head},"part":{n},"members":[{",".join(part)}]}}'.encode() for n, part in enumerate(parts)]


class HeartbeatParts:
    """Puts a heartbeat's parts together: the whole heartbeat once every part of it arrived."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], dict[int, list[Member]]] = {}

    def add(self, body: Mapping[str, Any]) -> tuple[str, str, list[Member]] | None:
        """A parsed heartbeat message; raises KeyError, TypeError or ValueError for a malformed one."""
        gateway, sent, parts, part = (
            str(body["gateway"]),
            str(body["sent"]),
            int(body["parts"]),
            int(body["part"]),
        )
        members: list[Member] = [(str(t), str(p), str(c), dict(i)) for t, p, c, i in body["members"]]
        for key in [k for k in self._pending if k[0] == gateway and k[1] < sent]:
            del self._pending[key]  # an older heartbeat that will never be complete
        if parts <= 1:
            return gateway, sent, members
        got = self._pending.setdefault((gateway, sent), {})
        got[part] = members
        if len(got) < parts:
            return None
        del self._pending[(gateway, sent)]
        return gateway, sent, [m for n in sorted(got) for m in got[n]]
