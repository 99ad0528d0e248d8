"""One Router peer's life: connect, publish, follow changes, notice failure, reconnect, leave.

Each peer is one task in the Router's task group (`Member.run`). It owns the peer's connection
as an async context manager; cancelling its scope closes the connection and withdraws the peer.

One idea: the life of one peer's connection, as one task with its states (connecting, published,
following changes, probed, lost, waiting to reconnect, gone); each state is a method here because
each hands the connection to the next.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any, Final

import anyio
import anyio.abc
import mcp
import mcp_types as mt
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError, Subscription, SubscriptionLost
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._adapter import OpenAIPeerToolAdapter
from .._session import ToolSession
from .._tracing import connect_span
from ._callbacks import merge_callbacks
from ._events import EventHub, HealthChanged, PeerJoined, PeerLeft, ToolsChanged
from ._failures import cancelled_with_errors, describe_failure, join_error
from ._link import Connection, PeerLink, looks_like_connection_failure
from ._open import open_session
from ._settings import Settings
from ._specs import (
    HttpPeer,
    InProcessPeer,
    ParticipantPeer,
    PeerSpec,
    SessionPeer,
    SsePeer,
    StdioPeer,
    adapter_options,
)
from .content._content import ContentStore
from .content._content_follow import PeerContent
from .content._content_tools import ContentTools
from .wire._answers import Strays

__all__ = ["Member"]

logger = logging.getLogger("mcpx_router")

REFRESH_SHARE: Final = 0.1
"""The most of the process's time re-listing one peer's tools may take when it says they changed
again and again: after a re-listing that took `t` seconds of CPU, the next waits `t / share - t`."""


class Member:
    """The task that keeps one peer connected and its tools published."""

    def __init__(
        self,
        peer: str,
        spec: PeerSpec,
        *,
        adapter: OpenAIPeerToolAdapter,
        hub: EventHub,
        settings: Settings,
        forget: Callable[[Member], None],
        content: ContentStore,
    ) -> None:
        self.peer = peer
        self.spec = spec
        self.scope = anyio.CancelScope()
        self.link = PeerLink(peer, on_lost=self._lost, leaving=lambda: self.scope.cancel_called)
        self.done = anyio.Event()
        self.healthy = False
        self.attempts = 0
        self.last_error: str | None = None
        self.strays = Strays(peer)
        """Lines of a stdio peer that answered nothing, counted per kind over all its connections."""
        self.leave_reason = f"peer {peer!r} left"
        self._adapter = adapter
        self._hub = hub
        self._settings = settings
        self._forget = forget
        self._changed = anyio.Event()
        self._retry = anyio.Event()
        self._lock = anyio.Lock()
        self._joined = False
        self._registered = False
        self._delays: Iterator[float] | None = None
        self._handled: Connection | None = None
        self._handled_delay: float | None = None
        stale = self.mark_changed if settings.resource_tools else None
        self.content = PeerContent(peer, self.link, content, hub, lambda: adapter.version, stale)

    # -- lifetime ---------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[tuple[str, ...]]) -> None:
        """Connect, publish, then keep the peer healthy until cancelled or given up on.

        `task_status.started` receives the public names once the first handshake and tool
        listing are done; if that first connection fails, the error is raised to the joiner.
        """
        try:
            with self.scope:
                while True:
                    connection = self.link.begin()
                    try:
                        await self._connect_and_serve(connection, task_status)
                    except Exception as exc:
                        if not self._joined:
                            raise join_error(self.peer, self.spec, exc) from exc
                        logger.info("peer %r: connection ended", self.peer, exc_info=True)
                        connection.lose(exc)
                    except BaseExceptionGroup as group:
                        # We are being cancelled (leaving) and the transport failed as well.
                        if not cancelled_with_errors(group):
                            raise
                        logger.info("peer %r: connection failed while leaving", self.peer, exc_info=True)
                        break
                    delay = self._lost(connection)
                    if delay is None:
                        break
                    with anyio.move_on_after(delay):
                        await self._retry.wait()
                    self._retry = anyio.Event()
        finally:
            self.link.detach("left")
            self.healthy = False
            with anyio.CancelScope(shield=True):
                self.content.remove()
                if self._registered and self.peer in self._adapter.peers:
                    await self._adapter.remove_peer(self.peer, reason=self.leave_reason)
                if self._joined:
                    self._hub.emit(PeerLeft(self.peer, self._adapter.version, self.leave_reason))
            self._forget(self)
            self.done.set()

    async def _connect_and_serve(
        self, connection: Connection, task_status: anyio.abc.TaskStatus[tuple[str, ...]]
    ) -> None:
        # The deadline covers the handshake and the first listing and is lifted once both are done;
        # it sits outside the session's context manager because that one holds task groups open.
        connecting = connect_span(self.peer, self.spec, reconnect=self._joined, attempt=self.attempts)
        with (
            connecting,
            anyio.CancelScope(deadline=anyio.current_time() + self._settings.connect_timeout) as deadline,
        ):
            async with AsyncExitStack() as stack:
                session = await stack.enter_async_context(
                    open_session(
                        self.spec,
                        peer=self.peer,
                        message_handler=self._on_message,
                        closed=connection.closed,
                        callbacks=merge_callbacks(self.spec.callbacks, self._settings.callbacks),
                        strays=self.strays,
                    )
                )
                watched = isinstance(self.spec, StdioPeer | HttpPeer | SsePeer | ParticipantPeer)
                self.link.attach(
                    session,
                    watched=watched,
                    ends_known=isinstance(self.spec, StdioPeer),
                    losses_known=isinstance(self.spec, HttpPeer | SsePeer | InProcessPeer),
                )
                stack.callback(self._cut_calls_if_leaving)  # runs before the session closes
                # Subscribe before listing: a change after the listing then cannot go unseen.
                subscription = await self._subscribe(stack, session)
                await self.content.load(session, relist_tools=False)
                names = await self._publish(connection)
                deadline.deadline = math.inf
                connecting.connected(len(names))
                if not self._joined:
                    self._joined = True
                    self._hub.emit(PeerJoined(self.peer, self._adapter.version, names))
                    task_status.started(names)
                else:
                    self._hub.emit(
                        HealthChanged(self.peer, self._adapter.version, True, attempt=self.attempts)
                    )
                self.attempts = 0
                await self._serve(connection, subscription)
        if deadline.cancelled_caught:
            raise TimeoutError(
                f"no handshake and tool list within {self._settings.connect_timeout:g} s (connect_timeout)"
            )

    async def _publish(self, connection: Connection) -> tuple[str, ...]:
        async with self._lock:
            if not self._registered:
                session = (
                    ContentTools(self.link, self.content.listing) if self._settings.resource_tools else None
                )
                options = adapter_options(self.spec)
                names = await self._adapter.add_peer(self.peer, session or self.link, **options)
                self._registered = True
            else:
                await self._adapter.refresh_peer(self.peer)
                names = tuple(tool.name for tool in self._adapter.tools_of(self.peer))
            if connection.closed.is_set():
                # Lost while the listing was on its way: take back what it published.
                self._withdraw()
                raise ConnectionError(
                    f"the connection to peer {self.peer!r} was lost while listing its tools"
                )
            self.healthy = True
            return names

    def _lost(self, connection: Connection) -> float | None:
        """Withdraw the tools of a lost connection and say so; return the wait before reconnecting.

        Called as soon as the loss is noticed (by a failed call, or by this task), and again once
        the connection is torn down (then it only returns the same answer). None means: leave.
        """
        if self._handled is connection:
            return self._handled_delay
        if self.scope.cancel_called:
            return None  # leaving: the connection is being closed on purpose, nothing was lost
        self.link.detach("lost")
        self.last_error = describe_failure(connection.error)
        was_healthy, self.healthy = self.healthy, False
        if was_healthy:
            self._withdraw()
        delay: float | None = None
        if isinstance(self.spec, SessionPeer):
            self.leave_reason = f"the session of peer {self.peer!r} failed: {self.last_error}"
        else:
            if was_healthy or self._delays is None:
                self._delays = self._settings.reconnect.delays()
            else:
                self.attempts += 1
            delay = next(self._delays, None)
            if delay is None:
                self.leave_reason = (
                    f"gave up reconnecting to peer {self.peer!r} after {self.attempts} failed "
                    f"attempt(s); last error: {self.last_error}"
                )
        self._handled, self._handled_delay = connection, delay
        self._hub.emit(
            HealthChanged(self.peer, self._adapter.version, False, self.last_error, self.attempts, delay)
        )
        return delay

    def _cut_calls_if_leaving(self) -> None:
        if self.scope.cancel_called:
            self.link.cut_calls()

    def _withdraw(self) -> None:
        self.content.withdraw()
        self._adapter.withdraw_tools(
            self.peer, reason=f"peer {self.peer!r} is unavailable (its connection was lost; reconnecting)"
        )

    # -- while connected --------------------------------------------------------------------

    async def _subscribe(self, stack: AsyncExitStack, session: ToolSession) -> Subscription | None:
        """Open `subscriptions/listen` for tool-list changes on 2026-07-28 connections.

        Its events also reach `_on_message` as `notifications/tools/list_changed`, like the ones
        older protocol versions send unasked.
        """
        if not isinstance(session, mcp.Client) or session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        try:
            return await stack.enter_async_context(session.listen(tools_list_changed=True, **self._filter))
        except (ListenNotSupportedError, mcp.MCPError) as exc:
            if isinstance(exc, mcp.MCPError) and looks_like_connection_failure(exc):
                raise
            # Many servers do not: an expected condition, told once per connection, not a warning.
            logger.debug(
                "peer %r does not offer subscriptions/listen (%s); its changes go unseen", self.peer, exc
            )
            return None

    async def _serve(self, connection: Connection, subscription: Subscription | None) -> None:
        """Return when the connection is gone."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._follow_changes)
            settings = self._settings
            tg.start_soon(self.content.follow, settings.refresh_debounce, settings.connect_timeout)
            if not isinstance(self.spec, InProcessPeer):
                # A stdio transport reports its end itself, but not a server that hangs; HTTP and
                # foreign sessions need asking in any case. An in-process server is this process.
                tg.start_soon(self._check, connection)
            if subscription is not None:
                tg.start_soon(self._listen, connection, subscription)
            await connection.closed.wait()
            self._lost(connection)  # withdraw the tools now, not after the teardown
            tg.cancel_scope.cancel()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self.mark_changed()
        elif not self.content.notice(message) and isinstance(message, Exception):
            logger.debug("peer %r: transport reported %r", self.peer, message)

    @property
    def _filter(self) -> dict[str, Any]:
        return PeerContent.listen_filter(self.link.current.session)

    def retry_now(self) -> None:
        """Reconnect without waiting out the current delay (its topic says the peer is back)."""
        self._retry.set()

    def mark_changed(self) -> None:
        """The peer said its tool list changed: re-list it soon (bursts are coalesced)."""
        self._changed.set()

    async def _follow_changes(self) -> None:
        while True:
            await self._changed.wait()
            if self._settings.refresh_debounce > 0:
                await anyio.sleep(self._settings.refresh_debounce)
            self._changed = anyio.Event()
            started = time.process_time()
            try:
                await self.refresh()
            except Exception as exc:
                logger.warning("peer %r: could not re-list its tools: %s", self.peer, describe_failure(exc))
            # A peer with thousands of tools that says they changed every second is re-listed
            # less often, so that it never takes more than its share of the others' time.
            spent = time.process_time() - started
            await anyio.sleep(min(spent / REFRESH_SHARE - spent, 30.0))

    async def _listen(self, connection: Connection, subscription: Subscription) -> None:
        """Follow the listen stream; when it ends, have the connection checked and listen again."""
        client = self.link.current.session
        assert isinstance(client, mcp.Client)
        await self._follow(subscription)
        delay = 1.0
        while True:
            # The server closed the stream, restarted, or the connection broke: a probe tells.
            connection.suspect.set()
            await anyio.sleep(delay)
            delay = min(delay * 2, 30.0)
            try:
                async with client.listen(tools_list_changed=True, **self._filter) as subscription:
                    self.mark_changed()  # what changed while no stream was open went unseen
                    self.content.mark_changed()
                    delay = 1.0
                    await self._follow(subscription)
            except (ListenNotSupportedError, mcp.MCPError, SubscriptionLost, TimeoutError) as exc:
                logger.info("peer %r: subscriptions/listen failed again (%s)", self.peer, exc)

    async def _follow(self, subscription: Subscription) -> None:
        with contextlib.suppress(SubscriptionLost):
            async for event in subscription:
                # A SessionPeer's notifications go to its owner's handler: the stream is all we see.
                if isinstance(event, ToolsListChanged):
                    self.mark_changed()
                else:
                    self.content.mark_changed()

    async def _check(self, connection: Connection) -> None:
        """Probe the connection when a request failed oddly or timed out, and every `health_interval` s.

        A peer that does not answer the probe within `health_timeout` is hung (a stopped
        process, a deadlocked server): it is treated as lost. A peer busy with long calls
        still answers a `ping`, so it is not.
        """
        interval = self._settings.health_interval
        timeout = self._settings.health_timeout
        while True:
            with anyio.move_on_after(math.inf if interval is None else interval):
                await connection.suspect.wait()
            connection.suspect = anyio.Event()
            try:
                with anyio.move_on_after(timeout) as probe:
                    await self.link.probe()
                if probe.cancelled_caught:
                    hung = f"peer {self.peer!r} did not answer a probe within {timeout:g} s; it seems hung"
                    connection.lose(TimeoutError(hung))
                    return
            except mcp.MCPError as exc:
                if looks_like_connection_failure(exc):
                    connection.lose(exc)
                    return
            except Exception as exc:
                connection.lose(exc)
                return

    async def refresh(self) -> bool:
        """List the peer's tools again and publish what changed; False if it is not connected."""
        async with self._lock:
            if not self.healthy:
                return False
            before = {tool.name: tool for tool in self._adapter.tools_of(self.peer)}
            with anyio.fail_after(self._settings.connect_timeout):
                changed = await self._adapter.refresh_peer(self.peer)
            if not self.healthy:
                # Lost while the answer was on its way: take back what that listing published.
                self._withdraw()
                return False
            if changed:
                after = {tool.name: tool for tool in self._adapter.tools_of(self.peer)}
                self._hub.emit(
                    ToolsChanged(
                        self.peer,
                        self._adapter.version,
                        added=tuple(n for n in after if n not in before),
                        removed=tuple(n for n in before if n not in after),
                        updated=tuple(n for n in after if n in before and after[n] is not before[n]),
                    )
                )
            return changed
