"""Reputation: what each peer's tools did with the calls they were given, and what the host thought.

Kept per (peer, tool) and per peer: calls, failures by kind, latency over a sliding window, the
last failure, the host's feedback, the calls still running. Recording a call is a few dict and
deque operations; percentiles are computed only when a report is asked for.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from .._dispatch import Outcome
from .._errors import UsageError
from .._naming import ToolKey

__all__ = [
    "ERROR_KINDS",
    "LastFailure",
    "PeerStats",
    "Reputation",
    "StatsReport",
    "ToolStats",
    "percentile",
]

ERROR_KINDS = ("peer_busy", "not_sent", "peer_unavailable", "timeout", "tool_error", "invalid_arguments")
"""The kinds failures are counted by: `Outcome.error_type`, any other (peer_error, the peer's own
JSON-RPC error) counted as tool_error."""
_KIND_INDEX = {kind: index for index, kind in enumerate(ERROR_KINDS)}
_TOOL_ERROR = _KIND_INDEX["tool_error"]
_KIND_INDEX["peer_error"] = _TOOL_ERROR
_REFUSED = _KIND_INDEX["invalid_arguments"]
_UNREACHED = _KIND_INDEX["timeout"]
"""Kinds up to this one are failures to reach the peer (the call not sent, or not answered)."""
UNHEALTHY_AFTER = 3
"""Consecutive failures to reach a peer (peer_busy, not_sent, peer_unavailable, timeout) after
which it counts as unhealthy."""
DEFAULT_WINDOW = 256
"""Latencies kept per (peer, tool) and per peer for the percentiles."""
_REMEMBERED_CALLS = 4096
"""Call ids remembered for `feedback`."""


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of `values` (`fraction` in (0, 1]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class LastFailure:
    """The most recent failure: its kind (`Outcome.error_type`), what the model was told, and when
    (`time.time()`)."""

    kind: str
    message: str
    at: float


@dataclass(frozen=True, slots=True)
class PeerStats:
    """What a peer (or one of its tools, see `ToolStats`) did with the calls it was given."""

    peer: str
    calls: int
    """Finished calls."""
    errors: Mapping[str, int]
    """Failed calls by kind (`ERROR_KINDS`): peer_busy, not_sent, peer_unavailable, timeout,
    tool_error, invalid_arguments."""
    p50: float | None
    """Median latency in seconds over the last `window` calls (None before the first)."""
    p95: float | None
    last_failure: LastFailure | None
    good: float
    """Weight of the host's positive feedback."""
    bad: float
    """Weight of the host's negative feedback."""
    outstanding: int
    """Calls running now."""
    consecutive_failures: int
    """Failures to reach the peer since its last call that did (peer_busy, not_sent,
    peer_unavailable, timeout)."""

    @property
    def score(self) -> float:
        """Success rate with feedback, in [0, 1]: (successes + good + 1) / (calls + good + bad + 1).

        Refused arguments are the model's mistake and count for nothing; an untried tool scores 1.
        """
        counted = self.calls - self.errors.get("invalid_arguments", 0)
        failed = sum(self.errors.values()) - self.errors.get("invalid_arguments", 0)
        return (counted - failed + self.good + 1) / (counted + self.good + self.bad + 1)

    @property
    def healthy(self) -> bool:
        """Fewer than three calls in a row failed to reach it."""
        return self.consecutive_failures < UNHEALTHY_AFTER


@dataclass(frozen=True, slots=True)
class ToolStats(PeerStats):
    """What one tool of one peer did with its calls (the fields of `PeerStats`, and the tool)."""

    tool: str = ""


@dataclass(frozen=True, slots=True)
class StatsReport:
    """`stats()`: every peer's and every tool's statistics at one moment."""

    peers: Mapping[str, PeerStats]
    tools: Mapping[ToolKey, ToolStats]
    window: int
    """How many recent calls the percentiles are taken over."""


class _Record:
    __slots__ = (
        "bad",
        "calls",
        "consecutive",
        "errors",
        "failed",
        "good",
        "last_failure",
        "latencies",
        "outstanding",
    )

    def __init__(self, window: int) -> None:
        self.calls = 0
        self.errors = [0] * len(ERROR_KINDS)
        self.failed = 0
        """Failures other than refused arguments (the sum of `errors` but the last), kept for `standing`."""
        self.latencies: deque[float] = deque(maxlen=window)
        self.last_failure: LastFailure | None = None
        self.good = 0.0
        self.bad = 0.0
        self.outstanding = 0
        self.consecutive = 0

    def add(self, seconds: float, error_type: str | None, text: str) -> None:
        self.calls += 1
        self.latencies.append(seconds)
        if error_type is None:
            self.consecutive = 0
            return
        kind = _KIND_INDEX.get(error_type, _TOOL_ERROR)
        self.errors[kind] += 1
        if kind != _REFUSED:
            self.failed += 1
        if kind <= _UNREACHED:
            self.consecutive += 1
        self.last_failure = LastFailure(error_type, text, time.time())

    def stats(self, peer: str, tool: str | None, *, latency: bool = True) -> PeerStats:
        values = list(self.latencies) if latency else ()
        fields = (
            peer,
            self.calls,
            dict(zip(ERROR_KINDS, self.errors, strict=True)),
            percentile(values, 0.5),
            percentile(values, 0.95),
            self.last_failure,
            self.good,
            self.bad,
            self.outstanding,
            self.consecutive,
        )
        return PeerStats(*fields) if tool is None else ToolStats(*fields, tool=tool)


_NEVER = _Record(1)
"""The record of a tool never called."""


class Reputation:
    """Statistics of every call that went to a peer, and the host's feedback on them."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise UsageError(f"the stats window must be a positive number of calls, not {window!r}")
        self.window = window
        self._tools: dict[ToolKey, _Record] = {}
        self._peers: dict[str, _Record] = {}
        self._calls: OrderedDict[str, ToolKey] = OrderedDict()
        """The (peer, tool) of each recent call id, oldest first."""
        self.on_call: Callable[[ToolKey, str | None, float, Outcome], object] | None = None
        """Called with each finished call (the adapter's events)."""

    def _records(self, key: ToolKey) -> tuple[_Record, _Record]:
        tool = self._tools.get(key)
        if tool is None:
            tool = self._tools[key] = _Record(self.window)
        peer = self._peers.get(key.peer)
        if peer is None:
            peer = self._peers[key.peer] = _Record(self.window)
        return tool, peer

    async def timed(self, key: ToolKey, call_id: str | None, running: Awaitable[Outcome]) -> Outcome:
        """Await `running` (a call on `key`'s peer) and record what became of it."""
        started = self.begin(key)
        try:
            outcome = await running
        except BaseException:
            self.abandon(started)
            raise
        return self.end(started, key, call_id, outcome)

    def begin(self, key: ToolKey) -> tuple[_Record, _Record, float]:
        """A call on `key` starts: it counts as running until `end` (or `abandon`)."""
        tool, peer = self._records(key)
        tool.outstanding += 1
        peer.outstanding += 1
        return tool, peer, time.perf_counter()

    def abandon(self, started: tuple[_Record, _Record, float]) -> None:
        """The call was cancelled: it no longer runs, and is not counted."""
        started[0].outstanding -= 1
        started[1].outstanding -= 1

    def end(
        self, started: tuple[_Record, _Record, float], key: ToolKey, call_id: str | None, outcome: Outcome
    ) -> Outcome:
        """The call `begin` started ended with `outcome`: record it, and return `outcome`."""
        tool, peer, start = started
        seconds = time.perf_counter() - start
        tool.outstanding -= 1
        peer.outstanding -= 1
        tool.add(seconds, outcome.error_type, outcome.text)
        peer.add(seconds, outcome.error_type, outcome.text)
        if call_id is not None:
            self._remember(call_id, key)
        if self.on_call is not None:
            self.on_call(key, call_id, seconds, outcome)
        return outcome

    def refused(self, key: ToolKey, call_id: str | None, outcome: Outcome) -> None:
        """Record a call whose arguments were refused before it was sent."""
        tool, peer = self._records(key)
        tool.add(0.0, outcome.error_type, outcome.text)
        peer.add(0.0, outcome.error_type, outcome.text)
        if call_id is not None:
            self._remember(call_id, key)

    def _remember(self, call_id: str, key: ToolKey) -> None:
        calls = self._calls
        calls[call_id] = key
        calls.move_to_end(call_id)
        if len(calls) > _REMEMBERED_CALLS:
            calls.popitem(last=False)

    def served(self, call_id: str) -> ToolKey | None:
        """The (peer, tool) that answered the call `call_id`, while it is remembered."""
        return self._calls.get(call_id)

    def feedback(self, call_id: str, ok: bool, weight: float = 1.0) -> ToolKey:
        """Count the host's judgement of the answer to `call_id` for the tool and peer that gave it."""
        if not isinstance(ok, bool):
            raise UsageError(f"feedback's ok must be True or False, not {ok!r}")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < math.inf:
            raise UsageError(f"feedback's weight must be a positive finite number, not {weight!r}")
        key = self._calls.get(call_id) if isinstance(call_id, str) else None
        if key is None:
            raise UsageError(
                f"no call with id {call_id!r} was answered recently (the last {_REMEMBERED_CALLS} "
                "are remembered); pass the id of a tool call the adapter answered"
            )
        for record in self._records(key):
            if ok:
                record.good += weight
            else:
                record.bad += weight
        return key

    def standing(self, key: ToolKey) -> tuple[bool, float, int, int]:
        """How the default policy ranks a tool: (unhealthy, -score, calls running, calls so far),
        the smaller the better; the same figures as `tool(key)` gives, without building it."""
        record = self._tools.get(key)
        if record is None:
            return (False, -1.0, 0, 0)
        counted = record.calls - record.errors[_REFUSED]
        score = (counted - record.failed + record.good + 1) / (counted + record.good + record.bad + 1)
        return (record.consecutive >= UNHEALTHY_AFTER, -score, record.outstanding, record.calls)

    def tool(self, key: ToolKey, *, latency: bool = True) -> ToolStats:
        """One tool's statistics (zeros if it was never called); without `latency`, no percentiles
        (p50 and p95 None), which saves sorting the window."""
        record = self._tools.get(key)
        stats = (record or _NEVER).stats(key.peer, key.tool, latency=latency)
        assert isinstance(stats, ToolStats)
        return stats

    def report(self) -> StatsReport:
        """Every peer's and tool's statistics now."""
        peers = {peer: record.stats(peer, None) for peer, record in self._peers.items()}
        tools: dict[ToolKey, ToolStats] = {}
        for key, record in self._tools.items():
            stats = record.stats(key.peer, key.tool)
            assert isinstance(stats, ToolStats)
            tools[key] = stats
        return StatsReport(peers, tools, self.window)
