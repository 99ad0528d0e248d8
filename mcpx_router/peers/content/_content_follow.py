"""One peer's resources and prompts kept current: listed on connect, re-listed when it says they changed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp
import mcp_types as mt

from ..._errors import PeerUnavailableError
from .._events import ContentChanged, EventHub
from .._link import PeerLink, looks_like_connection_failure
from ._content import ContentStore, PeerListing, list_content, offers

__all__ = ["PeerContent"]

logger = logging.getLogger("mcpx_router")

_NOTICES = (mt.ResourceListChangedNotification, mt.PromptListChangedNotification)


class PeerContent:
    """Follows one peer's resources, templates and prompts into the Router's `ContentStore`.

    `tools_stale` is called when what the peer offers changed, so that its `read_resource` and
    `get_prompt` tools (if offered) are listed again with it.
    """

    def __init__(
        self,
        peer: str,
        link: PeerLink,
        store: ContentStore,
        hub: EventHub,
        version: Callable[[], int],
        tools_stale: Callable[[], None] | None = None,
    ) -> None:
        self.peer = peer
        self._link = link
        self._store = store
        self._hub = hub
        self._version = version
        self._tools_stale = tools_stale
        self._changed = anyio.Event()

    def listing(self) -> PeerListing:
        return self._store.listing(self.peer)

    @staticmethod
    def listen_filter(session: object) -> dict[str, Any]:
        """The `subscriptions/listen` options for the lists the peer's server declares changes of."""
        resources, prompts = offers(session)
        return {"resources_list_changed": resources, "prompts_list_changed": prompts}

    async def load(self, session: Any, *, relist_tools: bool = True) -> bool:
        """List what the peer offers and publish it; return whether anything changed.

        A peer that answers a listing with an error keeps what it had (a warning says why);
        a connection failure is raised.
        """
        before = self._store.listing(self.peer)
        try:
            listing = await list_content(session, peer=self.peer)
        except mcp.MCPError as exc:
            if looks_like_connection_failure(exc):
                raise
            logger.warning("peer %r: could not list its resources or prompts: %s", self.peer, exc.message)
            return False
        changes = self._store.publish(self.peer, listing)
        for change in changes:
            self._hub.emit(
                ContentChanged(
                    self.peer, self._version(), change.kind, change.added, change.removed, change.updated
                )
            )
        if relist_tools and self._tools_stale is not None and listing != before:
            self._tools_stale()
        return bool(changes)

    def notice(self, message: object) -> bool:
        """Whether `message` says the resource or prompt list changed (then a re-listing is planned)."""
        if isinstance(message, _NOTICES):
            self.mark_changed()
            return True
        return False

    def mark_changed(self) -> None:
        self._changed.set()

    async def follow(self, debounce: float, listing_limit: float) -> None:
        """Re-list after each change notice (bursts coalesced over `debounce` s; each listing within
        `listing_limit` s), until cancelled."""
        while True:
            await self._changed.wait()
            if debounce > 0:
                await anyio.sleep(debounce)
            self._changed = anyio.Event()
            try:
                with anyio.fail_after(listing_limit):
                    await self.load(self._link.live("cannot list its resources or prompts"))
            except Exception as exc:
                # A peer lost meanwhile is listed again when it is back: nothing to report.
                lost = isinstance(exc, PeerUnavailableError) or looks_like_connection_failure(exc)
                level = logging.DEBUG if lost else logging.WARNING
                logger.log(level, "peer %r: could not re-list its resources or prompts: %s", self.peer, exc)

    def withdraw(self) -> None:
        self._store.withdraw(self.peer)

    def remove(self) -> None:
        self._store.remove(self.peer)
