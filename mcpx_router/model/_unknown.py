"""What the model is told of a name no tool answers to: why it went away, or the close names (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model._search_hints import meaningful
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
        self._tools: dict[str, dict[str, Any]] = {}
        """Per part the suggester read, its tools by public name (their words and risk)."""
        self._by_name: dict[str, Any] = {}
        """The same tools by public name, all parts together."""

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
        if self._stale:
            for part in self._stale:
                self._set_tools(part, {t.name: t for t in shown.get(part, {}).values()})
            self._suggester.set_parts(
                (part, [(t.name, t.tool) for t in self._tools[part].values()]) for part in self._stale
            )
            self._stale.clear()
            self._suggester.order(shown)
            for gone in self._tools.keys() - shown.keys():
                self._set_tools(gone, None)
        close = [repr(c) for c in self._close(name)]
        if close:
            listed = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]
            message += f" Did you mean {listed}?"
        return message + " Call only the functions offered in this conversation."

    def _close(self, name: str) -> list[str]:
        """The suggester's names, those only spelt alike kept when their words say what `name`
        says; a tool that may destroy after the others."""
        if self._suggester is None:
            return []
        names, evident = self._suggester.graded(name)
        tools = [tool for n in names if (tool := self._tool(n)) is not None]
        if len(tools) != len(names):  # a name the suggester holds is always a tool here
            return names if evident else []
        if evident:
            return [tool.name for tool in sorted(tools, key=lambda t: t.risk >= 2)]
        return [tool.name for tool in meaningful(name, tools, misspelt=True)]

    def _tool(self, name: str) -> Any:
        return self._by_name.get(name)

    def _set_tools(self, part: str, tools: dict[str, Any] | None) -> None:
        """Make `part` hold `tools` (None: forget the part)."""
        for name, tool in self._tools.pop(part, {}).items():
            if self._by_name.get(name) is tool:  # not a name another part holds now
                del self._by_name[name]
        if tools is not None:
            self._tools[part] = tools
            self._by_name.update(tools)
