"""Pacing what a participant sends: a gateway drops the frames beyond its per-participant rate."""

from __future__ import annotations

import anyio

__all__ = ["DEFAULT_SEND_RATE", "Pacer"]

DEFAULT_SEND_RATE = 50.0
"""Frames a second: the reference gateway's limit (it allows bursts of twice as many)."""


class Pacer:
    """A token bucket: `wait()` returns when one more frame may go out.

    At most `rate` frames a second, after a first burst of `rate` frames. Against a gateway
    that refills at the same rate with a burst of twice that, the gateway's bucket never runs
    dry: it keeps a second's worth of frames in hand for network jitter.
    """

    def __init__(self, rate: float) -> None:
        if not rate > 0:
            raise ValueError(f"send_rate must be a positive number of frames a second, or None; not {rate!r}")
        self.rate = rate
        self._tokens = rate
        self._last: float | None = None

    async def wait(self) -> None:
        now = anyio.current_time()
        if self._last is not None:
            self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens < 1:
            await anyio.sleep((1 - self._tokens) / self.rate)
            now = anyio.current_time()
            self._tokens = min(self.rate, self._tokens + (now - self._last) * self.rate)
            self._last = now
        self._tokens -= 1
