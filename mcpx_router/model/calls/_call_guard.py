"""A host-side guard on a conversation's tool calls: identical calls run once, and a turn's calls
are capped (pure: no I/O; the loops of `mcpx_router.loop` and `mcpx_router.sync.loop` apply it).

A small model piles up calls: the same call three times in one turn, the same note saved again
on each of three turns, a dozen checkouts in a turn. The loops therefore plan each turn before
dispatching it:

- Identical calls (the same name, the same arguments as canonical JSON) run once; every
  duplicate in the turn gets the first one's answer under its own call id, with a sentence
  saying it was not run again. With `dedupe="conversation"` (the loops' default) the same holds
  across the turns of one run of a loop: a call identical to one that already ran and succeeded
  in an earlier turn is not run again, and is answered with what that one returned and a
  sentence saying so (a call whose answer was an error may run again: a retry). A tool marked
  `readOnlyHint` or `idempotentHint` is the exception: running it again does no harm and may
  be meant (reading again what changed), so each of its calls runs. So is a name no published
  tool has (a search function, a name the model imagined): there is nothing to repeat.
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
from typing import Any, Final, Literal

from ..._errors import UsageError
from .._search_hints import hinted
from ._answers import answer
from ._calls import ToolCall, parse_tool_call, tool_call_items

__all__ = ["DEFAULT_MAX_CALLS_PER_TURN", "CallGuard", "Dedupe", "TurnPlan", "canonical"]

DEFAULT_MAX_CALLS_PER_TURN: Final = 16
"""The most calls one turn runs unless a loop is told otherwise: more than parallel work needs."""

Dedupe = bool | Literal["turn", "conversation"]
"""How far identical calls are run once: "conversation" (or True) across the turns of one run of
a loop, "turn" within each turn, False nowhere."""

_SHARED: Final = "[Not run again: an identical call earlier in this turn ran once; this is its answer.]"
_REPEATED: Final = (
    "[Not run again: the same call, with the same arguments, already ran earlier in this "
    "conversation; this is what it returned. Call it again only with other arguments.]"
)
_REMEMBERED: Final = 1024
"""The most calls remembered per conversation (the oldest forgotten first)."""


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
        tools: The published tools now (an adapter's or a facade's `tools`), read for their
            `repeat_safe` marks when a turn has identical calls, and on each turn with
            `dedupe="conversation"`.
        dedupe: "conversation" (or True): run identical calls once across the turns this guard
            plans; "turn": within each turn; False: run each.
        max_calls: The most calls one turn runs (None: no limit).
    """

    def __init__(self, tools: Callable[[], Iterable[Any]], *, dedupe: Dedupe, max_calls: int | None) -> None:
        if dedupe not in (True, False, "turn", "conversation") or not isinstance(dedupe, bool | str):
            raise UsageError(f"dedupe_calls must be True, False, 'turn' or 'conversation', not {dedupe!r}")
        if max_calls is not None and (
            isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1
        ):
            raise UsageError(f"max_calls_per_turn must be a positive integer or None, not {max_calls!r}")
        self._tools = tools
        self.dedupe = dedupe is not False
        self.across_turns = dedupe is True or dedupe == "conversation"
        self.max_calls = max_calls
        self._ran: dict[tuple[str, str], str] = {}
        """What each call that ran and succeeded in an earlier turn returned (its text)."""

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
        if self.across_turns and any(call is not None for call in parsed):
            repeat_safe = self._marks()
        first: dict[tuple[str, str], int] = {}
        shared: dict[int, int] = {}
        earlier: dict[int, str] = {}
        refused: set[int] = set()
        remembered: dict[int, tuple[str, str]] = {}
        ran = 0
        for index, call in enumerate(parsed):
            if call is None:
                continue
            key = (call.name, canonical(call.arguments))
            if self.dedupe and (key in first or key in self._ran):
                if repeat_safe is None:
                    repeat_safe = self._marks()
                if key in first and not repeat_safe.get(call.name, False):
                    shared[index] = first[key]
                    continue
                if key not in first and repeat_safe.get(call.name) is False:
                    earlier[index] = self._ran[key]
                    continue
            first.setdefault(key, index)
            if self.max_calls is not None and ran >= self.max_calls:
                refused.add(index)
                continue
            ran += 1
            if repeat_safe is not None and repeat_safe.get(call.name) is False:
                remembered[index] = key  # runs now: what it returns is remembered
        remember = self._remember if self.across_turns and remembered else None
        if not shared and not refused and not earlier:
            if remember is None:
                return TurnPlan(calls)
            return TurnPlan(calls, items, parsed, remembered=remembered, remember=remember)
        held = shared.keys() | refused | earlier.keys()
        kept = [item for index, item in enumerate(items) if index not in held]
        to_dispatch: Any = {"object": "response", "output": kept} if whole else kept
        return TurnPlan(
            to_dispatch,
            items,
            parsed,
            shared,
            frozenset(refused),
            self.max_calls or 0,
            earlier,
            remembered,
            remember,
        )

    def _marks(self) -> dict[str, bool]:
        """Per published name, whether its tool is marked read-only or idempotent."""
        return {t.name: bool(getattr(t, "repeat_safe", False)) for t in self._tools()}

    def _remember(self, key: tuple[str, str], answered: Any) -> None:
        text = _answer_text(answered)
        if text is None or text.startswith("Error:"):
            return  # an error, or no text to give again: the call may run again
        self._ran.pop(key, None)
        self._ran[key] = text
        if len(self._ran) > _REMEMBERED:
            del self._ran[next(iter(self._ran))]


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
    earlier: dict[int, str] = field(default_factory=dict)
    """Per place of a call that already ran in an earlier turn, what it returned then."""
    remembered: dict[int, tuple[str, str]] = field(default_factory=dict)
    """The places of the calls that run now and whose answers are remembered, with their keys."""
    remember: Callable[[tuple[str, str], Any], None] | None = None

    def answers(self, dispatched: list[Any]) -> list[Any]:
        """Every answer of the turn in call order (then any media message), from what `dispatch`
        answered for `to_dispatch`."""
        if not self.shared and not self.refused and not self.earlier:
            if self.remember is not None:
                answered = {_answer_id(item): item for item in dispatched}
                for index, key in self.remembered.items():
                    found = answered.get(_item_id(self.items[index]))
                    if found is not None:
                        self.remember(key, found)
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
            if call is not None and index in self.earlier:
                out.append(answer(call, f"{self.earlier[index]} {_REPEATED}"))
            elif call is not None and (index in self.refused or original in self.refused):
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
                    if self.remember is not None and index in self.remembered:
                        self.remember(self.remembered[index], queue[0])
                    out.append(queue.pop(0))
        for queue in by_id.values():
            out.extend(queue)  # answers placed by no id here (none: dispatch answers each call by id)
        return out + extra


def _refusal(call: ToolCall, limit: int) -> str:
    return (
        f"Error: {call.name} was not called: this turn already ran {limit} tool calls, the most one "
        "turn may run. Call it again in your next step if it is still needed."
    )


def _answer_text(item: Any) -> str | None:
    """The text of an answer (a tool message's content, a function call output's output)."""
    if not isinstance(item, Mapping):
        return None
    text = item.get("content", item.get("output"))
    return text if isinstance(text, str) else None


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
