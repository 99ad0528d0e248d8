"""Router: owns the connections to many MCP peers, and publishes their tools through one adapter."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, Unpack

import anyio
import anyio.abc

from .._adapter import DEFAULT_CALL_TIMEOUT, OpenAIPeerToolAdapter
from .._backoff import Reconnect
from .._errors import AdapterClosedError, DuplicatePeerError, UnknownPeerError, UsageError
from .._naming import check_peer_id
from ..groups._grouping import GroupOptions
from ..mcpx._topic_options import ConnectionOptions
from ..mcpx.client._pace import DEFAULT_SEND_RATE
from ._callbacks import PeerCallbacks
from ._content_face import ContentFace
from ._events import CallProgress, EventHub, EventStream, RouterEvent
from ._face import AdapterFace
from ._join_many import JoinMany
from ._member import Member
from ._settings import Settings, checked_settings
from ._specs import PeerSpec, as_peer_spec, with_tool_filter
from ._topic_peers import TopicHost, TopicMembership
from .content._content import ContentStore

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

__all__ = ["PeerStatus", "Router"]

logger = logging.getLogger("mcpx_router")


@dataclass(frozen=True, slots=True)
class PeerStatus:
    """Where one peer stands."""

    peer: str
    spec: PeerSpec
    healthy: bool
    """Connected, with its tools published; false while it is being reconnected."""
    tools: tuple[str, ...]
    """Its published public names (none while it is unhealthy)."""
    attempts: int
    """Failed reconnect attempts since it was lost."""
    last_error: str | None
    stray_lines: Mapping[str, int] = field(default_factory=dict)
    """Lines of a stdio peer that answered nothing (not JSON, not JSON-RPC, ...), counted by kind
    since it joined; the first of each kind is logged as a warning."""


class Router(AdapterFace, ContentFace, JoinMany):
    """Connects to MCP peers, keeps them connected, and offers all their tools as one OpenAI tool list.

    Each peer is a task in the Router's task group: joining returns once the peer's handshake
    and tool listing are done; leaving (or the end of `async with`) closes its connection.
    Tool lists are re-listed when a peer says they changed; a peer whose connection fails has
    its tools withdrawn and is reconnected with backoff, getting back the same public names.

    Example:
        ```python
        async with Router() as router:
            await router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
            await router.join_all(load_config("mcp.json"))
            response = await openai.chat.completions.create(
                model=model, messages=messages, tools=router.get_openai_tools()
            )
            messages += await router.dispatch(response.choices[0].message.tool_calls or [])
        ```

    Args:
        adapter: The adapter to publish through; by default the Router makes (and closes) its own.
            A given adapter is left open, and may hold peers the Router does not own.
        call_timeout: Default seconds per call, for the adapter the Router makes.
        reconnect: When to try a lost peer again, and when to give up on it (it then leaves).
        connect_timeout: Seconds a handshake with its tool listing (and a re-listing) may take.
        refresh_debounce: Seconds to wait after a peer's first "tools changed" before re-listing
            it, so that a burst of changes costs one listing.
        health_interval: Seconds between liveness probes of each peer that is not in-process
            (`ping`, or a tool listing at 2026-07-28; None: only when a request fails oddly or
            times out). A stdio peer's exit is noticed at once; a hung one by its probe.
        health_timeout: Seconds a probe may take; a peer that does not answer within it is hung
            and treated as lost (its process is ended and started again).
        on_event: Called with every event, synchronously; see also `events()`.
        callbacks: What every peer may ask of us (sampling, ...), under a spec's own; see docs/peers.md.
        resource_tools: Offer resources and prompts as tools too (`peer__read_resource`, ...).
        options: Groups of equivalent tools and statistics, for the adapter the Router makes
            (see `GroupOptions` and docs/many-peers.md); their events come as the Router's.
    """

    def __init__(
        self,
        *,
        adapter: OpenAIPeerToolAdapter | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        reconnect: Reconnect | None = None,
        connect_timeout: float = 30.0,
        refresh_debounce: float = 0.05,
        health_interval: float | None = 30.0,
        health_timeout: float = 10.0,
        on_event: Callable[[RouterEvent], object] | None = None,
        callbacks: PeerCallbacks | None = None,
        resource_tools: bool = False,
        **options: Unpack[GroupOptions],
    ) -> None:
        if adapter is not None and options:
            raise UsageError(f"pass {', '.join(options)} to the adapter you give the Router, not to it")
        self._settings = checked_settings(
            reconnect=reconnect,
            connect_timeout=connect_timeout,
            refresh_debounce=refresh_debounce,
            health_interval=health_interval,
            health_timeout=health_timeout,
            callbacks=callbacks,
            resource_tools=resource_tools,
        )
        self._content = ContentStore()
        self._hub = EventHub(on_event)
        self._owns_adapter = adapter is None
        if adapter is None:
            adapter = OpenAIPeerToolAdapter(call_timeout=call_timeout, **options)
        self._adapter = adapter
        self._members: dict[str, Member] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed = False
        self._previous_progress: Any = None

    # -- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._tg is not None or self._closed:
            raise RuntimeError("a Router can be entered only once")
        if self._owns_adapter:
            await self._adapter.__aenter__()
        self._previous_progress = previous = self._adapter.on_progress

        def forward(update: CallProgress) -> None:
            if previous is not None:
                previous(update)
            self._hub.emit(update)

        self._adapter.on_progress = forward
        self._forward_events(self._hub)
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg = self._tg
        assert tg is not None, "Router.__aexit__ without __aenter__"
        self._closed = True
        for member in self._members.values():
            member.scope.cancel()  # calls still running are told their peer left
        tg.cancel_scope.cancel()  # every peer leaves: its task closes its connection
        try:
            if exc is not None and not isinstance(exc, anyio.get_cancelled_exc_class()):
                # The block's own exception goes on as it is, not wrapped in an exception group.
                await tg.__aexit__(None, None, None)
                return None
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            self._adapter.on_progress = self._previous_progress
            self._forward_events(None)
            if self._owns_adapter:
                await self._adapter.__aexit__(exc_type, exc, tb)
            self._hub.close()

    # -- membership -------------------------------------------------------------------------

    async def join(
        self,
        peer_id: str,
        peer: PeerSpec | object,
        *,
        include_tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] | None = None,
    ) -> tuple[str, ...]:
        """Connect to a peer and publish its tools; return their public names.

        Returns after the handshake and the complete tool listing.

        Args:
            peer_id: A non-empty id, unique in this Router; it prefixes the public names. At
                most 128 characters, without control characters or surrogates.
            peer: A `StdioPeer`, `HttpPeer`, `SsePeer`, `InProcessPeer` or `SessionPeer`, or what
                `as_peer_spec` turns into one (a URL, an `MCPServer`, a connected `mcp.Client`).
            include_tools, exclude_tools: Tool-name patterns replacing the spec's, when given.

        Raises:
            PeerUnavailableError: The first connection or listing failed (nothing is left behind).
            DuplicatePeerError: The id is taken.
            InvalidPeerIdError: The id is not one a peer may have (see `check_peer_id`).
        """
        self._open_group()
        check_peer_id(peer_id)
        spec = with_tool_filter(as_peer_spec(peer), include_tools, exclude_tools)
        return await self._start_member(peer_id, spec, self._settings)

    async def _start_member(self, peer_id: str, spec: PeerSpec, settings: Settings) -> tuple[str, ...]:
        tg = self._open_group()
        check_peer_id(peer_id)
        if peer_id in self._members or peer_id in self._adapter.peers:
            raise DuplicatePeerError(
                f"a peer named {peer_id!r} is already registered; leave it first or choose another id",
                peer=peer_id,
            )
        member = Member(
            peer_id,
            spec,
            adapter=self._adapter,
            hub=self._hub,
            settings=settings,
            forget=self._forget,
            content=self._content,
        )
        self._members[peer_id] = member
        try:
            names: tuple[str, ...] = await tg.start(member.run)
        except BaseException:
            self._forget(member)
            raise
        return names

    async def join_topic(
        self,
        gateway_url: str | Sequence[str],
        topic: str,
        participant_id: str,
        *,
        token_provider: Callable[[], Awaitable[str]] | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        serve: MCPServer | Server[Any] | None = None,
        handshake_timeout: float = 10.0,
        retry_unresponsive: float | None = 60.0,
        reconnect: Reconnect | None = None,
        send_rate: float | None = DEFAULT_SEND_RATE,
        mode: str = "legacy",
        **options: Unpack[ConnectionOptions],
    ) -> TopicMembership:
        """Join an MCPx topic: every participant present is a peer, named by its participant id.

        Presence drives membership: a participant that joins the topic joins the Router (after
        an MCP handshake over the topic), one that leaves leaves it, one that reconnects is
        handshaken again. Returns once connected and each participant present has joined or
        been skipped (see `TopicMembership.skipped`); see docs/mcpx.md.

        Example:
            ```python
            topic = await router.join_topic("http://127.0.0.1:8080", "room", "planner", serve=my_server)
            tools = router.get_openai_tools()   # time__get_current_time, agent-b__add, ...
            ```

        Args:
            gateway_url: The gateway's base URL, or a list of gateways serving the same topics
                (NATS mode): a lost connection moves to the next, and the membership is
                reconciled as after any reconnect.
            topic: The topic to join.
            participant_id: Our id in the topic.
            token_provider: `async () -> str`, asked to connect and when the gateway refuses the
                token held; by default a development token is asked of the gateway.
            include: Glob patterns of participant ids to take as peers (None: all).
            exclude: Glob patterns of participant ids never to take as peers.
            serve: An MCP server to answer the requests other participants address to us.
            handshake_timeout: Seconds a participant has to answer `initialize` and `tools/list`;
                one that does not (a person, say) is skipped without holding up the others.
            retry_unresponsive: Seconds after which a skipped participant is tried again (None:
                only when it reconnects or we do).
            reconnect: Backoff for the topic connection and for participants' sessions (by
                default the Router's). When it gives up, the topic's peers leave.
            send_rate: Frames a second we send at most (None: no limit), so that the gateway's
                per-participant rate limit never drops one; joining costs three per participant.
            mode: How to negotiate with participants (see `mcp.Client`); MCPx v0 participants
                expect the `initialize` handshake.
            options: `send_timeout` (60 s: a call that cannot go out in time within `send_rate`
                is answered at once, saying so), `ping_interval` and `ping_timeout` (20 s each:
                a gateway that answers no ping for that long is taken as gone); see `TopicClient`.

        Raises:
            MCPxConnectionError: The gateway could not be reached (MCPxAuthError: it refused us).
        """
        tg = self._open_group()
        membership = TopicMembership(
            TopicHost(self._settings, self._members, lambda: self._adapter.peers, self._start_member),
            gateway_url,
            topic,
            participant_id,
            token_provider=token_provider,
            include=include,
            exclude=exclude,
            serve=serve,
            mode=mode,
            handshake_timeout=handshake_timeout,
            retry_unresponsive=retry_unresponsive,
            reconnect=reconnect if reconnect is not None else self._settings.reconnect,
            send_rate=send_rate,
            options=options,
        )
        joined: TopicMembership = await tg.start(membership.run)
        return joined

    async def leave(self, peer_id: str) -> None:
        """Close the peer's connection and withdraw its tools and names; returns once it is gone."""
        member = self._members.get(peer_id)
        if member is None:
            raise UnknownPeerError(f"no peer named {peer_id!r} was joined through this Router", peer=peer_id)
        member.scope.cancel()
        await member.done.wait()

    async def refresh(self, peer_id: str | None = None) -> bool:
        """List one peer's tools again (or every peer's, concurrently); return whether any changed.

        Peers that are being reconnected are skipped. Peers say when their tools change, and the
        Router follows; this is for peers that cannot.

        Raises:
            UnknownPeerError: No such peer.
            PeerUnavailableError: A listing failed.
        """
        if peer_id is not None:
            member = self._members.get(peer_id)
            if member is None:
                raise UnknownPeerError(
                    f"no peer named {peer_id!r} was joined through this Router", peer=peer_id
                )
            return await member.refresh()
        results: list[bool] = []
        failures: list[Exception] = []

        async def one(member: Member) -> None:
            try:
                results.append(await member.refresh())
            except Exception as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for member in list(self._members.values()):
                tg.start_soon(one, member)
        if failures:
            raise failures[0]
        return any(results)

    def events(self, *, max_buffer: int = 1024) -> EventStream:
        """An async iterator of the events emitted while it is open.

        Example:
            ```python
            with router.events() as events:
                async for event in events:
                    if event.version != sent_version: ...
            ```
        """
        return self._hub.stream(max_buffer)

    @property
    def peers(self) -> tuple[str, ...]:
        """The ids of the peers joined through this Router (healthy or being reconnected)."""
        return tuple(self._members)

    def status(self, peer_id: str) -> PeerStatus:
        """Where one peer stands; raise UnknownPeerError if it was not joined here."""
        member = self._members.get(peer_id)
        if member is None:
            raise UnknownPeerError(f"no peer named {peer_id!r} was joined through this Router", peer=peer_id)
        return PeerStatus(
            peer=peer_id,
            spec=member.spec,
            healthy=member.healthy,
            tools=tuple(tool.name for tool in self._adapter.tools_of(peer_id)),
            attempts=member.attempts,
            last_error=member.last_error,
            stray_lines=dict(member.strays.counts),
        )

    def _open_group(self) -> anyio.abc.TaskGroup:
        if self._tg is None:
            raise RuntimeError("use the Router inside `async with Router() as router:`")
        if self._closed:
            raise AdapterClosedError("this Router's `async with` block has ended; create a new Router")
        return self._tg

    def _forget(self, member: Member) -> None:
        if self._members.get(member.peer) is member:
            del self._members[member.peer]
