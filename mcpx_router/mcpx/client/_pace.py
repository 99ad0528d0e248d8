"""Pacing what a participant sends: a gateway drops the frames beyond its per-participant rate."""

from __future__ import annotations

import math

import anyio

__all__ = ["DEFAULT_SEND_RATE", "MIN_SEND_RATE", "Pacer", "describe_rate"]

DEFAULT_SEND_RATE = 50.0
"""Frames a second: the reference gateway's limit (it allows bursts of twice as many)."""
MIN_SEND_RATE = 1 / 60
"""Slowing down never goes below one frame a minute."""


def describe_rate(rate: float | None) -> str:
    """`50 frames a second`, `60 frames a minute`, `no limit`."""
    if rate is None:
        return "no limit"
    if rate >= 1:
        return f"{rate:g} frame{'' if rate == 1 else 's'} a second"
    per_minute = rate * 60
    return f"{per_minute:.3g} frame{'' if per_minute == 1 else 's'} a minute"


class Pacer:
    """A token bucket: `wait()` returns when one more frame may go out.

    At most `rate` frames a second (None: no limit), after a first burst of `rate` frames (at
    least one). Against a gateway that refills at the same rate with a burst of twice that, the
    gateway's bucket never runs dry: it keeps a second's worth of frames in hand for jitter.

    `slow_down` applies what a gateway's rate-limit error said: nothing goes out before its
    retry time, and the rate drops to the limit it named, or to half.
    """

    def __init__(self, rate: float | None) -> None:
        if rate is not None and not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"send_rate must be a positive number of frames a second, or None; not {rate!r}")
        self.rate = rate
        self.learned = False
        """Whether `rate` came from the gateway's rate-limit errors rather than our settings."""
        self._tokens = self._burst
        self._last: float | None = None
        self._resume_at = 0.0

    @property
    def _burst(self) -> float:
        return max(1.0, self.rate) if self.rate is not None else 0.0

    def delay(self, frames_ahead: int) -> float:
        """Roughly how long until a frame with `frames_ahead` queued before it may go out."""
        now = anyio.current_time()
        wait = max(0.0, self._resume_at - now)
        if self.rate is None:
            return wait
        owed = frames_ahead + 1 - self._tokens
        return wait + max(0.0, owed) / self.rate

    def slow_down(self, retry_after: float | None, limit: float | None, sent_recently: int) -> None:
        """A frame was refused for its rate: pause `retry_after` seconds, and lower the rate to
        `limit` frames a second (what the gateway named) or else to half of it (of
        `sent_recently`, the frames of the last second, when there was no limit)."""
        now = anyio.current_time()
        current = self.rate if self.rate is not None else max(2.0, float(sent_recently))
        target = limit if limit is not None and limit > 0 else current / 2
        self.rate = max(MIN_SEND_RATE, min(current, target))
        self.learned = True
        self._tokens = 0.0
        self._last = now
        pause = retry_after if retry_after is not None and retry_after > 0 else 1 / self.rate
        self._resume_at = max(self._resume_at, now + min(pause, 300.0))

    async def wait(self) -> None:
        now = anyio.current_time()
        if now < self._resume_at:
            await anyio.sleep(self._resume_at - now)
            now = anyio.current_time()
        rate = self.rate
        if rate is None:
            return
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * rate)
        self._last = now
        if self._tokens < 1:
            await anyio.sleep((1 - self._tokens) / rate)
            now = anyio.current_time()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * rate)
            self._last = now
        self._tokens -= 1
