"""The catalogue's views, kept per peer: a change of one peer costs that peer (pure, no I/O).

A view is a tuple of the tools in one OpenAI format, in catalogue order. It is never changed
once returned: a new version of the catalogue gets a new tuple, in which the entries of the
peers that did not change are the very same dicts as before (copied as references, a slice of
the previous tuple per peer), and only the changed peers' tools are built again. The relevance
index is kept the same way: one tokenised part per peer, re-read only when that peer changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ._published import BUILDERS, Format, PublishedTool
from .model._budget import IndexPart, parameter_text, rank_scores, score_parts, tool_text
from .model._stemming import DEFAULT_LANGUAGE

__all__ = ["Views"]

Peers = Mapping[str, Mapping[str, PublishedTool]]
"""Each peer's published tools, by their names on the peer, in catalogue order."""


@dataclass(frozen=True, slots=True)
class _Built:
    version: int
    tools: tuple[dict[str, Any], ...]
    spans: dict[str, tuple[int, int, int]]
    """Per peer, where its tools are in `tools` (start, stop) and its stamp when they were built."""


class Views:
    """Views in each format and the relevance index, rebuilt only for the peers that changed."""

    def __init__(self, language: str | None = DEFAULT_LANGUAGE) -> None:
        self._language = language
        """The stemmer's language of the relevance index (None: words as they are)."""
        self._stamps: dict[str, int] = {}
        """Per peer, the catalogue version at which its published tools last changed."""
        self._built: dict[Format, _Built] = {}
        self._parts: dict[str, tuple[int, IndexPart]] = {}
        """Per peer, its stamp and its tools tokenised for the relevance index."""
        self._ranked: tuple[int, list[IndexPart]] | None = None
        """The parts of the last version ranked, in catalogue order."""
        self._copies: tuple[int, list[int] | None] | None = None
        """The last version's `copies`."""

    def changed(self, peer: str, version: int) -> None:
        """`peer`'s published tools changed, making the catalogue `version`."""
        self._stamps[peer] = version

    def forget(self, peer: str) -> None:
        """`peer` left: what is kept for it goes (its tools are rebuilt if it comes back)."""
        self._stamps.pop(peer, None)
        self._parts.pop(peer, None)

    def view(self, fmt: Format, peers: Peers, version: int) -> tuple[dict[str, Any], ...]:
        """Every published tool in format `fmt`: the previous tuple while `version` is the same,
        else a new one made of the unchanged peers' entries and the changed peers' rebuilt."""
        built = self._built.get(fmt)
        if built is not None and built.version == version:
            return built.tools
        old_tools: tuple[dict[str, Any], ...] = () if built is None else built.tools
        old_spans = {} if built is None else built.spans
        out, spans = _patched(old_tools, old_spans, peers, self._stamps, BUILDERS[fmt])
        tools_view = tuple(out)
        self._built[fmt] = _Built(version, tools_view, spans)
        return tools_view

    def rank(self, peers: Peers, query: str, version: int) -> list[int]:
        """Indices of every published tool (catalogue order), most relevant to `query` first (by
        BM25; copies of one tool spread apart, `spread_copies`)."""
        return rank_scores(score_parts(self._index(peers, version), query), self.copies(peers, version))[0]

    def copies(self, peers: Peers, version: int) -> list[int] | None:
        """Per published tool (catalogue order), a number naming its definition: the same for the
        tools that several peers list alike (the same name on the peer, description, title and
        input schema), else its own. None when no two tools are alike (the common case)."""
        if self._copies is None or self._copies[0] != version:
            numbers: dict[tuple[str, bytes], int] = {}
            out: list[int] = []
            for tools in peers.values():
                for tool in tools.values():
                    if tool.peer and tool.fingerprint:
                        out.append(numbers.setdefault((tool.tool, tool.fingerprint), len(out)))
                    else:  # a group, or a tool made without a fingerprint: its own
                        out.append(len(out))
            alike = len(set(out)) < len(out)
            self._copies = (version, out if alike else None)
        return self._copies[1]

    def scores(self, peers: Peers, query: str, version: int) -> list[float]:
        """The BM25 score of every published tool (catalogue order) for `query`."""
        return score_parts(self._index(peers, version), query)

    def stale(self, peers: Peers) -> list[tuple[str, int, Callable[[], IndexPart]]]:
        """The peers whose part of the relevance index is missing or out of date: (peer, its
        stamp, a call that builds the part from its tools' texts, read now; pure, for any thread)."""
        out: list[tuple[str, int, Callable[[], IndexPart]]] = []
        for peer, tools in peers.items():
            stamp = self._stamps.get(peer, 0)
            cached = self._parts.get(peer)
            if cached is None or cached[0] != stamp:
                out.append((peer, stamp, self._builder(tools)))
        return out

    def _builder(self, tools: Mapping[str, PublishedTool]) -> Callable[[], IndexPart]:
        """A call that builds the index part of `tools` from their texts, read now (pure)."""
        docs = [tool_text(t.name, t.description, t.parameters) for t in tools.values()]
        extras = [parameter_text(t.parameters) for t in tools.values()]
        return partial(IndexPart, docs, self._language, extras)

    def keep(self, peer: str, stamp: int, part: IndexPart) -> None:
        """Keep `part`, built from `peer`'s tools at `stamp`, unless the peer changed or left since."""
        if peer in self._stamps and self._stamps[peer] == stamp:
            self._parts[peer] = (stamp, part)

    def _index(self, peers: Peers, version: int) -> list[IndexPart]:
        if self._ranked is None or self._ranked[0] != version:
            parts: list[IndexPart] = []
            kept = self._parts
            for peer, tools in peers.items():
                stamp = self._stamps.get(peer, 0)
                cached = kept.get(peer)
                if cached is None or cached[0] != stamp:
                    cached = kept[peer] = (stamp, self._builder(tools)())
                parts.append(cached[1])
            self._ranked = (version, parts)
        return self._ranked[1]


def _patched(
    old: tuple[dict[str, Any], ...],
    old_spans: Mapping[str, tuple[int, int, int]],
    peers: Peers,
    stamps: Mapping[str, int],
    build: Callable[[PublishedTool], dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, tuple[int, int, int]]]:
    """The tools of `peers` as a list: the previous one, `old`, with the entries of the peers that
    changed, joined or left replaced; and where each peer's tools are in it.

    Each entry of the new list is touched once or twice (a copy of `old`, the changes spliced in
    place), not once per slice: on a large heap, touching 10,000 entries is what a view costs.
    """
    edits: list[tuple[int, int, list[dict[str, Any]]]] = []
    spans: dict[str, tuple[int, int, int]] = {}
    pending: list[dict[str, Any]] = []
    position = size = 0
    for peer, tools in peers.items():
        stamp = stamps.get(peer, 0)
        span = old_spans.get(peer)
        if span is not None and span[2] == stamp and span[0] >= position:
            if pending or span[0] != position:  # what lies between: peers that changed or left
                edits.append((position, span[0], pending))
                pending = []
            position = span[1]
            stop = size + span[1] - span[0]
        else:
            built = [build(tool) for tool in tools.values()]
            pending += built
            stop = size + len(built)
        spans[peer] = (size, stop, stamp)
        size = stop
    if pending or position != len(old):
        edits.append((position, len(old), pending))
    if len(edits) == 1 and edits[0][:2] == (0, len(old)):  # nothing kept (the first view)
        return edits[0][2], spans
    out = list(old)
    for start, stop, replacement in reversed(edits):
        out[start:stop] = replacement
    return out, spans
