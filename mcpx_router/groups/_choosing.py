"""Which member of a group serves a call, and in what order the others are tried (pure).

A policy gets the group's members (with their statistics) and returns the order to try them
in; members it leaves out are not tried. The built-in policies put healthy members first:

- "reputation" (the default): higher score first (success rate with the host's feedback, see
  `PeerStats.score`), then fewer calls running, then fewer calls so far, then group order;
- "round_robin": each call starts one member further along;
- "random": a shuffled order.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .._errors import UsageError
from ._reputation import ToolStats

__all__ = ["Chooser", "MemberState", "Policy", "PolicyName"]

logger = logging.getLogger("mcpx_router")


@dataclass(frozen=True, slots=True)
class MemberState:
    """One member of a group as a policy sees it."""

    peer: str
    tool: str
    """The tool's name on its peer."""
    name: str
    """Its public `peer__tool` name."""
    position: int
    """Its place in the group (the host's order, or the order the peers joined in)."""
    stats: ToolStats
    """Its statistics; `p50` and `p95` are None unless the policy is a callable of the host's."""

    @property
    def healthy(self) -> bool:
        return self.stats.healthy


PolicyName = Literal["reputation", "round_robin", "random"]
Policy: TypeAlias = Callable[[str, Sequence[MemberState]], Sequence[MemberState]]
"""`policy(group name, members) -> the members in the order to try them`."""


def by_reputation(members: Sequence[MemberState]) -> list[MemberState]:
    """Healthy first, then by score, calls running, calls so far and group order."""
    return sorted(
        members,
        key=lambda m: (not m.healthy, -m.stats.score, m.stats.outstanding, m.stats.calls, m.position),
    )


class Chooser:
    """Orders the members of a group for one call: a healthy preferred peer first, then the policy."""

    def __init__(self, policy: PolicyName | Policy = "reputation", *, seed: int | None = None) -> None:
        if not callable(policy) and policy not in ("reputation", "round_robin", "random"):
            raise UsageError(
                f"policy must be 'reputation', 'round_robin', 'random' or a callable, not {policy!r}"
            )
        self.policy = policy
        self._turns: dict[str, int] = {}
        self._random = random.Random(seed)

    def order(self, group: str, members: Sequence[MemberState], preferred: str | None) -> list[MemberState]:
        ordered = self._ordered(group, members)
        if preferred is not None:
            first = [m for m in ordered if m.peer == preferred and m.healthy]
            ordered = first + [m for m in ordered if m not in first]
        return ordered

    def _ordered(self, group: str, members: Sequence[MemberState]) -> list[MemberState]:
        policy = self.policy
        if policy == "reputation":
            return by_reputation(members)
        healthy = [m for m in members if m.healthy]
        unhealthy = [m for m in members if not m.healthy]
        if policy == "round_robin":
            turn = self._turns.get(group, 0)
            self._turns[group] = turn + 1
            if healthy:
                start = turn % len(healthy)
                healthy = healthy[start:] + healthy[:start]
            return healthy + unhealthy
        if policy == "random":
            self._random.shuffle(healthy)
            self._random.shuffle(unhealthy)
            return healthy + unhealthy
        assert callable(policy)
        try:
            chosen = list(policy(group, tuple(members)))
        except Exception:
            logger.exception(
                "the group policy raised for group %r; its members are tried by reputation", group
            )
            return by_reputation(members)
        known = {id(m) for m in members}
        return list({id(m): m for m in chosen if id(m) in known}.values())
