"""The adapter's many-peer part: its options, groups of equivalent tools, statistics, feedback."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict

from .._dispatch import Outcome, PeerEntry
from .._errors import UsageError
from .._naming import ToolKey
from ._caller import FailoverMode, GroupCaller, GroupFailover, MemberTools
from ._choosing import Chooser, Policy, PolicyName
from ._groups import GroupChanged, GroupInfo, Groups
from ._reputation import Reputation, StatsReport
from ._spec import GroupSpec, parse_aliases
from ._stats_file import load_stats, save_stats

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

    from .._published import PublishedTool

__all__ = ["AdapterEvent", "CallFinished", "GroupOptions", "Grouping"]

logger = logging.getLogger("mcpx_router")


class GroupOptions(TypedDict, total=False):
    """Options of `OpenAIPeerToolAdapter` and `Router` for tools that many peers offer (all off by default).

    aliases: Groups published as one function each: `{"search": ["web/search", "docs/search"]}`
        (members as "peer/tool"; a value may also be a suggestion `{"members": [...], "score": ...}`).
    auto_groups: Group the tools of the same name whose input schemas are the same.
    hide_members: Leave the members of a published group out of the tool lists (their
        `peer__tool` names still answer calls).
    policy: Which member serves a group call: "reputation" (default), "round_robin", "random",
        or a callable `(group, members) -> members in the order to try`.
    failover: "safe" (default): after a failure another member is tried only when the call never
        reached the peer, or the tool is marked read-only or idempotent. "always": also otherwise.
    stats: Keep statistics of every call (`stats()`, `feedback()`); on whenever groups are.
    stats_file: A JSON file to load the statistics from (if it exists) and save them to when the
        adapter closes, so that they outlive the process; implies `stats`. A file that is not a
        statistics file raises `ConfigError` and is never overwritten.
    """

    aliases: Mapping[str, Any] | None
    auto_groups: bool
    hide_members: bool
    policy: PolicyName | Policy
    failover: FailoverMode
    stats: bool
    stats_file: str | os.PathLike[str] | None


@dataclass(frozen=True, slots=True)
class CallFinished:
    """A tool call finished (emitted while statistics are kept): how long it took, how it failed."""

    peer: str
    version: int
    tool: str
    """The tool's name on its peer."""
    call_id: str | None
    seconds: float
    error_type: str | None
    """How it failed (see `Outcome.error_type`); None when it succeeded."""


AdapterEvent: TypeAlias = GroupChanged | GroupFailover | CallFinished
_KEYS = frozenset(GroupOptions.__annotations__)


class GroupedTools(MemberTools, Protocol):
    """What the grouping reads and sets of the catalogue (the adapter's `Catalogue`, above the
    groups' modules): the groups it publishes, and its version."""

    @property
    def groups(self) -> Groups | None: ...

    def set_groups(self, groups: Groups) -> None: ...


class GroupAnswers(Protocol):
    """Where the grouping plugs group calls and the reputation into the adapter's answering (its
    `Answerer`, above the groups' modules)."""

    reputation: Reputation | None
    groups: GroupCaller | None

    def progress_reporter(self, tool: PublishedTool, call_id: str | None) -> ProgressFnT | None: ...


class Grouping:
    """The adapter's groups and statistics: its options checked, groups set up and kept, statistics
    kept, saved and loaded, and the events they raise (`set_aliases`, `groups`, `stats` and
    `feedback` of the adapter hand over to these)."""

    def __init__(
        self,
        options: Mapping[str, Any],
        *,
        catalogue: GroupedTools,
        answerer: GroupAnswers,
        peers: dict[str, PeerEntry],
        max_output_chars: int | None,
        description_limit: int | None,
        on_event: Callable[[AdapterEvent], object] | None,
    ) -> None:
        self._catalogue = catalogue
        self._answerer = answerer
        self._peers = peers
        self._max_output_chars = max_output_chars
        self.on_event = on_event
        """Called with group changes, failovers and (with statistics) every call that finished."""
        unknown = set(options) - _KEYS
        if unknown:
            raise UsageError(
                f"unknown options {', '.join(sorted(unknown))}; expected some of {', '.join(sorted(_KEYS))}"
            )
        for flag in ("auto_groups", "hide_members", "stats"):
            if not isinstance(options.get(flag, False), bool):
                raise UsageError(f"{flag} must be True or False, not {options[flag]!r}")
        failover = options.get("failover", "safe")
        if failover not in ("safe", "always"):
            raise UsageError(f"failover must be 'safe' or 'always', not {failover!r}")
        self._chooser = Chooser(options.get("policy", "reputation"))
        self._failover: FailoverMode = failover
        self._description_limit = description_limit
        specs = parse_aliases(options.get("aliases"))
        self._reputation: Reputation | None = None
        stats_file = options.get("stats_file")
        if stats_file is not None and not isinstance(stats_file, str | os.PathLike):
            raise UsageError(f"stats_file must be a path, not {stats_file!r}")
        self._stats_file = stats_file
        if options.get("stats") or specs or options.get("auto_groups") or stats_file is not None:
            self._keep_stats()
        self._hide = bool(options.get("hide_members"))
        if specs or options.get("auto_groups"):
            self._group(specs, auto=bool(options.get("auto_groups")))

    def _keep_stats(self) -> Reputation:
        if self._reputation is None:
            reputation = self._reputation = Reputation()
            reputation.on_call = self._call_finished
            self._answerer.reputation = reputation
            if self._stats_file is not None:
                load_stats(self._stats_file, reputation)
        return self._reputation

    def save_stats(self) -> None:
        """Write the statistics to the `stats_file`, if there is one."""
        if self._stats_file is not None and self._reputation is not None:
            save_stats(self._stats_file, self._reputation)

    def _call_finished(self, key: ToolKey, call_id: str | None, seconds: float, outcome: Outcome) -> None:
        if self.on_event is not None:
            self._emit(
                CallFinished(
                    key.peer, self._catalogue.version, key.tool, call_id, seconds, outcome.error_type
                )
            )

    def _emit(self, event: AdapterEvent) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                logger.exception("the adapter's on_event raised on %r", event)

    def _group(self, specs: Mapping[str, GroupSpec], *, auto: bool) -> None:
        reputation = self._keep_stats()
        groups = self._catalogue.groups
        if groups is None:
            groups = Groups(
                specs, auto=auto, hide_members=self._hide, description_limit=self._description_limit
            )
            groups.on_change = self._emit
        groups.specs, groups.auto = dict(specs), auto
        if self._answerer.groups is None:
            caller = GroupCaller(
                self._catalogue,
                self._peers,
                reputation,
                self._chooser,
                failover=self._failover,
                max_output_chars=self._max_output_chars,
                progress=self._answerer.progress_reporter,
            )
            caller.on_failover = self._emit
            self._answerer.groups = caller
        self._catalogue.set_groups(groups)

    def set_aliases(self, aliases: Mapping[str, Any], *, auto_groups: bool | None = None) -> None:
        """Add groups (or replace those of the same names); see the adapter's `set_aliases`."""
        current = self._catalogue.groups
        specs = dict(current.specs) if current is not None else {}
        removed = [
            name for name, members in aliases.items() if isinstance(members, list | tuple) and not members
        ]
        specs.update(parse_aliases({k: v for k, v in aliases.items() if k not in removed}))
        for name in removed:
            specs.pop(name, None)
        auto = (current is not None and current.auto) if auto_groups is None else bool(auto_groups)
        self._group(specs, auto=auto)

    def groups(self) -> tuple[GroupInfo, ...]:
        """Every group now: the host's (published or not, with the reason) and those found alike."""
        current = self._catalogue.groups
        return () if current is None else tuple(group.info() for group in current.groups.values())

    def stats(self) -> StatsReport:
        """The statistics report; UsageError when statistics are not kept."""
        if self._reputation is None:
            raise UsageError("statistics are not kept; create the adapter (or Router) with stats=True")
        return self._reputation.report()

    def feedback(self, call_id: str, ok: bool, weight: float = 1.0) -> ToolKey:
        """Count a judgement of the answer to `call_id`; see the adapter's `feedback`."""
        if self._reputation is None:
            raise UsageError("feedback needs statistics; create the adapter (or Router) with stats=True")
        return self._reputation.feedback(call_id, ok, weight)
