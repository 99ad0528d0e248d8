"""The typed Python API a program sees: the adapter's published tools, grouped by peer.

`SandboxApi` follows the adapter's catalogue (its `version`): each peer is a namespace, each of
its tools a function of it, named by `Identifiers` and kept while the peer and tool exist. The
groups of equivalent tools (peer "") form the `groups` namespace. Names are taken from the
catalogue's entries (peer id, tool name, public name), never by splitting a public name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._identifiers import Identifiers
from ._signatures import ToolFunction

if TYPE_CHECKING:
    from .._adapter import OpenAIPeerToolAdapter
    from .._catalogue import PublishedTool

__all__ = ["SandboxApi"]

GROUPS = ""
"""The peer of a group's function in the catalogue; its namespace is called `groups`."""


class SandboxApi:
    """The namespaces and functions of one adapter's tools, as a program calls them."""

    def __init__(
        self,
        adapter: OpenAIPeerToolAdapter,
        allow: Callable[[PublishedTool], bool] | None = None,
        *,
        destructive_enabled: bool = True,
    ) -> None:
        self._adapter = adapter
        self._allow = allow
        self._destructive_enabled = destructive_enabled
        """False: the tools that declare themselves destructive are shown, but not callable."""
        self._namespaces: Identifiers[str] = Identifiers("peer")
        self._functions: dict[str, Identifiers[str]] = {}
        self._by_namespace: dict[str, dict[str, ToolFunction]] = {}
        self._by_public: dict[str, ToolFunction] = {}
        self._departed: dict[tuple[str, str], ToolFunction] = {}
        """Functions gone since a program may have seen them: a call still goes to the dispatch,
        whose answer says what became of the tool (its peer left, the tool was withdrawn)."""
        self._version = -1

    def _refresh(self) -> None:
        version = self._adapter.version
        if version == self._version:
            return
        tools = [t for t in self._adapter.tools if self._allow is None or self._allow(t)]
        peers = list(dict.fromkeys(t.peer for t in tools))
        self._namespaces.update(peers, ["groups" if p == GROUPS else p for p in peers])
        by_peer: dict[str, list[PublishedTool]] = {}
        for tool in tools:
            by_peer.setdefault(tool.peer, []).append(tool)
        self._functions = {p: self._functions.get(p) or Identifiers("tool") for p in peers}
        previous = self._by_namespace
        self._by_namespace = {}
        self._by_public = {}
        for peer, members in by_peer.items():
            idents = self._functions[peer]
            idents.update([t.tool for t in members])
            namespace = self._namespaces.of(peer)
            functions = self._by_namespace[namespace] = {}
            for tool in members:
                function = ToolFunction.of(
                    tool.name,
                    namespace,
                    idents.of(tool.tool),
                    tool.description,
                    tool.input_schema,
                    tool.output_schema,
                    tool.destructive,
                    self._destructive_enabled or not tool.declared_destructive,
                )
                functions[function.function] = function
                self._by_public[tool.name] = function
        for namespace, functions in previous.items():
            for name, function in functions.items():
                if self._by_namespace.get(namespace, {}).get(name) is None:
                    self._departed[namespace, name] = function
        while len(self._departed) > 1000:
            del self._departed[next(iter(self._departed))]
        self._version = version

    def namespaces(self) -> dict[str, dict[str, ToolFunction]]:
        """Each namespace's functions, by identifier."""
        self._refresh()
        return self._by_namespace

    def namespace(self, ident: str) -> dict[str, ToolFunction] | None:
        self._refresh()
        return self._by_namespace.get(ident)

    def function(self, namespace: str, function: str) -> ToolFunction | None:
        """The function now, or the one that went by that name (None if there never was one)."""
        self._refresh()
        found = self._by_namespace.get(namespace, {}).get(function)
        return found if found is not None else self._departed.get((namespace, function))

    def of_public(self, public_name: str) -> ToolFunction | None:
        """The function of a published tool, by its public name (None if the sandbox has none)."""
        self._refresh()
        return self._by_public.get(public_name)

    async def find(self, query: str, limit: int) -> list[ToolFunction]:
        """The functions most relevant to `query`, ranked as the tool search ranks them."""
        ranked = await self._adapter.rank_tools(query)
        found = []
        for tool, score in ranked:
            if score <= 0:
                break
            function = self.of_public(tool.name)
            if function is not None:
                found.append(function)
                if len(found) >= limit:
                    break
        return found

    def overview(self) -> str:
        """One line per namespace: its name, the number of its functions, a few of them."""
        lines = []
        for namespace, functions in self.namespaces().items():
            names = list(functions)
            shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
            lines.append(f"{namespace} ({len(names)}): {shown}")
        return "\n".join(lines) if lines else "(no tools)"


def describe_found(functions: list[ToolFunction], query: str) -> str:
    """What `find_tools` returns to the program: the functions' signatures with docstrings, as text."""
    if not functions:
        return f"No function matches {query!r}; try other words (the task, not a function name)."
    return "\n\n".join(f.render() for f in functions)
