"""When to try a lost peer again: exponential backoff with jitter, a cap and a give-up rule (pure)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Reconnect"]


@dataclass(frozen=True, slots=True)
class Reconnect:
    """How a Router reconnects a peer whose connection was lost.

    The n-th attempt (from 0) waits `min(max_delay, initial_delay * multiplier**n)` seconds, less a
    random part of up to `jitter` of it, so that peers lost together do not all come back at once.

    Example:
        >>> policy = Reconnect(initial_delay=1.0, jitter=0.0, max_attempts=4)
        >>> list(policy.delays())
        [1.0, 2.0, 4.0, 8.0]

    Args:
        initial_delay: Seconds before the first attempt.
        multiplier: Each delay is this many times the previous one.
        max_delay: No delay is longer than this.
        jitter: The fraction of each delay (0 to 1) that is random.
        max_attempts: Give up after this many failed attempts (None: never give up).
        give_up_after: Give up once this many seconds of delays have passed (None: never).
    """

    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.5
    max_attempts: int | None = None
    give_up_after: float | None = None

    def __post_init__(self) -> None:
        if not self.initial_delay >= 0:
            raise ValueError(f"initial_delay must be >= 0, not {self.initial_delay!r}")
        if not self.multiplier >= 1:
            raise ValueError(f"multiplier must be >= 1, not {self.multiplier!r}")
        if not self.max_delay >= self.initial_delay:
            raise ValueError(f"max_delay must be >= initial_delay, not {self.max_delay!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, not {self.jitter!r}")
        if self.max_attempts is not None and self.max_attempts < 0:
            raise ValueError(f"max_attempts must be >= 0 or None, not {self.max_attempts!r}")
        if self.give_up_after is not None and not self.give_up_after >= 0:
            raise ValueError(f"give_up_after must be >= 0 or None, not {self.give_up_after!r}")

    @classmethod
    def never(cls) -> Reconnect:
        """A policy that gives up at once: a lost peer leaves."""
        return cls(max_attempts=0)

    def delays(self, rand: Callable[[], float] = random.random) -> Iterator[float]:
        """The wait before each attempt; the iterator ends when the policy gives up."""
        attempt = 0
        waited = 0.0
        base = self.initial_delay
        while self.max_attempts is None or attempt < self.max_attempts:
            delay = min(base, self.max_delay) * (1 - self.jitter * rand())
            if self.give_up_after is not None and waited + delay > self.give_up_after:
                return
            yield delay
            waited += delay
            attempt += 1
            base = min(base * self.multiplier, self.max_delay)
