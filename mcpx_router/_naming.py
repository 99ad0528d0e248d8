"""Public tool names: `peer__tool`, always legal for OpenAI, never ambiguous, stable.

A public name is chosen once, when a tool is registered, and kept until that tool is withdrawn.
The readable form `peer__tool` is used whenever it is legal as it stands and free. A name that
had to be changed to be legal (characters replaced, or cut to 64 characters) always ends in a
short hash of the exact (peer, tool) pair, so it does not depend on what else is registered.
Only a collision (the ambiguous split `a__b`+`c` / `a`+`b__c`, or an adversarial name) makes a
newcomer's name depend on history: the newcomer, never the incumbent, gets a hashed name.

Names are resolved by looking them up in the table; they are never split on `__`. Any `str`
works as a peer id or tool name here, lone surrogates included (they are hashed as
`surrogatepass` UTF-8); `check_peer_id` says which ids the adapter accepts.
"""

from __future__ import annotations

import hashlib
import re
import reprlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ._errors import InvalidPeerIdError

__all__ = ["MAX_PEER_ID_LENGTH", "NAME_PATTERN", "NameTable", "ToolKey", "check_peer_id", "is_legal_name"]

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name."""

_MAX_LEN = 64
_SEP = "__"
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8
_PEER_BUDGET = 24
"""How much of a long peer id survives in a shortened name; the tool part gets the rest."""

MAX_PEER_ID_LENGTH = 128
"""The longest peer id accepted, in characters."""
_NOT_IN_IDS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters and surrogates (which no UTF-8 text can carry) have no place in a peer id."""
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 80


class ToolKey(NamedTuple):
    """One tool of one peer: the peer's id and the tool's name as the peer spells it."""

    peer: str
    tool: str


def is_legal_name(name: str) -> bool:
    """Whether OpenAI accepts `name` as a function name."""
    return NAME_PATTERN.fullmatch(name) is not None


def shown(text: object) -> str:
    """`repr(text)`, cut to about 80 characters: for messages that quote what a peer sent."""
    return _SHOWN.repr(text)


def check_peer_id(peer_id: object) -> str:
    """Return `peer_id` if the adapter accepts it as a peer id; raise InvalidPeerIdError if not.

    A peer id is a non-empty `str` of at most `MAX_PEER_ID_LENGTH` characters, with no control
    characters (U+0000-U+001F, U+007F-U+009F) and no surrogate code points. Anything else goes:
    spaces, dots, `__`, right-to-left marks, combining characters, emoji; such ids are made legal
    in public names by replacement and a hash (see `NameTable`).
    """
    if not isinstance(peer_id, str) or not peer_id:
        problem = "must be a non-empty string"
    elif len(peer_id) > MAX_PEER_ID_LENGTH:
        problem = f"is {len(peer_id)} characters long; at most {MAX_PEER_ID_LENGTH} are allowed"
    elif (bad := _NOT_IN_IDS.search(peer_id)) is not None:
        kind = "a surrogate code point" if bad.group() >= "\ud800" else "a control character"
        problem = f"contains {kind} (U+{ord(bad.group()):04X}) at index {bad.start()}"
    else:
        return peer_id
    raise InvalidPeerIdError(
        f"the peer id {shown(peer_id)} {problem}; choose another id",
        peer=peer_id if isinstance(peer_id, str) else shown(peer_id),
    )


def _digest(key: ToolKey, salt: int) -> str:
    # Length-prefixing the peer makes the digest injective over pairs, whatever they contain;
    # `surrogatepass` encodes every str, lone surrogates included, and still injectively.
    material = f"{len(key.peer)}:{key.peer}{key.tool}#{salt}".encode("utf-8", "surrogatepass")
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
