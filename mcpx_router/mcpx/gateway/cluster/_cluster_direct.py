"""Frames addressed to a participant on another gateway, answered and handed over (NATS mode).

A frame for participant P of topic T goes to `<prefix>.d.<T>.<P>` (only the gateway holding
P's connection subscribes) with the reply subject `<prefix>.r.<gateway>.<n>`, which this gateway
subscribes to. The receiving gateway answers `1` (delivered to P's connection), `m` (not
delivered: P is moving, because that gateway is stopping or P connected elsewhere) or `0` (not
delivered: P is not there); NATS answers "no responders" when nobody subscribes. A frame not
delivered is held (`HandOver`) while P may come back: P left as a move, or we have not yet heard
where it went; it goes out again, in order, when P joins any gateway, and its sender is refused
(`unknown_recipient`) when P left for good or did not come back within the hand-over time. A
frame whose answer never comes is never sent again: it may have been delivered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from ._cluster_state import SharedRoster, decode_token, encode_token
from ._handover import Frame, HandOver, Refuse

if TYPE_CHECKING:
    from nats.aio.msg import Msg

__all__ = ["H_PARTICIPANT", "DirectFrames"]

H_PARTICIPANT = "Mcpx-Participant"
"""The NATS header naming a frame's participant: the sender of an addressed frame or broadcast,
the subject of a presence frame."""

logger = logging.getLogger("mcpx_router.mcpx.gateway")

DELIVERED, MOVING, ABSENT = b"1", b"m", b"0"
_STATUS, _NO_RESPONDERS = "Status", "503"


class DirectHost(Protocol):
    """The gateway, as the addressed frames need it (see `ClusterHost`)."""

    def local_conn(self, topic: str, participant_id: str) -> str | None: ...
    def deliver(self, topic: str, text: str, *, to: str | None = None, sender: str | None = None) -> bool: ...


class DirectFrames:
    """One gateway's addressed frames to and from the others.

    Args:
        host: The gateway.
        roster: Who is on the other gateways.
        prefix: The subjects' prefix.
        gateway_id: This gateway's id (its answers' subject).
        op: Queues a NATS operation, `("pub", subject, data, headers, reply)`, in order.
        hold: Seconds a frame waits for its moving recipient (0: refused at once).
    """

    TICK: Final = 0.1

    def __init__(
        self,
        host: DirectHost,
        roster: SharedRoster,
        prefix: str,
        gateway_id: str,
        op: Callable[..., None],
        hold: float,
    ) -> None:
        self._host = host
        self._roster = roster
        self._prefix = prefix
        self._gateway_id = gateway_id
        self._op = op
        self.frames = HandOver(hold)
        self.inbox = f"{prefix}.r.{gateway_id}"
        self.stopping = False
        """This gateway is stopping: its participants' leaves are moves, frames for them are `m`."""

    # -- sending ------------------------------------------------------------------------------

    def send(self, topic: str, pid: str, text: str, refuse: Refuse, headers: Mapping[str, str]) -> None:
        """An addressed frame for `pid`, who is not ours (see the module docstring)."""
        frame = Frame(topic, pid, text.encode(), refuse)
        now = time.monotonic()
        if self.frames.holding(topic, pid) or (
            pid not in self._roster.remote(topic) and self.frames.moving(topic, pid, now)
        ):
            self._hold(frame, now)
        else:
            self._publish(frame, now, headers)

    def _publish(self, frame: Frame, now: float, headers: Mapping[str, str] | None = None) -> None:
        placement = self._roster.remote(frame.topic).get(frame.pid)
        frame.gateway = "" if placement is None else placement.gateway
        seq = self.frames.sent(frame, now)
        subject = f"{self._prefix}.d.{encode_token(frame.topic)}.{encode_token(frame.pid)}"
        self._op("pub", subject, frame.data, dict(headers or {}), f"{self.inbox}.{seq}")

    def _hold(self, frame: Frame, now: float) -> None:
        if not self.frames.keep(frame, now):
            frame.refuse(
                "unknown_recipient",
                f"not in topic {frame.topic!r} now: {frame.pid} (moving between gateways, with too many "
                "frames waiting for it); send it again shortly",
            )

    # -- what the roster says -----------------------------------------------------------------

    def arrived(self, topic: str, pid: str) -> None:
        """`pid` joined a gateway (this one or another): what waits for it goes there, in order."""
        if not self.frames.holding(topic, pid):
            self.frames.release(topic, pid)  # forget the move
            return
        now = time.monotonic()
        for frame in self.frames.release(topic, pid):
            if self._host.local_conn(topic, pid) is not None:
                if not self._host.deliver(topic, frame.data.decode(), to=pid):
                    self._refuse_gone(frame)
            elif pid in self._roster.remote(topic):
                self._publish(frame, now)
            else:
                self._hold(frame, now)

    def left(self, topic: str, pid: str, *, move: bool) -> None:
        """`pid` left the gateway it was on: as a move (wait for it) or for good (refuse)."""
        if move:
            self.frames.moved(topic, pid, time.monotonic())
        else:
            for frame in self.frames.gone(topic, pid):
                self._refuse_gone(frame)

    def expire(self) -> None:
        for frame in self.frames.expire(time.monotonic()):
            frame.refuse(
                "unknown_recipient",
                f"not in topic {frame.topic!r}: {frame.pid} (it left its gateway and did not come "
                f"back within {self.frames.hold:g} s)",
            )

    @staticmethod
    def _refuse_gone(frame: Frame) -> None:
        frame.refuse("unknown_recipient", f"not in topic {frame.topic!r}: {frame.pid}")

    # -- inbound ------------------------------------------------------------------------------

    async def on_direct(self, msg: Msg) -> None:
        """A frame for one of our participants: deliver it, and say whether we did."""
        _, _, topic_token, pid_token = msg.subject.split(".")
        topic, pid = decode_token(topic_token), decode_token(pid_token)
        sender = (msg.headers or {}).get(H_PARTICIPANT)  # whose frame: its join goes first
        delivered = self._host.deliver(topic, msg.data.decode(), to=pid, sender=sender)
        if msg.reply:
            if delivered:
                answer = DELIVERED
            elif self.stopping or pid in self._roster.remote(topic):
                answer = MOVING
            else:
                answer = ABSENT
            try:
                await msg.respond(answer)
            except Exception as exc:  # NATS down: the sender hears nothing, and sends nothing again
                logger.info("NATS: could not answer a frame for %r: %s", pid, exc)

    async def on_answer(self, msg: Msg) -> None:
        """Another gateway's answer to one of our frames (or NATS's "no responders")."""
        try:
            seq = int(msg.subject.rsplit(".", 1)[1])
        except ValueError:
            return
        headers: Mapping[str, Any] = msg.headers or {}
        no_responders = headers.get(_STATUS) == _NO_RESPONDERS
        if not no_responders and msg.data == DELIVERED:
            self.frames.answered(seq)
            return
        if not no_responders and msg.data not in (MOVING, ABSENT):
            return  # not an answer of ours: keep waiting for it
        frame = self.frames.answered(seq)
        if frame is not None:
            self._not_delivered(frame, moving=msg.data == MOVING)

    def _not_delivered(self, frame: Frame, *, moving: bool) -> None:
        """Nobody delivered `frame`: send it where its recipient is now, hold it, or refuse it."""
        now = time.monotonic()
        topic, pid = frame.topic, frame.pid
        placement = self._roster.remote(topic).get(pid)
        here = self._host.local_conn(topic, pid) is not None
        if self.frames.holding(topic, pid):
            self._hold(frame, now)  # behind the others
        elif here or (placement is not None and placement.gateway != frame.gateway):
            self._hold(frame, now)  # it moved meanwhile: forward it now
            self.arrived(topic, pid)
        elif moving or placement is not None or self.frames.moving(topic, pid, now):
            self._hold(frame, now)  # until it joins elsewhere, or its leave says it is gone
        else:
            self._refuse_gone(frame)

    async def run(self) -> None:
        """Refuse the held frames whose time is up, for as long as the gateway runs."""
        while True:
            await anyio.sleep(self.TICK)
            self.expire()

    async def settle(self, limit: float) -> None:
        """Wait (at most `limit` s) until our frames are answered and no frame is held: a
        stopping gateway keeps its link to the others that long."""
        with anyio.move_on_after(limit):
            while not self.frames.idle():
                self.expire()
                await anyio.sleep(self.TICK / 2)
