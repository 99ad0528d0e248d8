"""The Router's face for what peers offer besides tools: resources, resource templates and prompts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

import mcp
import mcp_types as mt

from .._errors import ContentError, PeerUnavailableError, UnknownContentError, UnknownPeerError
from ._link import looks_like_connection_failure
from .content._content import ContentKind, ContentStore, RouterPrompt, RouterResource, RouterResourceTemplate

if TYPE_CHECKING:
    from ._member import Member

__all__ = ["ContentFace"]


class ContentFace:
    """Every peer's resources, templates and prompts under public names; reading and getting them.

    A public name is `peer__name` like a tool's (see `docs/peers.md`); a resource's URI stays the
    peer's own, so `read_resource(peer, uri)` reads any URI of a peer (one a template makes
    too), and `read_resource(name)` the resource published under `name`.
    """

    _content: ContentStore
    _members: dict[str, Member]

    def resources(self, peer: str | None = None) -> tuple[RouterResource, ...]:
        """The resources of every connected peer (or of one), every page of each peer's list."""
        return self._content.resources(peer)

    def resource_templates(self, peer: str | None = None) -> tuple[RouterResourceTemplate, ...]:
        """The resource templates of every connected peer (or of one)."""
        return self._content.templates(peer)

    def prompts(self, peer: str | None = None) -> tuple[RouterPrompt, ...]:
        """The prompts of every connected peer (or of one)."""
        return self._content.prompts(peer)

    async def read_resource(self, name_or_peer: str, uri: str | None = None) -> mt.ReadResourceResult:
        """Read a resource: by its public name, or by a peer id and the peer's own URI.

        Example:
            ```python
            await router.read_resource("docs__readme")            # a name from router.resources()
            await router.read_resource("docs", "file:///a/b.md")  # any URI of peer "docs"
            ```

        Raises:
            UnknownContentError: No resource is published under that name.
            UnknownPeerError: No such peer.
            PeerUnavailableError: The peer is not connected now.
            ContentError: The peer answered with an error (its message is kept).
        """
        if uri is None:
            peer, uri = self._resolve("resources", name_or_peer)
        else:
            peer = name_or_peer
        client = self._client(peer, "cannot read its resources")
        return await _asking(peer, lambda: client.read_resource(uri, cache_mode="bypass"))

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> mt.GetPromptResult:
        """Get the prompt published under `name` (from `prompts()`), filled in with `arguments`.

        Raises:
            UnknownContentError: No prompt is published under that name.
            PeerUnavailableError: Its peer is not connected now.
            ContentError: The peer answered with an error (a missing argument, say).
        """
        peer, prompt = self._resolve("prompts", name)
        client = self._client(peer, "cannot get its prompts")
        return await _asking(peer, lambda: client.get_prompt(prompt, dict(arguments or {})))

    def _resolve(self, kind: ContentKind, name: str) -> tuple[str, str]:
        key = self._content.resolve(kind, name)
        if key is None:
            what = "resource" if kind == "resources" else "prompt"
            raise UnknownContentError(
                f"no {what} is published under {name!r}; see router.{kind}() for the names", name=name
            )
        return key.peer, key.tool

    def _client(self, peer: str, what: str) -> mcp.Client:
        member = self._members.get(peer)
        if member is None:
            raise UnknownPeerError(f"no peer named {peer!r} was joined through this Router", peer=peer)
        session = member.link.live(what)
        if not isinstance(session, mcp.Client):
            raise ContentError(f"peer {peer!r} is a session that offers no resources or prompts", peer=peer)
        return session


_R = TypeVar("_R")


async def _asking(peer: str, ask: Callable[[], Awaitable[_R]]) -> _R:
    try:
        return await ask()
    except mcp.MCPError as exc:
        if looks_like_connection_failure(exc):
            raise PeerUnavailableError(
                f"the connection to peer {peer!r} failed: {exc.message}", peer=peer
            ) from exc
        raise ContentError(f"peer {peer!r} answered: {exc.message}", peer=peer) from exc
