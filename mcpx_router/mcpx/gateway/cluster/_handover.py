"""Addressed frames between gateways: which await an answer, which wait for a moving recipient.

Pure bookkeeping, no I/O (the NATS side is `_cluster_direct`). A frame for a participant on
another gateway goes out with a reply subject; the gateway that receives it answers whether it
delivered it. Until then it is *in flight* here. An answer "not delivered" (or NATS's "no
responders") means nobody delivered it: the frame may then be *held* for its recipient while it
moves between gateways, and forwarded, in order, once it is back. A missing answer means
nothing: the frame may have been delivered, so it is never sent again.

Bounds: frames held per recipient (`per_recipient`) and in all (`frames`, `size` bytes); a frame
beyond them is refused at once. Frames in flight beyond `in_flight`: the oldest is forgotten (its
answer, if one comes, is ignored, as it is after `answer_wait` seconds).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["Frame", "HandOver", "Refuse"]

Refuse = Callable[[str, str], None]
"""Tells a frame's sender that it was not delivered: `(error, message)`."""

ANSWER_WAIT: Final = 10.0
"""Seconds an answer to a frame in flight is waited for; a later one is ignored."""


@dataclass(slots=True)
class Frame:
    """An addressed frame for participant `pid` of `topic` on another gateway (or none now)."""

    topic: str
    pid: str
    data: bytes
    refuse: Refuse
    gateway: str = ""
    """The gateway it was sent to ("" while it is held, or when none was known)."""
    since: float = 0.0
    """When it went out (in flight) or when it was held."""


class HandOver:
    """The frames in flight and held by one gateway (see the module docstring).

    Args:
        hold: Seconds a frame waits for its moving recipient (0: frames are never held).
        per_recipient: Frames held for one recipient at most.
        frames: Frames held at most, in all.
        size: Bytes held at most, in all.
        in_flight: Frames awaiting an answer at most.
        answer_wait: Seconds an answer is waited for.
    """

    def __init__(
        self,
        hold: float,
        *,
        per_recipient: int = 1000,
        frames: int = 10_000,
        size: int = 64 * 1024 * 1024,
        in_flight: int = 100_000,
        answer_wait: float = ANSWER_WAIT,
    ) -> None:
        self.hold = hold
        self._limits = (per_recipient, frames, size, in_flight)
        self._answer_wait = answer_wait
        self._seq = 0
        self._in_flight: dict[int, Frame] = {}
        self._held: dict[tuple[str, str], deque[Frame]] = {}
        self._held_frames = 0
        self._held_bytes = 0
        self._moving: dict[tuple[str, str], float] = {}  # -> until when

    # -- reading ------------------------------------------------------------------------------

    def idle(self) -> bool:
        """Nothing in flight, nothing held."""
        return not self._in_flight and not self._held

    def holding(self, topic: str, pid: str) -> bool:
        """Frames wait for `pid`: a new one must queue behind them (order per recipient)."""
        return (topic, pid) in self._held

    def moving(self, topic: str, pid: str, now: float) -> bool:
        """`pid` left its gateway as a move (that gateway was stopping) and may come back."""
        until = self._moving.get((topic, pid))
        return until is not None and now < until

    def held_count(self) -> int:
        return self._held_frames

    # -- frames in flight ---------------------------------------------------------------------

    def sent(self, frame: Frame, now: float) -> int:
        """`frame` goes out now: the number its answer will name."""
        if len(self._in_flight) >= self._limits[3]:
            del self._in_flight[next(iter(self._in_flight))]
        self._seq += 1
        frame.since = now
        self._in_flight[self._seq] = frame
        return self._seq

    def answered(self, seq: int) -> Frame | None:
        """The frame numbered `seq` was answered (delivered or not); None if not followed."""
        return self._in_flight.pop(seq, None)

    # -- frames held --------------------------------------------------------------------------

    def keep(self, frame: Frame, now: float) -> bool:
        """Hold `frame` for its recipient; False when that is over the bounds (refuse it)."""
        per_recipient, frames, size, _ = self._limits
        key = (frame.topic, frame.pid)
        queue = self._held.get(key)
        if (
            self.hold <= 0
            or (queue is not None and len(queue) >= per_recipient)
            or self._held_frames >= frames
            or self._held_bytes + len(frame.data) > size
        ):
            return False
        frame.gateway, frame.since = "", now
        self._held.setdefault(key, deque()).append(frame)
        self._held_frames += 1
        self._held_bytes += len(frame.data)
        return True

    def release(self, topic: str, pid: str) -> list[Frame]:
        """`pid` is back: the frames held for it, oldest first (no longer held)."""
        queue = self._held.pop((topic, pid), None)
        self._moving.pop((topic, pid), None)
        if not queue:
            return []
        self._held_frames -= len(queue)
        self._held_bytes -= sum(len(f.data) for f in queue)
        return list(queue)

    def moved(self, topic: str, pid: str, now: float) -> None:
        """`pid` left its gateway as a move: frames for it are held for `hold` seconds."""
        if self.hold > 0:
            self._moving[(topic, pid)] = now + self.hold

    def gone(self, topic: str, pid: str) -> list[Frame]:
        """`pid` left for good: the frames held for it, to refuse now."""
        return self.release(topic, pid)

    def expire(self, now: float) -> list[Frame]:
        """Forget old frames in flight and moves; return the held frames whose time is up."""
        horizon = now - self._answer_wait
        while self._in_flight:
            seq = next(iter(self._in_flight))
            if self._in_flight[seq].since >= horizon:
                break
            del self._in_flight[seq]
        for key in [k for k, until in self._moving.items() if until <= now]:
            del self._moving[key]
        late: list[Frame] = []
        for key, queue in list(self._held.items()):
            while queue and queue[0].since + self.hold <= now:
                frame = queue.popleft()
                self._held_frames -= 1
                self._held_bytes -= len(frame.data)
                late.append(frame)
            if not queue:
                del self._held[key]
        return late
