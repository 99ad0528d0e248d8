"""A host-side guard on one turn's tool calls: identical calls run once, and a turn's calls are
capped (pure: no I/O; the loops of `mcpx_router.loop` and `mcpx_router.sync.loop` apply it).

A small model piles up calls: the same call three times in one turn, a dozen checkouts in a
turn. The loops therefore plan each turn before dispatching it:

- Identical calls (the same name, the same arguments as canonical JSON) run once; every
  duplicate gets the first one's answer under its own call id, with a sentence saying it was not
  run again. A tool marked `readOnlyHint` or `idempotentHint` is the exception: running it again
  does no harm and may be meant (reading again what changed), so each of its calls runs.
- At most `max_calls` calls run per turn (duplicates that share an answer do not count); those
  beyond it are answered with an error naming the limit, and never run.

Items that are not function calls (reasoning, messages, the API's own tool search, custom tool
calls) pass through untouched. When nothing is held back, `to_dispatch` is exactly what was
given, so an ordinary turn is dispatched as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..._errors import UsageError
from .._search_hints import hinted
from ._calls import ToolCall, answer, parse_tool_call, tool_call_items

__all__ = ["DEFAULT_MAX_CALLS_PER_TURN", "CallGuard", "TurnPlan", "canonical"]

DEFAULT_MAX_CALLS_PER_TURN: Final = 16
"""The most calls one turn runs unless a loop is told otherwise: more than parallel work needs."""

_SHARED: Final = "[Not run again: an identical call earlier in this turn ran once; this is its answer.]"


def canonical(arguments: Any) -> str:
    """The arguments as canonical JSON (keys sorted, no spaces); text that is no JSON as it is."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str | bytes) else arguments
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


class CallGuard:
    """The guard's settings for one conversation, and the plan of each of its turns.

    Args:
        tools: The published tools now (an adapter's or a facade's `tools`), read only when a
            turn has identical calls, for their `repeat_safe` marks.
        dedupe: Run identical calls of a turn once (False: run each).
        max_calls: The most calls one turn runs (None: no limit).
    """

    def __init__(self, tools: Callable[[], Iterable[Any]], *, dedupe: bool, max_calls: int | None) -> None:
        if not isinstance(dedupe, bool):
            raise UsageError(f"dedupe_calls must be True or False, not {dedupe!r}")
        if max_calls is not None and (
            isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1
        ):
            raise UsageError(f"max_calls_per_turn must be a positive integer or None, not {max_calls!r}")
        self._tools = tools
        self.dedupe = dedupe
        self.max_calls = max_calls

    def plan(self, calls: Any) -> TurnPlan:
        """The plan of one turn: `calls` as `dispatch` takes them (a message's tool calls, or a
        whole Response)."""
        if not self.dedupe and self.max_calls is None:
            return TurnPlan(calls)
        items, whole = tool_call_items(calls)
        parsed: list[ToolCall | None] = []
        for index, item in enumerate(items):
            call = parse_tool_call(item, lenient=whole, index=None if item is calls else index)
            guarded = call is not None and call.problem is None and call.shape in ("chat", "responses")
            parsed.append(call if guarded else None)
        repeat_safe: dict[str, bool] | None = None
        first: dict[tuple[str, str], int] = {}
        shared: dict[int, int] = {}
        refused: set[int] = set()
        ran = 0
        for index, call in enumerate(parsed):
            if call is None:
                continue
            key = (call.name, canonical(call.arguments))
            if self.dedupe and key in first:
                if repeat_safe is None:
                    repeat_safe = {t.name: bool(getattr(t, "repeat_safe", False)) for t in self._tools()}
                if not repeat_safe.get(call.name, False):
                    shared[index] = first[key]
                    continue
            first.setdefault(key, index)
            if self.max_calls is not None and ran >= self.max_calls:
                refused.add(index)
            else:
                ran += 1
        if not shared and not refused:
            return TurnPlan(calls)
        kept = [item for index, item in enumerate(items) if index not in shared and index not in refused]
        to_dispatch: Any = {"object": "response", "output": kept} if whole else kept
        return TurnPlan(to_dispatch, items, parsed, shared, frozenset(refused), self.max_calls or 0)


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """One turn's calls as the guard lets them run, and how to answer the ones it held back."""

    to_dispatch: Any
    """What to pass to `dispatch`: the calls as given when nothing is held back."""
    items: list[Any] = field(default_factory=list)
    """Every item of the turn, in order (empty when nothing is held back)."""
    calls: list[ToolCall | None] = field(default_factory=list)
    """Per item, the call the guard read in it (None: an item it passes on as it is)."""
    shared: dict[int, int] = field(default_factory=dict)
    """Per duplicate's place, the place of the call whose answer it shares."""
    refused: frozenset[int] = frozenset()
    """The places of the calls beyond the limit."""
    limit: int = 0

    def answers(self, dispatched: list[Any]) -> list[Any]:
        """Every answer of the turn in call order (then any media message), from what `dispatch`
        answered for `to_dispatch`."""
        if not self.shared and not self.refused:
            return dispatched
        by_id: dict[Any, list[Any]] = {}
        extra: list[Any] = []
        for item in dispatched:
            call_id = _answer_id(item)
            if call_id is None:
                extra.append(item)  # a media message follows the answers
            else:
                by_id.setdefault(call_id, []).append(item)
        given: dict[int, Any] = {}  # the answer of each place that ran
        out: list[Any] = []
        for index, item in enumerate(self.items):
            call = self.calls[index]
            original = self.shared.get(index)
            if call is not None and (index in self.refused or original in self.refused):
                out.append(answer(call, _refusal(call, self.limit)))
            elif call is not None and original is not None:
                first = given.get(original)
                if isinstance(first, Mapping):
                    out.append(hinted(_with_id(first, call.call_id), _SHARED))
                else:
                    out.append(answer(call, f"Error: {call.name} was not called again in this turn."))
            else:
                queue = by_id.get(_item_id(item))
                if queue:
                    given[index] = queue[0]
                    out.append(queue.pop(0))
        for queue in by_id.values():
            out.extend(queue)  # answers placed by no id here (none: dispatch answers each call by id)
        return out + extra


def _refusal(call: ToolCall, limit: int) -> str:
    return (
        f"Error: {call.name} was not called: this turn already ran {limit} tool calls, the most one "
        "turn may run. Call it again in your next step if it is still needed."
    )


def _answer_id(item: Any) -> Any:
    if not isinstance(item, Mapping):
        return None
    return item.get("tool_call_id", item.get("call_id"))


def _item_id(item: Any) -> Any:
    if isinstance(item, Mapping):
        return item.get("call_id") if "call_id" in item else item.get("id")
    call_id = getattr(item, "call_id", None)
    return call_id if call_id is not None else getattr(item, "id", None)


def _with_id(item: Mapping[str, Any], call_id: Any) -> dict[str, Any]:
    key = "tool_call_id" if "tool_call_id" in item else "call_id"
    return {**item, key: call_id}
