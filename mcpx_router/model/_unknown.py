"""What the model is told of a name no tool answers to: why it went away, or the close names (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._suggest import NameSuggester

__all__ = ["UnknownNames"]

_MAX_DEPARTED = 4096
"""How many withdrawn names are remembered, to tell the model why a call to one failed."""


class UnknownNames:
    """The reasons recently withdrawn names went away, and a suggester of close names kept per part.

    The parts are what the tool lists show (`Catalogue._shown`): one per peer, and the groups. The
    suggester is made at the first unknown name, then only the parts that changed are read again.
    """

    def __init__(self) -> None:
        self._departed: dict[str, str] = {}
        self._suggester: NameSuggester | None = None
        self._stale: dict[str, None] = {}
        """Parts whose names changed since the suggester read them."""

    def depart(self, name: str, reason: str) -> None:
        self._departed.pop(name, None)
        self._departed[name] = reason
        if len(self._departed) > _MAX_DEPARTED:
            del self._departed[next(iter(self._departed))]

    def arrived(self, name: str) -> None:
        self._departed.pop(name, None)

    def departure(self, name: str) -> str | None:
        """Why `name` is no longer published, if it was until recently."""
        return self._departed.get(name)

    def changed(self, parts: Iterable[str]) -> None:
        if self._suggester is not None:
            self._stale.update(dict.fromkeys(parts))

    def why(self, name: str, shown: Mapping[str, Mapping[str, Any]]) -> str:
        """Why no tool answers to `name`, for the model: it went away, or it never was (close names)."""
        departed = self._departed.get(name)
        quoted = repr(name) if len(name) <= 80 else f"{name[:64]!r}… ({len(name)} characters)"
        if departed is not None:
            return f"{quoted} is not available now: {departed}. Call only the functions offered now."
        message = f"there is no tool named {quoted}."
        if self._suggester is None:
            self._suggester, self._stale = NameSuggester(), dict.fromkeys(shown)
        if self._stale:  # a change of descriptions or schemas only leaves the names as they are
            self._suggester.set_parts(
                (part, [(t.name, t.tool) for t in shown.get(part, {}).values()]) for part in self._stale
            )
            self._stale.clear()
            self._suggester.order(shown)
        close = [repr(c) for c in self._suggester.suggest(name)]
        if close:
            listed = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]
            message += f" Did you mean {listed}?"
        return message + " Call only the functions offered in this conversation."
