"""Public tool names: `peer__tool`, always legal for OpenAI, never ambiguous, stable.

A public name is chosen once, when a tool is registered, and kept until that tool is withdrawn.
The readable form `peer__tool` is used whenever it is legal as it stands and free. A name that
had to be changed to be legal (characters replaced, or cut to 64 characters) always ends in a
short hash of the exact (peer, tool) pair, so it does not depend on what else is registered.
Only a collision (the ambiguous split `a__b`+`c` / `a`+`b__c`, or an adversarial name) makes a
newcomer's name depend on history: the newcomer, never the incumbent, gets a hashed name.

Names are resolved by looking them up in the table; they are never split on `__`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["NAME_PATTERN", "NameTable", "ToolKey", "is_legal_name"]

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name."""

_MAX_LEN = 64
_SEP = "__"
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8
_PEER_BUDGET = 24
"""How much of a long peer id survives in a shortened name; the tool part gets the rest."""


class ToolKey(NamedTuple):
    """One tool of one peer: the peer's id and the tool's name as the peer spells it."""

    peer: str
    tool: str


def is_legal_name(name: str) -> bool:
    """Whether OpenAI accepts `name` as a function name."""
    return NAME_PATTERN.fullmatch(name) is not None


def _digest(key: ToolKey, salt: int) -> str:
    # Length-prefixing the peer makes the digest injective over pairs, whatever they contain.
    material = f"{len(key.peer)}:{key.peer}{key.tool}#{salt}".encode()
    return hashlib.sha256(material).hexdigest()[:_HASH_LEN]


def _sanitise(text: str) -> str:
    return _ILLEGAL.sub("_", text) or "_"


def _hashed_name(key: ToolKey, salt: int) -> str:
    suffix = "_" + _digest(key, salt)
    budget = _MAX_LEN - len(suffix)
    peer = _sanitise(key.peer)
    tool = _sanitise(key.tool)
    if len(peer) + len(_SEP) + len(tool) > budget:
        peer = peer[: max(_PEER_BUDGET, budget - len(_SEP) - len(tool))]
        tool = tool[: max(1, budget - len(_SEP) - len(peer))]
        peer = peer[: budget - len(_SEP) - len(tool)]
    return f"{peer}{_SEP}{tool}{suffix}"


def candidate_names(key: ToolKey) -> Iterator[str]:
    """The names `key` may take, in order of preference; deterministic for a given key."""
    readable = f"{key.peer}{_SEP}{key.tool}"
    if is_legal_name(readable):
        yield readable
    salt = 0
    while True:
        yield _hashed_name(key, salt)
        salt += 1


class NameTable:
    """A two-way map between public names and (peer, tool) keys.

    Example:
        >>> table = NameTable()
        >>> table.assign(ToolKey("weather", "forecast"))
        'weather__forecast'
        >>> table.resolve("weather__forecast")
        ToolKey(peer='weather', tool='forecast')
    """

    __slots__ = ("_by_key", "_by_name")

    def __init__(self) -> None:
        self._by_name: dict[str, ToolKey] = {}
        self._by_key: dict[ToolKey, str] = {}

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def assign(self, key: ToolKey) -> str:
        """Return the public name of `key`, giving it one if it has none yet."""
        name = self._by_key.get(key)
        if name is not None:
            return name
        for name in candidate_names(key):
            if name not in self._by_name:
                self._by_name[name] = key
                self._by_key[key] = name
                return name
        raise AssertionError("unreachable: candidate_names is infinite")

    def release(self, key: ToolKey) -> str | None:
        """Withdraw `key`'s name; return it, or None if `key` had none."""
        name = self._by_key.pop(key, None)
        if name is not None:
            del self._by_name[name]
        return name

    def release_peer(self, peer: str) -> list[str]:
        """Withdraw every name of `peer`; return the names released."""
        keys = [key for key in self._by_key if key.peer == peer]
        return [name for key in keys if (name := self.release(key)) is not None]

    def resolve(self, name: str) -> ToolKey | None:
        """The key published under `name`, or None."""
        return self._by_name.get(name)

    def name_of(self, key: ToolKey) -> str | None:
        """The public name of `key`, or None if it has none."""
        return self._by_key.get(key)

    def items(self) -> Iterable[tuple[str, ToolKey]]:
        """(public name, key) pairs in registration order."""
        return self._by_name.items()
