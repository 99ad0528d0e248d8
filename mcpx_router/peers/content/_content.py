"""Resources, resource templates and prompts of every peer, under peer-prefixed public names.

Pure bookkeeping and listing: `list_content` reads what one peer offers (every page of each
list, for the capabilities it declares), `ContentStore` holds every peer's under public names
and says what changed. A public name is made like a tool's (`peer__name`, hashed when that is
not a legal OpenAI name or is taken), from the item's own name; it is unique among the items
of its kind and kept while the item is offered. Resources are keyed by (peer, URI), templates
by (peer, URI template) and prompts by (peer, name): two resources of one peer with the same
name get two public names.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import mcp
import mcp_types as mt

from ..._errors import PeerUnavailableError
from ..._naming import ToolKey, candidate_names
from ..._session import MAX_PAGES

__all__ = [
    "ContentKind",
    "ContentStore",
    "PeerListing",
    "RouterPrompt",
    "RouterResource",
    "RouterResourceTemplate",
    "list_content",
]

logger = logging.getLogger("mcpx_router")

ContentKind = Literal["resources", "resource_templates", "prompts"]


@dataclass(frozen=True, slots=True)
class RouterResource:
    """A resource of a peer: `name` is its public name, `uri` the peer's own URI."""

    name: str
    peer: str
    uri: str
    resource: mt.Resource


@dataclass(frozen=True, slots=True)
class RouterResourceTemplate:
    """A resource template of a peer; read what it names with `read_resource(peer, uri)`."""

    name: str
    peer: str
    uri_template: str
    template: mt.ResourceTemplate


@dataclass(frozen=True, slots=True)
class RouterPrompt:
    """A prompt of a peer: `name` is its public name, `prompt.name` the peer's own."""

    name: str
    peer: str
    prompt: mt.Prompt


@dataclass(frozen=True, slots=True)
class PeerListing:
    """What one peer offers besides tools."""

    resources: tuple[mt.Resource, ...] = ()
    templates: tuple[mt.ResourceTemplate, ...] = ()
    prompts: tuple[mt.Prompt, ...] = ()

    def keyed(self, kind: ContentKind) -> dict[str, tuple[str, Any]]:
        """The items of `kind` by their key on the peer, with the name their public name comes from.

        A key listed twice keeps its first entry, as a peer that repeats a URI means one resource.
        """
        items: Iterable[tuple[str, str, Any]]
        if kind == "resources":
            items = ((r.uri, r.name, r) for r in self.resources)
        elif kind == "resource_templates":
            items = ((t.uri_template, t.name, t) for t in self.templates)
        else:
            items = ((p.name, p.name, p) for p in self.prompts)
        keyed: dict[str, tuple[str, Any]] = {}
        for key, label, item in items:
            keyed.setdefault(key, (label, item))
        return keyed


# -- listing one peer ---------------------------------------------------------------------------

_P = TypeVar("_P")


async def all_pages(
    fetch: Callable[[str | None], Awaitable[_P]],
    items: Callable[[_P], Sequence[Any]],
    *,
    peer: str,
    what: str,
) -> list[Any]:
    """Every item of a paginated list, following `nextCursor`; a cursor seen twice is an error."""
    collected: list[Any] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        collected.extend(items(page))
        cursor = getattr(page, "next_cursor", None)
        if cursor is None:
            return collected
        if cursor in seen:
            raise PeerUnavailableError(
                f"peer {peer!r} returned the {what} cursor {cursor!r} twice; its pagination loops", peer=peer
            )
        seen.add(cursor)
    raise PeerUnavailableError(f"peer {peer!r} listed more than {MAX_PAGES} pages of {what}", peer=peer)


def offers(session: object) -> tuple[bool, bool]:
    """Whether the peer's server may have (resources, prompts): what it declared.

    A connection pinned to a protocol version without asking the server (`mode="2026-07-28"`)
    knows no capabilities: then both are asked for, and "method not found" means none.
    Sessions that are not `mcp.Client` (a plain `ToolSession`) offer neither.
    """
    if not isinstance(session, mcp.Client):
        return False, False
    declared = session.server_capabilities
    if declared == mt.ServerCapabilities() and session.server_info is None:
        return True, True
    return declared.resources is not None, declared.prompts is not None


async def _unless_missing(listing: Awaitable[list[Any]]) -> list[Any]:
    try:
        return await listing
    except mcp.MCPError as exc:
        if exc.code != mt.METHOD_NOT_FOUND:
            raise
        return []


async def list_content(session: Any, *, peer: str) -> PeerListing:
    """Every resource, template and prompt the peer offers, each list read to its last page.

    Only the lists of the capabilities the server declares are asked for (see `offers`); a
    list answered with "method not found" is empty (templates are optional for a server with
    resources).
    """
    resources_offered, prompts_offered = offers(session)
    resources: list[Any] = []
    templates: list[Any] = []
    prompts: list[Any] = []
    if resources_offered:
        client: mcp.Client = session
        resources = await _unless_missing(
            all_pages(
                lambda c: client.list_resources(cursor=c, cache_mode="refresh"),
                lambda p: p.resources,
                peer=peer,
                what="resources/list",
            )
        )
        templates = await _unless_missing(
            all_pages(
                lambda c: client.list_resource_templates(cursor=c, cache_mode="refresh"),
                lambda p: p.resource_templates,
                peer=peer,
                what="resources/templates/list",
            )
        )
    if prompts_offered:
        prompter: mcp.Client = session
        prompts = await _unless_missing(
            all_pages(
                lambda c: prompter.list_prompts(cursor=c, cache_mode="refresh"),
                lambda p: p.prompts,
                peer=peer,
                what="prompts/list",
            )
        )
    return PeerListing(tuple(resources), tuple(templates), tuple(prompts))


# -- every peer's, under public names ------------------------------------------------------------


@dataclass
class _Names:
    """Public names of one kind: (peer, key on the peer) <-> name, injective, kept while offered."""

    by_name: dict[str, ToolKey] = field(default_factory=dict)
    by_key: dict[ToolKey, str] = field(default_factory=dict)

    def assign(self, key: ToolKey, label: str) -> str:
        name = self.by_key.get(key)
        if name is not None:
            return name
        for name in candidate_names(ToolKey(key.peer, label)):
            if name not in self.by_name:
                self.by_name[name] = key
                self.by_key[key] = name
                return name
        raise AssertionError("unreachable: candidate_names is infinite")

    def release(self, key: ToolKey) -> None:
        name = self.by_key.pop(key, None)
        if name is not None:
            del self.by_name[name]


@dataclass(frozen=True, slots=True)
class Change:
    """What one listing changed in one kind, by public name."""

    kind: ContentKind
    added: tuple[str, ...]
    removed: tuple[str, ...]
    updated: tuple[str, ...]


_KINDS: tuple[ContentKind, ...] = ("resources", "resource_templates", "prompts")


class ContentStore:
    """Every peer's resources, templates and prompts, under public names.

    A peer being reconnected is withdrawn (it offers nothing for now) but keeps its names; a
    peer that leaves is removed and its names are freed.
    """

    def __init__(self) -> None:
        self._listings: dict[str, PeerListing] = {}
        self._hidden: set[str] = set()
        self._names: dict[ContentKind, _Names] = {kind: _Names() for kind in _KINDS}

    def publish(self, peer: str, listing: PeerListing) -> list[Change]:
        """Take a peer's new listing; return what changed, kind by kind (nothing for a returning peer)."""
        before = self._listings.get(peer, PeerListing())
        returning = peer in self._hidden
        self._hidden.discard(peer)
        changes: list[Change] = []
        for kind in _KINDS:
            old, new = before.keyed(kind), listing.keyed(kind)
            names = self._names[kind]
            added: list[str] = []
            updated: list[str] = []
            # New names first, then the gone ones are freed: a newcomer never takes over, in the
            # same listing, a name that was just withdrawn (it would look unchanged).
            for key, (label, item) in new.items():
                name = names.assign(ToolKey(peer, key), label)
                if key not in old:
                    added.append(name)
                elif old[key][1] != item:
                    updated.append(name)
            removed = tuple(
                gone
                for key in old
                if key not in new and (gone := names.by_key.get(ToolKey(peer, key))) is not None
            )
            for key in old:
                if key not in new:
                    names.release(ToolKey(peer, key))
            if (added or removed or updated) and peer in self._listings and not returning:
                changes.append(Change(kind, tuple(added), removed, tuple(updated)))
        self._listings[peer] = listing
        return changes

    def withdraw(self, peer: str) -> None:
        """Hide a peer's items while it is reconnected; its names stay reserved."""
        if peer in self._listings:
            self._hidden.add(peer)

    def remove(self, peer: str) -> None:
        """Forget a peer that left, freeing its names."""
        listing = self._listings.pop(peer, None)
        self._hidden.discard(peer)
        if listing is None:
            return
        for kind in _KINDS:
            for key in listing.keyed(kind):
                self._names[kind].release(ToolKey(peer, key))

    def listing(self, peer: str) -> PeerListing:
        """What a connected peer offers (nothing while it is withdrawn or unknown)."""
        if peer in self._hidden:
            return PeerListing()
        return self._listings.get(peer, PeerListing())

    def resolve(self, kind: ContentKind, name: str) -> ToolKey | None:
        """(peer, key on the peer) of a public name, if a connected peer offers it."""
        key = self._names[kind].by_name.get(name)
        if key is None or key.peer in self._hidden:
            return None
        return key

    def name_of(self, kind: ContentKind, peer: str, key: str) -> str | None:
        return self._names[kind].by_key.get(ToolKey(peer, key))

    def resources(self, peer: str | None = None) -> tuple[RouterResource, ...]:
        return tuple(
            RouterResource(self._names["resources"].by_key[ToolKey(p, uri)], p, uri, item)
            for p in self._visible(peer)
            for uri, (_label, item) in self._listings[p].keyed("resources").items()
        )

    def templates(self, peer: str | None = None) -> tuple[RouterResourceTemplate, ...]:
        return tuple(
            RouterResourceTemplate(self._names["resource_templates"].by_key[ToolKey(p, key)], p, key, item)
            for p in self._visible(peer)
            for key, (_label, item) in self._listings[p].keyed("resource_templates").items()
        )

    def prompts(self, peer: str | None = None) -> tuple[RouterPrompt, ...]:
        return tuple(
            RouterPrompt(self._names["prompts"].by_key[ToolKey(p, key)], p, item)
            for p in self._visible(peer)
            for key, (_label, item) in self._listings[p].keyed("prompts").items()
        )

    def _visible(self, peer: str | None) -> list[str]:
        peers = list(self._listings) if peer is None else [peer] if peer in self._listings else []
        return [p for p in peers if p not in self._hidden]
