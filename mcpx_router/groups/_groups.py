"""Groups of equivalent tools, published as one function each, following the peers' tools (pure).

After every change of the catalogue, `Groups.follow` works out each group's members from the
tools published now: the host's groups (`GroupSpec`), then, when asked for, the tools of the
same name whose schemas (as the model sees them, compared as normalised JSON) are the same. A
group whose members' schemas differ is not published: the members keep their `peer__tool`
names, and a `GroupChanged(kind="split")` event says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as mt

from .._naming import ToolKey
from .._published import PublishedTool
from .._views import Views
from ..model._budget import shorten
from ._spec import GroupSpec, auto_group_name, member_keys

__all__ = [
    "GROUPS_KEY",
    "Group",
    "GroupChanged",
    "GroupInfo",
    "Groups",
    "declared_destructive",
    "destructive",
    "repeat_safe",
    "risk",
    "shape_of",
]

GROUPS_KEY = "\x00groups"
"""Where the groups sit among the peers in the views: no peer id holds a control character."""
_PEER_PARAMETERS = ("peer", "preferred_peer", "via_peer")

Peers = Mapping[str, Mapping[str, PublishedTool]]


@dataclass(frozen=True, slots=True)
class GroupChanged:
    """A group was formed, its members changed, it split (its members' schemas differ) or it was
    withdrawn (no member left); `members` are the public names of its members now."""

    group: str
    version: int
    kind: Literal["formed", "changed", "split", "withdrawn"]
    members: tuple[str, ...]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """Where one group stands: its members (published now) and whether the group itself is."""

    name: str
    source: Literal["host", "auto"]
    members: tuple[ToolKey, ...]
    published: bool
    reason: str | None
    """Why it is not published, when it is not."""


@dataclass(eq=False, slots=True)
class Group:
    """One group now: its live members, in order, and the function it is published as (or why not)."""

    name: str
    source: Literal["host", "auto"]
    members: tuple[PublishedTool, ...]
    tool: PublishedTool | None = None
    peer_parameter: str | None = None
    """The optional parameter naming the preferred peer, removed before the peer is called."""
    reason: str | None = None

    def info(self) -> GroupInfo:
        return GroupInfo(
            self.name, self.source, tuple(m.key for m in self.members), self.tool is not None, self.reason
        )


def repeat_safe(tool: mt.Tool) -> bool:
    """Whether the tool declares that running a call twice does no harm (read-only or idempotent)."""
    hints = tool.annotations
    return hints is not None and bool(hints.read_only_hint or hints.idempotent_hint)


def destructive(tool: mt.Tool) -> bool:
    """Whether the tool may change things beyond repair, as MCP's hints default: unless it says it
    only reads, or that it is not destructive."""
    hints = tool.annotations
    if hints is None:
        return True
    return not hints.read_only_hint and hints.destructive_hint is not False


def declared_destructive(tool: mt.Tool) -> bool:
    """Whether the tool declares itself destructive (`destructiveHint: true`, not read-only)."""
    hints = tool.annotations
    return hints is not None and hints.destructive_hint is True and not hints.read_only_hint


def risk(tool: mt.Tool) -> int:
    """`PublishedTool.risk` from the tool's annotations: 0 read-only, 1 additive, 2 may destroy."""
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        return 0
    return 1 if hints is not None and hints.destructive_hint is False else 2


def shape_of(tool: PublishedTool) -> str:
    """The tool's schema as the model sees it, as normalised JSON (key order does not count)."""
    text = json.dumps(tool.parameters, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return ("s" if tool.strict else "n") + text


class Groups:
    """The groups of one catalogue: the host's and, with `auto`, those of tools alike."""

    def __init__(
        self,
        specs: Mapping[str, GroupSpec],
        *,
        auto: bool = False,
        hide_members: bool = False,
        description_limit: int | None = 1024,
    ) -> None:
        self.specs = dict(specs)
        self.auto = auto
        self.hide_members = hide_members
        self._limit = description_limit
        self.groups: dict[str, Group] = {}
        self.published: dict[str, Group] = {}
        self._auto_names: dict[str, str] = {}
        """Each auto group's name by the tool name it stands for, so that it keeps its name."""
        self._shapes: dict[int, tuple[PublishedTool, str]] = {}
        self._hidden: dict[str, frozenset[str]] = {}
        self.on_change: Callable[[GroupChanged], object] | None = None

    def follow(self, peers: Peers, version: int, views: Views, depart: Callable[[str, str], None]) -> Peers:
        """Work the groups out again for `peers`; return what the views show (groups first)."""
        old = self.groups
        new = self._compute(peers)
        events: list[GroupChanged] = []
        tools_changed = False
        for name, group in new.items():
            before = old.get(name)
            if group.tool is not None and before is not None and before.tool is not None:
                if before.members == group.members:
                    group.tool, group.peer_parameter = before.tool, before.peer_parameter
                    continue
            if group.tool is not None:
                group.tool, group.peer_parameter = self._publish(group)
                tools_changed = True
                kind: Literal["formed", "changed"] = (
                    "formed" if before is None or before.tool is None else "changed"
                )
                events.append(GroupChanged(name, version, kind, _names(group), None))
            elif before is not None and before.tool is not None:
                tools_changed = True
                split = len(group.members) > 1
                events.append(
                    GroupChanged(
                        name, version, "split" if split else "withdrawn", _names(group), group.reason
                    )
                )
                depart(name, f"the group {name!r} is not offered now: {group.reason}")
        for name, before in old.items():
            if name not in new and before.tool is not None:
                tools_changed = True
                reason = "fewer than two peers offer the tool now"
                events.append(GroupChanged(name, version, "withdrawn", (), reason))
                depart(name, f"the group {name!r} is not offered now: {reason}")
        self.groups = new
        self.published = {name: g for name, g in new.items() if g.tool is not None}
        if tools_changed:
            views.changed(GROUPS_KEY, version)
        shown = self._shown(peers, version, views)
        self._shapes = {key: entry for key, entry in self._shapes.items() if entry[0] in _alive(peers)}
        if self.on_change is not None:
            for event in events:
                self.on_change(event)
        return shown

    def _shape(self, tool: PublishedTool) -> str:
        cached = self._shapes.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        shape = shape_of(tool)
        self._shapes[id(tool)] = (tool, shape)
        return shape

    def _compute(self, peers: Peers) -> dict[str, Group]:
        out: dict[str, Group] = {}
        claimed: set[ToolKey] = set()
        for spec in self.specs.values():
            members: dict[ToolKey, PublishedTool] = {}
            for member in spec.members:
                for key in member_keys(member, peers):
                    tool = peers.get(key.peer, {}).get(key.tool)
                    if tool is not None and key not in claimed:
                        members.setdefault(key, tool)
            claimed.update(members)
            out[spec.name] = self._group(spec.name, "host", tuple(members.values()))
        if not self.auto:
            return out
        by_name: dict[str, list[PublishedTool]] = {}
        for listed in peers.values():
            for entry in listed.values():
                if entry.key not in claimed:
                    by_name.setdefault(entry.tool, []).append(entry)
        taken = set(self.specs) | set(self._auto_names.values())
        for tool_name, alike in by_name.items():
            if len(alike) < 2:
                continue
            classes: dict[str, list[PublishedTool]] = {}
            for entry in alike:
                classes.setdefault(self._shape(entry), []).append(entry)
            best = max(classes.values(), key=len)
            name = self._auto_names.get(tool_name)
            if name is None or name in self.specs:
                name = self._auto_names[tool_name] = auto_group_name(tool_name, taken)
                taken.add(name)
            if len(best) >= 2:
                out[name] = Group(name, "auto", tuple(best))
                out[name].tool = _PENDING
            elif name in self.groups:  # it was a group: now the schemas differ
                out[name] = self._group(name, "auto", tuple(alike))
        return out

    def _group(self, name: str, source: Literal["host", "auto"], members: tuple[PublishedTool, ...]) -> Group:
        group = Group(name, source, members)
        if not members:
            group.reason = "none of its members is offered now"
            return group
        shapes: dict[str, list[PublishedTool]] = {}
        for member in members:
            shapes.setdefault(self._shape(member), []).append(member)
        if len(shapes) > 1:
            kinds = "; ".join(" = ".join(f"{m.peer}/{m.tool}" for m in alike) for alike in shapes.values())
            group.reason = f"the input schemas of its members differ ({kinds} alike)"
            return group
        group.tool = _PENDING
        return group

    def _publish(self, group: Group) -> tuple[PublishedTool, str]:
        first = group.members[0]
        providers = list(dict.fromkeys(m.peer for m in group.members))
        description, title = first.origin
        text = (description or "").strip() or (title or "").strip() or f"Call the tool {first.tool!r}."
        suffix = f" (offered by {', '.join(providers)})"
        parameters, parameter = _with_peer_parameter(first.parameters, providers, strict=first.strict)
        tool = PublishedTool(
            name=group.name,
            peer="",
            tool=group.name,
            description=shorten(text, self._limit, suffix),
            parameters=parameters,
            input_schema=parameters,
            strict=first.strict,
            origin=first.origin,
            fingerprint=first.fingerprint,
            risk=max(member.risk for member in group.members),
        )
        # What code mode reads of it: the members' output schema where they all declare the same,
        # and destructive when any member is.
        outputs = [m.output_schema for m in group.members]
        tool.output_schema = outputs[0] if all(o == outputs[0] for o in outputs) else None
        tool.destructive = any(m.destructive for m in group.members)
        tool.declared_destructive = any(m.declared_destructive for m in group.members)
        return tool, parameter

    def _shown(self, peers: Peers, version: int, views: Views) -> Peers:
        hidden: dict[str, set[str]] = {}
        if self.hide_members:
            for group in self.published.values():
                for member in group.members:
                    hidden.setdefault(member.peer, set()).add(member.tool)
        for peer in self._hidden.keys() | hidden.keys():
            if self._hidden.get(peer, frozenset()) != hidden.get(peer, set()):
                views.changed(peer, version)
        self._hidden = {peer: frozenset(tools) for peer, tools in hidden.items()}
        shown: dict[str, Mapping[str, PublishedTool]] = {
            GROUPS_KEY: {name: g.tool for name, g in self.published.items() if g.tool is not None}
        }
        for peer, tools in peers.items():
            gone = self._hidden.get(peer)
            shown[peer] = tools if not gone else {n: t for n, t in tools.items() if n not in gone}
        return shown


_PENDING = PublishedTool(name="", peer="", tool="", description="", parameters={}, input_schema={})
"""Marks a group to be published; replaced by its function in `follow`."""


def _names(group: Group) -> tuple[str, ...]:
    return tuple(member.name for member in group.members)


def _alive(peers: Peers) -> set[PublishedTool]:
    return {tool for tools in peers.values() for tool in tools.values()}


def _with_peer_parameter(
    parameters: Mapping[str, Any], providers: list[str], *, strict: bool
) -> tuple[dict[str, Any], str]:
    """A new schema: `parameters` plus an optional string naming the preferred peer (never mutated)."""
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    name = next((p for p in _PEER_PARAMETERS if p not in properties), None)
    counter = 2
    while name is None or name in properties:
        name, counter = f"peer_{counter}", counter + 1
    choice: dict[str, Any] = {
        "type": "string",
        "enum": list(providers),
        "description": "The peer to prefer for this call (optional; by default the router chooses).",
    }
    out = dict(parameters)
    if strict:  # strict mode: every property is required, an optional one takes null
        choice = {**choice, "type": ["string", "null"], "enum": [*providers, None]}
        out["required"] = [*(parameters.get("required") or ()), name]
    out["properties"] = {**properties, name: choice}
    return out, name
