"""A topic as a source of peers: its participants join and leave a Router as their presence says.

The welcome's participant list and every presence `join` start a handshake (a Router member with
a `ParticipantPeer` spec); a `leave` makes the peer leave. When the topic connection is lost the
members lose their sessions (tools withdrawn, names kept); once the topic client has reconnected,
its new welcome reconciles the roster (`leave` for those gone meanwhile, `join` for newcomers) and
the members of those still present handshake again at once, taking their names back.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream

from .._backoff import Reconnect
from .._errors import DuplicatePeerError, PeerUnavailableError
from ..mcpx._errors import MCPxConnectionError
from ..mcpx._topic_options import ConnectionOptions
from ._member import Member
from ._settings import Settings
from ._specs import ParticipantPeer, PeerSpec

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    from ..mcpx.client._participant import ParticipantServer
    from ..mcpx.client._topic import TopicClient
    from ..mcpx.client._topic_events import PresenceEvent, TopicEvent

__all__ = ["TopicMembership"]

logger = logging.getLogger("mcpx_router")

_EVENT_BUFFER = 100_000


@dataclasses.dataclass(frozen=True, slots=True)
class TopicHost:
    """What a topic membership needs of the Router it feeds (so that it need not know the Router)."""

    settings: Settings
    """The Router's settings; a participant's session takes its timeouts and probes from them."""
    members: Mapping[str, Member]
    """The Router's members, live: who holds each peer id now."""
    registered: Callable[[], Iterable[str]]
    """The peer ids whose first handshake is done (the adapter's peers)."""
    start_member: Callable[[str, PeerSpec, Settings], Awaitable[tuple[str, ...]]]
    """Start a member under the Router's task group; returns once it joined (raises if not)."""


class TopicMembership:
    """A topic joined by a Router (see `Router.join_topic`): each participant present is a peer.

    Example:
        ```python
        topic = await router.join_topic("http://127.0.0.1:8080", "room", "planner")
        topic.peers      # ('time', 'agent-b'): participants whose tools are published
        topic.skipped    # {'alice': 'no answer to initialize within 10 s'}: not MCP servers
        await topic.leave()
        ```
    """

    def __init__(
        self,
        host: TopicHost,
        gateway_url: str | Sequence[str],
        topic: str,
        participant_id: str,
        *,
        token_provider: Callable[[], Awaitable[str]] | None,
        include: Sequence[str] | None,
        exclude: Sequence[str] | None,
        serve: MCPServer | Server[Any] | None,
        mode: str,
        handshake_timeout: float,
        retry_unresponsive: float | None,
        reconnect: Reconnect,
        send_rate: float | None,
        options: ConnectionOptions | None = None,
    ) -> None:
        if not handshake_timeout > 0:
            raise ValueError(f"handshake_timeout must be positive seconds, not {handshake_timeout!r}")
        if retry_unresponsive is not None and not retry_unresponsive > 0:
            raise ValueError(f"retry_unresponsive must be positive or None, not {retry_unresponsive!r}")
        self.gateway_url = gateway_url
        self.topic = topic
        self._requested_id = participant_id
        self._host = host
        self._token_provider = token_provider
        self._include = _patterns("include", include)
        self._exclude = _patterns("exclude", exclude)
        self._serve = serve
        self._mode = mode
        self._handshake_timeout = handshake_timeout
        self._retry_after = retry_unresponsive
        self._reconnect = reconnect
        self._send_rate = send_rate
        self._options = options or ConnectionOptions()
        # Handshakes wait for a slot rather than in our paced outbox, where their time would run
        # out: a handshake costs three frames, so this many take about a second.
        self._handshakes = anyio.CapacityLimiter(max(1, int(send_rate // 3)) if send_rate else 64)
        self._settings = dataclasses.replace(
            host.settings,  # the Router's probes, callbacks, ...
            # Reopened while present: the topic decides when it is gone (a leave, a lost gateway).
            reconnect=dataclasses.replace(reconnect, max_attempts=None, give_up_after=None),
            connect_timeout=handshake_timeout,
        )
        self._client: TopicClient | None = None
        self._server: ParticipantServer | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._members: dict[str, Member] = {}
        self._leaving: dict[str, Member] = {}
        self._adding: set[str] = set()
        self._skipped: dict[str, str] = {}
        self._timers: dict[str, anyio.CancelScope] = {}
        self._epochs: dict[str, int] = {}  # bumped when a participant leaves or reconnects
        self._connections = 0  # bumped when our topic connection comes back
        self._initial: set[str] = set()
        self._settled = anyio.Event()
        self._lost = False
        self._ending = False
        self._scope = anyio.CancelScope()
        self.done = anyio.Event()
        """Set once the topic is left and its peers are gone."""
        self.closed_reason: str | None = None
        """Why the membership ended on its own (the topic client gave up reconnecting), if it did."""

    # -- what a host reads ------------------------------------------------------------------

    @property
    def client(self) -> TopicClient:
        """The topic connection (to send notifications, read `participants`, subscribe to presence)."""
        if self._client is None:
            raise RuntimeError("the topic is not joined yet")
        return self._client

    @property
    def participant_id(self) -> str:
        """Our id in the topic, as the gateway assigned it."""
        return self._client.participant_id if self._client is not None else self._requested_id

    @property
    def server(self) -> ParticipantServer | None:
        """Our own participant side, when `serve` was given."""
        return self._server

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.state.name == "CONNECTED"

    @property
    def peers(self) -> tuple[str, ...]:
        """The participants that are Router peers now (healthy, or being reconnected)."""
        registered = set(self._host.registered())  # joined: not still in its first handshake
        return tuple(
            pid for pid, member in self._host.members.items() if pid in registered and self._owns(member)
        )

    def _owns(self, member: Member) -> bool:
        return isinstance(member.spec, ParticipantPeer) and member.spec.topic is self._client

    @property
    def skipped(self) -> Mapping[str, str]:
        """Participants present but not peers, each with the reason (no answer to `initialize`, ...).

        They are tried again when they reconnect, when our topic connection comes back, and
        every `retry_unresponsive` seconds.
        """
        return dict(self._skipped)

    async def leave(self) -> None:
        """Leave the topic: every participant peer leaves the Router; returns once they are gone."""
        self._scope.cancel()
        await self.done.wait()

    # -- the task ---------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[TopicMembership]) -> None:
        """Connect, start a handshake with every participant present, and follow presence.

        `task_status.started` is called once each participant present at the start is a peer or
        has been skipped (so within about `handshake_timeout`).
        """
        from ..mcpx.client._participant import serve_participant  # the topic side loads with the first topic
        from ..mcpx.client._topic import TopicClient

        started = False
        try:
            with self._scope:
                async with AsyncExitStack() as stack:
                    client = self._client = TopicClient(
                        self.gateway_url,
                        self.topic,
                        self._requested_id,
                        token_provider=self._token_provider,
                        reconnect=self._reconnect,
                        send_rate=self._send_rate,
                        **self._options,
                    )
                    if self._serve is not None:  # ready before the others see us join
                        self._server = await stack.enter_async_context(serve_participant(client, self._serve))
                    await stack.enter_async_context(client)
                    events = await stack.enter_async_context(client.subscribe(buffer=_EVENT_BUFFER))
                    stack.push_async_callback(self._remove_all)  # before the topic connection closes
                    async with anyio.create_task_group() as tg:
                        self._tg = tg
                        roster = client.participants
                        self._initial = {pid for pid in roster if self._wanted(pid)}
                        for pid in list(self._initial):
                            self._reconcile(pid, roster)
                        if not self._initial:
                            self._settled.set()
                        tg.start_soon(self._follow, events, tg.cancel_scope)
                        await self._settled.wait()
                        started = True
                        task_status.started(self)
            if not started:
                raise MCPxConnectionError(
                    f"topic {self.topic!r} closed while joining: {self.closed_reason or 'connection lost'}"
                )
        finally:
            self._ending = True
            self.done.set()

    async def _follow(self, events: MemoryObjectReceiveStream[TopicEvent], scope: anyio.CancelScope) -> None:
        from ..mcpx.client._topic_events import ConnectionEvent, ConnectionState, PresenceEvent

        async for event in events:
            if isinstance(event, PresenceEvent):
                self._on_presence(event)
            elif isinstance(event, ConnectionEvent):
                if event.state is ConnectionState.LOST:
                    self._lost = True
                    logger.warning("topic %r: connection lost (%s); reconnecting", self.topic, event.reason)
                elif event.state is ConnectionState.CONNECTED and self._lost:
                    self._on_reconnected()
                elif event.state is ConnectionState.CLOSED:
                    self.closed_reason = event.reason
                    logger.warning("topic %r closed: %s", self.topic, event.reason)
                    break
        scope.cancel()  # the topic client closed or gave up: the participants leave

    def _on_presence(self, event: PresenceEvent) -> None:
        pid = event.participant.id
        if event.event == "leave" or event.rejoined:
            self._epochs[pid] = self._epochs.get(pid, 0) + 1
        if event.rejoined:
            # A new connection under a known id: its session with us ended; handshake again now.
            member = self._members.get(pid)
            if member is not None:
                member.retry_now()
            self._unskip(pid)
        self._reconcile(pid, self.client.participants)

    def _on_reconnected(self) -> None:
        self._lost = False
        self._connections += 1
        roster = self.client.participants
        logger.info("topic %r: reconnected; %d participant(s) present", self.topic, len(roster))
        # The welcome's `leave`s and `join`s came before this event; the rest are still here.
        for pid, member in self._members.items():
            if pid in roster:
                member.retry_now()
        for pid in list(self._skipped):
            self._unskip(pid)
        for pid in roster:
            self._reconcile(pid, roster)

    # -- membership -------------------------------------------------------------------------

    def _wanted(self, pid: str) -> bool:
        if self._include is not None and not any(fnmatch.fnmatchcase(pid, p) for p in self._include):
            return False
        return self._exclude is None or not any(fnmatch.fnmatchcase(pid, p) for p in self._exclude)

    def _reconcile(self, pid: str, roster: Mapping[str, object]) -> None:
        """Make the Router's view of `pid` follow the topic's: a peer if present, none if not."""
        if self._ending or self._tg is None:
            return
        if pid in roster and self._wanted(pid):
            if pid not in self._members and pid not in self._adding and pid not in self._skipped:
                if anyio.current_effective_deadline() == -math.inf:
                    # Being cancelled (the Router is closing): a member started now would only
                    # hold up the task group's exit.
                    return
                self._adding.add(pid)
                self._tg.start_soon(self._add, pid)
            return
        self._unskip(pid)
        member = self._members.pop(pid, None)
        if member is not None:
            self._leaving[pid] = member
            member.leave_reason = f"peer {pid!r} left topic {self.topic!r}"
            member.scope.cancel()

    async def _add(self, pid: str) -> None:
        try:
            while True:
                previous = self._leaving.get(pid)
                if previous is not None:
                    await previous.done.wait()
                epoch, connections = self._epochs.get(pid, 0), self._connections
                spec = ParticipantPeer(self.client, pid, mode=self._mode)
                try:
                    async with self._handshakes:
                        await self._host.start_member(pid, spec, self._settings)
                except DuplicatePeerError:
                    self._skip(pid, f"the Router already has a peer named {pid!r}", retry=False)
                    return
                except Exception as exc:
                    again = self._epochs.get(pid, 0) != epoch or self._connections != connections
                    if again and pid in self.client.participants and not self._ending:
                        continue  # it reconnected (or we did) while we asked: ask the new connection
                    self._skip(pid, self._describe(exc), retry=True)
                    return
                member = self._host.members.get(pid)
                if member is None or not self._owns(member):
                    return  # it has already left again; the reconciliation below decides
                self._members[pid] = member
                assert self._tg is not None
                self._tg.start_soon(self._watch, pid, member)
                return
        finally:
            self._adding.discard(pid)
            self._initial.discard(pid)
            if not self._initial:
                self._settled.set()
            if self._client is not None:
                self._reconcile(pid, self._client.participants)  # it may have left meanwhile

    async def _watch(self, pid: str, member: Member) -> None:
        await member.done.wait()
        if self._leaving.get(pid) is member:
            del self._leaving[pid]
        elif self._members.get(pid) is member:
            # It left the Router by itself: `router.leave`, or its reconnect policy gave up.
            del self._members[pid]
            self._skip(pid, f"left the Router: {member.leave_reason}", retry=False)

    def _skip(self, pid: str, reason: str, *, retry: bool) -> None:
        if self._ending:
            return
        self._skipped[pid] = reason
        logger.warning("topic %r: participant %r is not a peer: %s", self.topic, pid, reason)
        if retry and self._retry_after is not None and self._tg is not None:
            scope = self._timers[pid] = anyio.CancelScope()
            self._tg.start_soon(self._retry_later, pid, scope)

    def _unskip(self, pid: str) -> None:
        self._skipped.pop(pid, None)
        timer = self._timers.pop(pid, None)
        if timer is not None:
            timer.cancel()

    async def _retry_later(self, pid: str, scope: anyio.CancelScope) -> None:
        assert self._retry_after is not None
        with scope:
            await anyio.sleep(self._retry_after)
        if self._timers.get(pid) is scope:  # not called off meanwhile; reconcile outside its scope
            self._unskip(pid)
            self._reconcile(pid, self.client.participants)

    def _describe(self, exc: Exception) -> str:
        cause = exc.__cause__
        if isinstance(exc, PeerUnavailableError) and isinstance(cause, TimeoutError):
            return f"no answer to initialize and tools/list within {self._handshake_timeout:g} s"
        return str(exc)

    async def _remove_all(self) -> None:
        self._ending = True
        with anyio.CancelScope(shield=True):
            for member in list(self._members.values()):
                if self.closed_reason is not None:
                    why = f"topic {self.topic!r} closed ({self.closed_reason})"
                else:
                    why = f"we left topic {self.topic!r}"
                member.leave_reason = f"peer {member.peer!r} left: {why}"
                member.scope.cancel()
            for member in [*self._members.values(), *self._leaving.values()]:
                await member.done.wait()
            self._members.clear()
            self._leaving.clear()


def _patterns(what: str, patterns: Sequence[str] | None) -> tuple[str, ...] | None:
    if patterns is None:
        return None
    if isinstance(patterns, str) or not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"{what} must be a list of glob patterns of participant ids, not {patterns!r}")
    return tuple(patterns)
