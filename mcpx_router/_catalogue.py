"""The versioned catalogue of every peer's tools, as OpenAI sees them (synchronous, no I/O).

One idea: one table of what is published (names, conversions, the views and relevance index
built from them) that each change of a peer goes into and each read comes out of.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types as mt

from ._errors import ToolConversionError
from ._naming import NameTable, ToolKey, shown
from ._published import Format, PublishedTool
from ._views import Views
from .groups._groups import GROUPS_KEY, Group, Groups, declared_destructive, destructive, repeat_safe, risk
from .model._budget import IndexPart
from .model._listing import SchemaHash, checked_tool, plain_key
from .model._outbound_rules import check_outbound
from .model._schema import convert_for_openai, describe_tool, validate_chat_tool
from .model._shape import schema_shape
from .model._stemming import DEFAULT_LANGUAGE
from .model._unknown import UnknownNames

__all__ = ["Catalogue", "Format", "PublishedTool"]

logger = logging.getLogger("mcpx_router")


class Catalogue:
    """All peers' tools under their public names, with a version that changes only when they do."""

    def __init__(
        self,
        *,
        description_limit: int | None = None,
        strict: bool | None = False,
        json_strings: bool = False,
        language: str | None = DEFAULT_LANGUAGE,
    ) -> None:
        self._description_limit = description_limit
        self._strict = strict
        self._peer_strict: dict[str, bool | None] = {}
        """Strict mode of the peers that have their own (see `set_strict`)."""
        self._json_strings = json_strings
        self._names = NameTable()
        self._peers: dict[str, dict[str, PublishedTool]] = {}
        self._rejected: dict[str, dict[str, str]] = {}
        self._by_name: dict[str, PublishedTool] = {}
        self._views = Views(language)
        self._reserved: dict[str, set[str]] = {}
        """Per peer, tools whose names are kept for it while its tools are withdrawn."""
        self._unknown = UnknownNames()
        """Why recently withdrawn names went away, and close names for the ones that never were."""
        self.version = 0
        self.groups: Groups | None = None  # groups of equivalent tools (None: none asked for)
        self._shown: Mapping[str, Mapping[str, PublishedTool]] = self._peers
        """What the views show: the peers' tools, or with groups, the groups and the members not hidden."""
        self._warned_version = -1
        self._converted: dict[bytes, list[Any]] = {}
        """Recent conversions of plain schemas by their `plain_key` (bytes that stand for the tree): each
        with what `check_outbound` found in it once published as it is (None until then), and the
        hash of the schema's JSON (so a schema seen before is not encoded again to fingerprint it)."""

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(self._peers)

    def tools_of(self, peer: str) -> tuple[PublishedTool, ...]:
        return tuple(self._peers.get(peer, {}).values())

    def rejected(self, peer: str) -> Mapping[str, str]:
        """Tools of `peer` that could not be published, with the reason for each."""
        return dict(self._rejected.get(peer, {}))

    def lookup(self, name: str) -> PublishedTool | None:
        return self._by_name.get(name)

    def departure(self, name: str) -> str | None:
        """Why `name` is no longer published, if it was until recently."""
        return self._unknown.departure(name)

    def all_tools(self) -> tuple[PublishedTool, ...]:
        return tuple(tool for tools in self._peers.values() for tool in tools.values())

    def view(self, fmt: Format) -> tuple[dict[str, Any], ...]:
        """Every published tool in one OpenAI format: one tuple per catalogue version, never changed
        once returned; a new version rebuilds only the tools of the peer that changed."""
        return self._views.view(fmt, self._shown, self.version)

    def select(self, fmt: Format, query: str, limit: int | None) -> tuple[dict[str, Any], ...]:
        """At most `limit` tools in one format: all of them when they fit, else those most relevant to
        `query` (BM25 over names, descriptions and parameters), in catalogue order."""
        view = self.view(fmt)
        if limit is None or len(view) <= limit:
            return view
        if not query:
            if self._warned_version != self.version:  # once per catalogue version, not per request
                self._warned_version = self.version
                logger.warning(
                    "%d tools are published but a request carries at most %d; sending the first %d. "
                    "Pass relevant_to= to choose by relevance.",
                    len(view),
                    limit,
                    limit,
                )
            return view[:limit]
        return tuple(view[i] for i in sorted(self._views.rank(self._shown, query, self.version)[:limit]))

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every tool offered for `query`, in the views' order (`shown_tools`)."""
        return self._views.scores(self._shown, query, self.version)

    def copies(self) -> list[int] | None:
        """Per tool offered (`shown_tools`), the number of its definition, alike tools sharing
        one; None when no two are alike (`Views.copies`)."""
        return self._views.copies(self._shown, self.version)

    def stale_index(self) -> list[tuple[str, int, Callable[[], IndexPart]]]:
        """The parts of the relevance index that ranking would build now (`Views.stale`)."""
        return self._views.stale(self._shown)

    def keep_index(self, peer: str, stamp: int, part: IndexPart) -> None:
        """Keep a part of the relevance index built elsewhere (`Views.keep`)."""
        self._views.keep(peer, stamp, part)

    def why_unknown(self, name: str) -> str:
        """Why no tool answers to `name`, for the model: it went away, or it never was (close names)."""
        return self._unknown.why(name, self._shown)

    def set_strict(self, peer: str, strict: bool | None) -> None:
        """Strict mode for `peer`'s tools published from now on, instead of the catalogue's own."""
        self._peer_strict[peer] = strict

    def set_peer(
        self, peer: str, tools: Sequence[mt.Tool], held_back: Mapping[str, str] | None = None
    ) -> bool:
        """Publish exactly `tools` for `peer`, keeping the names of tools it already had.

        A tool that cannot be offered is not published, and `rejected(peer)` says why, as it says
        why for each entry of `held_back` (entries of the listing that could not be read at all);
        no tool, whatever it holds, makes this raise. Returns whether the published catalogue changed: a
        tool counts as changed when the JSON of its description, title or input schema does.
        """
        old = self._peers.get(peer)
        before = old or {}
        reserved = self._reserved.pop(peer, set())
        kept: dict[str, mt.Tool] = {}
        rejected: dict[str, str] = dict(held_back or {})
        for tool in tools:
            if not tool.name:
                rejected[""] = "the peer listed a tool with an empty name"
            elif tool.name in kept:
                rejected[tool.name] = "the peer listed this tool name more than once; the first is used"
            else:
                kept[tool.name] = tool
        # Withdraw names of vanished tools first, so a newcomer may take a name that was freed.
        for name in (before.keys() | reserved) - kept.keys():
            released = self._names.release(ToolKey(peer, name))
            if released is not None:
                self._by_name.pop(released, None)
                self._depart(released, f"tool {shown(name)} is no longer offered by peer {shown(peer)}")
        published: dict[str, PublishedTool] = {}
        changed = old is None and bool(kept)
        for name, tool in kept.items():
            previous = before.get(name)
            try:
                entry = self._entry(peer, tool, previous)
            except Exception as exc:
                rejected[name] = self._rejection(peer, name, exc)
                if previous is not None:
                    self._by_name.pop(previous.name, None)
                    self._names.release(previous.key)
                    self._depart(previous.name, f"{rejected[name]} (it changed)")
                    changed = True
                continue
            published[name] = entry
            entry.repeat_safe = repeat_safe(tool)
            entry.output_schema = tool.output_schema
            entry.destructive = destructive(tool)
            entry.declared_destructive = declared_destructive(tool)
            entry.risk = risk(tool)
            if entry is not previous:
                self._by_name[entry.name] = entry
                self._unknown.arrived(entry.name)
                changed = True
        for name in reserved & kept.keys() - published.keys():
            self._names.release(ToolKey(peer, name))
        changed = changed or before.keys() != published.keys() or list(before) != list(published)
        self._peers[peer] = published
        self._rejected[peer] = rejected
        if changed:
            self._bump(peer)
        return changed

    def _entry(self, peer: str, tool: mt.Tool, previous: PublishedTool | None) -> PublishedTool:
        """`previous` if `tool` is the same definition, else a newly published entry for it."""
        plain = plain_key(tool.input_schema)
        slot = None if plain is None else self._converted.get(plain)
        checked, fingerprint, schema_hash = checked_tool(peer, tool, None if slot is None else slot[2])
        if checked is not tool:  # repaired text: its schema's tree is a new one
            tool, plain = checked, plain_key(checked.input_schema)
            slot = None if plain is None else self._converted.get(plain)
        if previous is not None and _same_definition(previous, fingerprint):
            return previous
        key = ToolKey(peer, tool.name)
        had_name = self._names.name_of(key) is not None
        try:
            entry = self._publish(peer, tool, plain, slot, schema_hash)
        except BaseException:
            if not had_name:  # a name given for this attempt only
                self._names.release(key)
            raise
        entry.fingerprint = fingerprint
        return entry

    def _rejection(self, peer: str, name: str, exc: Exception) -> str:
        """The reason a tool is not published, logged; an unexpected failure with its traceback."""
        if isinstance(exc, ToolConversionError):
            logger.warning("%s", exc)
            return str(exc)
        reason = (
            f"tool {shown(name)} of peer {shown(peer)} cannot be offered to OpenAI: converting it "
            f"failed ({type(exc).__name__}: {shown(str(exc))})"
        )
        logger.warning("%s", reason, exc_info=exc)
        return reason

    def remove_peer(self, peer: str, reason: str | None = None) -> bool:
        """Withdraw every tool of `peer` and free its names; return whether the catalogue changed."""
        tools = self._peers.pop(peer, None)
        self._rejected.pop(peer, None)
        self._peer_strict.pop(peer, None)
        for name in self._reserved.pop(peer, set()):
            released = self._names.release(ToolKey(peer, name))
            if released is not None:
                self._depart(released, reason or f"peer {peer!r} left")
        if tools is None:
            return False
        for tool in tools.values():
            self._names.release(tool.key)
            self._by_name.pop(tool.name, None)
            self._depart(tool.name, reason or f"peer {peer!r} left")
        if tools:
            self._bump(peer)
        self._views.forget(peer)
        return bool(tools)

    def withdraw_peer(self, peer: str, reason: str) -> bool:
        """Stop publishing `peer`'s tools but keep their names for it: `set_peer` brings them back.

        Returns whether the published catalogue changed.
        """
        tools = self._peers.get(peer)
        if not tools:
            return False
        self._reserved.setdefault(peer, set()).update(tools)
        for tool in tools.values():
            self._by_name.pop(tool.name, None)
            self._depart(tool.name, reason)
        self._peers[peer] = {}
        self._bump(peer)
        return True

    def _depart(self, name: str, reason: str) -> None:
        self._unknown.depart(name, reason)

    def _publish(
        self,
        peer: str,
        tool: mt.Tool,
        plain: bytes | None = None,
        slot: list[Any] | None = None,
        schema_hash: SchemaHash | None = None,
    ) -> PublishedTool:
        if tool.input_schema is not None and not isinstance(tool.input_schema, Mapping):
            raise ToolConversionError(
                f"tool {shown(tool.name)} of peer {shown(peer)} cannot be offered to OpenAI: its input "
                f"schema is {type(tool.input_schema).__name__}, not a JSON object",
                peer=peer,
                tool=tool.name,
            )
        key = ToolKey(peer, tool.name)
        name = self._names.name_of(key)
        fresh = name is None
        if name is None:
            name = self._names.assign(key)
        # Plain trees with the same `plain_key` (types, values, key order) convert alike, and keep
        # every constraint (a container met twice, in-process only, is not looked for: it loses none).
        if slot is not None:
            survives = True
        else:
            survives, is_plain = schema_shape(tool.input_schema)
            slot = [convert_for_openai(tool.input_schema), None, schema_hash]
            if is_plain and plain is not None and schema_hash is not None:
                if len(self._converted) >= _MAX_CONVERTED:
                    del self._converted[next(iter(self._converted))]
                self._converted[plain] = slot
        parameters, repairs = slot[0]
        # The conversion may stand in for the peer's schema only when it accepts the same arguments.
        strict = self._peer_strict.get(peer, self._strict)
        keep_original = strict is not False or self._json_strings or bool(repairs) or not survives
        entry = PublishedTool(
            name=name,
            peer=peer,
            tool=tool.name,
            description=describe_tool(
                peer, tool.name, tool.description, tool.title, limit=self._description_limit
            ),
            parameters=parameters,
            input_schema=tool.input_schema if keep_original else parameters,
            origin=(tool.description, tool.title),
        )
        try:
            if parameters.get("type") != "object" or not isinstance(parameters.get("properties"), Mapping):
                # No form of this tool can be sent: say what is wrong with its root, before strict
                # mode tries it. (Names are legal by construction; `_expose` checks the rest.)
                validate_chat_tool(
                    {"type": "function", "function": {"name": name, "parameters": parameters}},
                    peer=peer,
                    tool_name=tool.name,
                )
            self._expose(entry, slot)
        except ToolConversionError:
            if fresh:
                self._names.release(key)
            raise
        return entry

    def _expose(self, entry: PublishedTool, slot: list[Any] | None = None) -> None:
        """Apply the JSON-string and strict options to what the model sees of `entry`, then check it
        as it will be sent: a form the API would refuse is never published.

        Raises:
            ToolConversionError: When not even the non-strict form is acceptable, with every reason.
        """
        # The JSON-string and strict converters load with the first tool that asks for them.
        if self._json_strings:
            from .model.arguments._jsonstring import stringify_complex_parameters

            entry.parameters, entry.string_plan = stringify_complex_parameters(entry.parameters)
        strict = self._peer_strict.get(entry.peer, self._strict)
        if strict is not False:
            from .model.strict._strict import StrictOutcome, make_strict

            outcome = entry.strict_outcome = make_strict(entry.parameters)
            refused = () if outcome.schema is None else check_outbound(outcome.schema, strict=True)
            if outcome.schema is not None and not refused:
                entry.parameters, entry.strict = outcome.schema, True
                return
            if refused:  # the strict form breaks a rule: the tool goes out in its non-strict form
                outcome = entry.strict_outcome = StrictOutcome(None, refused, outcome.notes)
        if slot is not None and entry.parameters is slot[0].parameters:  # a shared conversion
            if slot[1] is None:
                slot[1] = check_outbound(entry.parameters, strict=False)
            problems = slot[1]
        else:
            problems = check_outbound(entry.parameters, strict=False)
        if problems:
            raise ToolConversionError(
                f"tool {entry.tool!r} of peer {entry.peer!r} is not offered: OpenAI would refuse its "
                f"parameters, and with them every request ({'; '.join(problems)}). The peer must fix "
                "its input schema.",
                peer=entry.peer,
                tool=entry.tool,
            )
        if entry.strict_outcome is not None:
            level = logging.WARNING if strict else logging.DEBUG
            reasons = "; ".join(entry.strict_outcome.reasons)
            logger.log(level, "%s is offered without strict mode: %s", entry.name, reasons)

    def strict_report(self) -> dict[str, tuple[str, ...]]:
        """For each published tool that could not be made strict, the reasons (strict mode only)."""
        return {
            t.name: t.strict_outcome.reasons
            for t in self.all_tools()
            if t.strict_outcome is not None and t.strict_outcome.schema is None
        }

    def _bump(self, peer: str) -> None:
        self.version += 1
        self._views.changed(peer, self.version)
        if self.groups is not None:
            self._shown = self.groups.follow(self._peers, self.version, self._views, self._depart)
        # A group's change may show or hide other peers' members: with groups, every part is read again.
        self._unknown.changed(self._shown if self.groups is not None else (peer,))

    def set_groups(self, groups: Groups) -> None:
        self.groups = groups  # published from now on, in a new version
        self._bump(GROUPS_KEY)

    def group(self, name: str) -> Group | None:
        return None if self.groups is None else self.groups.published.get(name)

    def shown_tools(self) -> tuple[PublishedTool, ...]:
        """The tools of the views, in their order: `all_tools`, or the groups and visible members."""
        return tuple(tool for tools in self._shown.values() for tool in tools.values())


_MAX_CONVERTED = 1024
"""How many conversions are kept for peers that list the same schemas."""


def _same_definition(published: PublishedTool, fingerprint: bytes) -> bool:
    # The fingerprint covers exactly the JSON the model's view of the tool is made of.
    return published.fingerprint == fingerprint
