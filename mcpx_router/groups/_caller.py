"""A call to a group: a member chosen, the call run on it, another tried only when that is safe.

Another member is tried after a failure only when the call cannot have run twice: it never
reached the peer (not sent, connection refused), or it may have, but the tool declares itself
`readOnlyHint` or `idempotentHint`, or the host allows it (`failover="always"`). Whatever
happened, the answer says which peer served the call and which failed first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .._dispatch import (
    MAY_HAVE_RUN,
    NOT_SENT,
    Outcome,
    PeerEntry,
    error,
    run_on_peer,
    success,
)
from .._published import prepare_arguments
from ..model.arguments._arguments import ArgumentsError, parse_arguments
from ._choosing import Chooser, MemberState
from ._groups import Group
from ._reputation import Reputation

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

    from .._published import PublishedTool
    from ..model.calls._calls import ToolCall

__all__ = ["FailoverMode", "GroupCaller", "GroupFailover"]

FailoverMode = Literal["safe", "always"]


class MemberTools(Protocol):
    """What a group call reads of the catalogue (the adapter's `Catalogue`): a member's published
    tool, and the version the failover events name. The catalogue sits above the groups' own
    modules: it publishes their groups."""

    version: int

    def lookup(self, name: str) -> PublishedTool | None: ...


@dataclass(frozen=True, slots=True)
class GroupFailover:
    """A group call failed on `peer` and goes on to `next_peer`; `error_type` says how it failed
    (see `Outcome.error_type`), `maybe_ran` whether it may have taken effect on `peer` (then the
    tool allowed a retry)."""

    group: str
    version: int
    call_id: str | None
    peer: str
    next_peer: str
    error_type: str
    maybe_ran: bool
    reason: str


class GroupCaller:
    """Runs calls to groups on their members, recording each attempt in the reputation."""

    def __init__(
        self,
        catalogue: MemberTools,
        peers: Mapping[str, PeerEntry],
        reputation: Reputation,
        chooser: Chooser,
        *,
        failover: FailoverMode,
        max_output_chars: int | None,
        progress: Callable[[PublishedTool, str | None], ProgressFnT | None],
    ) -> None:
        self._catalogue = catalogue
        self._peers = peers
        self._reputation = reputation
        self._chooser = chooser
        self.failover = failover
        self._max_output_chars = max_output_chars
        self._progress = progress
        self.on_failover: Callable[[GroupFailover], object] | None = None

    def may_retry(self, outcome: Outcome, tool: PublishedTool) -> bool:
        """Whether another member may be tried after `outcome` without risking a double execution."""
        if outcome.error_type in NOT_SENT:
            return True
        if outcome.error_type in MAY_HAVE_RUN:
            return self.failover == "always" or tool.repeat_safe
        return False

    async def run(self, call: ToolCall, group: Group, call_timeout: Any, unset: Any) -> Outcome:
        raw = call.arguments
        parameter = group.peer_parameter
        preferred: str | None = None
        arguments: str | dict[str, Any] | Mapping[str, Any] | None = raw
        # JSON text without a backslash that does not hold `"peer"` names no peer: passed on as it is.
        if not isinstance(raw, str) or "\\" in raw or f'"{parameter}"' in raw:
            try:
                parsed = parse_arguments(raw)
            except ArgumentsError as exc:
                message = f"{call.name} was not called. {exc}"
                refused = error(message, None, "invalid_arguments")
                return replace(refused, group=group.name)
            asked = parsed.pop(parameter, None) if parameter else None
            preferred = asked if isinstance(asked, str) else None
            arguments = parsed
        order = self._order(group, preferred)
        failed: list[tuple[PublishedTool, Outcome]] = []
        for index, member in enumerate(order):
            tool = self._catalogue.lookup(member.name)
            peer = self._peers.get(member.peer)
            if tool is None or peer is None or tool.peer != member.peer or tool.tool != member.tool:
                continue  # it left since the group was published
            try:
                prepared = prepare_arguments(tool, arguments)
            except ArgumentsError as exc:
                message = f"{call.name} was not called. {exc}"
                outcome = error(message, tool, "invalid_arguments")
                self._reputation.refused(tool.key, call.call_id, outcome)
                return self._told(outcome, group, failed, [], preferred)
            limit = peer.tool_timeouts.get(tool.tool, peer.timeout) if call_timeout is unset else call_timeout
            running = run_on_peer(
                peer,
                tool,
                tool.name,
                prepared,
                limit,
                max_output_chars=self._max_output_chars,
                progress=self._progress(tool, call.call_id),
            )
            key = tool.key
            started = self._reputation.begin(key)
            try:
                outcome = await running
            except BaseException:
                self._reputation.abandon(started)
                raise
            outcome = self._reputation.end(started, key, call.call_id, outcome)
            if not outcome.is_error:
                return self._told(outcome, group, failed, [], preferred)
            if self._chooser.policy == "reputation":  # the others, best first (stable: group order)
                order[index + 1 :] = sorted(
                    order[index + 1 :], key=lambda m: self._reputation.standing(m.key)
                )
            rest = [m for m in order[index + 1 :] if self._catalogue.lookup(m.name) is not None]
            if not rest or not self.may_retry(outcome, tool):
                unsafe = outcome.error_type in MAY_HAVE_RUN
                return self._told(outcome, group, failed, rest if unsafe else [], preferred)
            failed.append((tool, outcome))
            if self.on_failover is not None:
                maybe = outcome.error_type not in NOT_SENT
                event = GroupFailover(
                    group.name,
                    self._catalogue.version,
                    call.call_id,
                    tool.peer,
                    rest[0].peer,
                    outcome.error_type or "error",
                    maybe,
                    outcome.text,
                )
                self.on_failover(event)
        if failed:
            return self._told(failed[-1][1], group, failed[:-1], [], preferred)
        message = f"no peer of {call.name} is available now; call it again later or call another function"
        return replace(error(message, None, "not_sent"), group=group.name)

    def _order(self, group: Group, preferred: str | None) -> list[PublishedTool]:
        """The group's members in the order to try them."""
        members = group.members
        if self._chooser.policy == "reputation":
            # The default: the best member first, found without building MemberStates; the others
            # are ranked only if it fails (`_rank_rest`).
            standing = self._reputation.standing
            best, best_rank = members[0], None
            for member in members:
                rank = standing(member.key)
                if preferred is not None and member.peer == preferred and not rank[0]:
                    best = member
                    break
                if best_rank is None or rank < best_rank:
                    best, best_rank = member, rank
            return [best] + [m for m in members if m is not best]
        latency = callable(self._chooser.policy)  # the built-in policies do not look at latency
        states = [
            MemberState(m.peer, m.tool, m.name, i, self._reputation.tool(m.key, latency=latency))
            for i, m in enumerate(members)
        ]
        return [members[state.position] for state in self._chooser.order(group.name, states, preferred)]

    def _told(
        self,
        outcome: Outcome,
        group: Group,
        failed: list[tuple[PublishedTool, Outcome]],
        untried: list[PublishedTool],
        preferred: str | None,
    ) -> Outcome:
        """`outcome` with a line saying which peer served the call, which failed before, and why
        the others were not tried after a failure."""
        served = outcome.tool.peer if outcome.tool is not None else "?"
        if not (failed or untried or outcome.is_error) and (preferred is None or preferred == served):
            # The usual answer: served at once by the member chosen (or asked for).
            text = f"{outcome.text}\n\n(served by {served})"
            return success(text, outcome.tool, outcome.result, group.name)
        notes = [f"{'tried on' if outcome.is_error else 'served by'} {served}"]
        if preferred is not None and preferred != served and all(t.peer != preferred for t, _ in failed):
            notes.append(f"{preferred}, which was asked for, is not available now")
        for tool, earlier in failed:
            notes.append(f"{tool.peer} failed first: {earlier.text.removeprefix('Error: ')}")
        if untried:
            others = ", ".join(dict.fromkeys(m.peer for m in untried))
            notes.append(
                f"not tried on {others}: the call may have taken effect on {served}, and {group.name} "
                "is not marked read-only or idempotent"
            )
        text = f"{outcome.text}\n\n({'; '.join(notes)})"
        return Outcome(
            text,
            outcome.is_error,
            outcome.tool,
            outcome.result,
            outcome.error_type,
            group.name,
        )
