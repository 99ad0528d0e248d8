"""Groups of equivalent tools as the host names them: `{"search": ["web/search", "docs/search"]}` (pure).

A group's public name is legal for OpenAI and never contains `__`, which every `peer__tool`
name holds (readable or hashed, see `_naming`): the two kinds of names can never meet.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError
from .._naming import ToolKey, is_legal_name, shown

__all__ = ["GroupSpec", "auto_group_name", "check_group_name", "member_keys", "parse_aliases"]

_MAX_LEN = 64
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]")
_RUNS = re.compile(r"_{2,}")


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """A group the host asked for: its public name and its members, `"peer/tool"` or `ToolKey`s."""

    name: str
    members: tuple[str | ToolKey, ...]


def check_group_name(name: object) -> str:
    """Return `name` if it may name a group; raise UsageError saying why not."""
    if not isinstance(name, str) or not is_legal_name(name):
        problem = "must be 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'"
    elif "__" in name:
        problem = "contains '__', which only peer__tool names hold"
    else:
        return name
    raise UsageError(f"the group name {shown(name)} {problem}; choose another name for the group")


def auto_group_name(tool: str, taken: Container[str]) -> str:
    """The name of the group of the tools named `tool`: that name made legal, without `__`, and free.

    The tool's name itself when it is such a name, else the name made legal (characters outside
    `[a-zA-Z0-9_-]` replaced by `_`, runs of `_` collapsed, cut to 64 characters): `find.docs`
    groups as `find_docs`. Only a name that is taken ends in `_` and eight hex digits of the
    tool's name (docs/many-peers.md says so; a test holds the two together).
    """
    plain = _RUNS.sub("_", _ILLEGAL.sub("_", tool))[:_MAX_LEN]
    if plain and plain not in taken:
        return plain
    salt = 0
    while True:
        digest = hashlib.sha256(f"{tool}#{salt}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = plain[: _MAX_LEN - 9].rstrip("_")
        name = f"{stem}_{digest}" if stem else f"g_{digest}"
        if name not in taken:
            return name
        salt += 1


def _member(value: object, group: str) -> str | ToolKey:
    if isinstance(value, ToolKey):
        return value
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) and v for v in value):
        return ToolKey(value[0], value[1])
    if isinstance(value, str) and "/" in value.strip("/"):
        return value
    raise UsageError(
        f"group {group!r}: the member {shown(value)} is not 'peer/tool' (or a (peer, tool) pair); "
        "write it as the peer's id, '/', and the tool's name as the peer lists it"
    )


def parse_aliases(aliases: Mapping[str, Any] | None) -> dict[str, GroupSpec]:
    """Groups from `{name: ["peer/tool", ...]}`; a value may also be `{"members": [...], ...}`
    (a suggestion with its score) or an object with a `members` attribute.

    Raises:
        UsageError: A name or member is unusable (the message says which, and what to write).
    """
    if aliases is None:
        return {}
    if not isinstance(aliases, Mapping):
        raise UsageError(
            f'aliases must map group names to members, as {{"search": ["web/search"]}}; not {aliases!r}'
        )
    groups: dict[str, GroupSpec] = {}
    for name, value in aliases.items():
        check_group_name(name)
        members: Any = value
        if isinstance(value, Mapping):
            members = value.get("members")
        elif not isinstance(value, list | tuple):
            members = getattr(value, "members", None)
        if isinstance(members, str) or not isinstance(members, Iterable) or isinstance(members, Mapping):
            raise UsageError(f"group {name!r}: its members must be a list of 'peer/tool', not {shown(value)}")
        parsed = tuple(dict.fromkeys(_member(member, name) for member in members))
        if not parsed:
            raise UsageError(f"group {name!r} has no members; give it at least one 'peer/tool'")
        groups[name] = GroupSpec(name, parsed)
    return groups


def member_keys(member: str | ToolKey, peers: Iterable[str]) -> list[ToolKey]:
    """The (peer, tool) pairs a member names: a `ToolKey` itself, or each split of `"peer/tool"`
    at a `/` whose left side is a peer's id (peer ids and tool names may hold `/` themselves)."""
    if isinstance(member, ToolKey):
        return [member]
    return [
        ToolKey(peer, member[len(peer) + 1 :])
        for peer in peers
        if len(member) > len(peer) + 1 and member.startswith(peer) and member[len(peer)] == "/"
    ]
