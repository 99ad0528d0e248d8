"""Make any stdio MCP server a participant of a topic.

The bridge spawns the server and forwards the MCP requests other participants address to it
(the JSON-RPC plumbing of one server process is `_bridge_session.StdioSession`).

**Every requester negotiates.** MCP lets a server answer `initialize` only once per session,
with the version the client asked for when it supports it, else one it prefers. A bridged
server cannot be asked again, and which versions it supports is its own business (servers
built on different SDKs support different lists), so the bridge keeps one server session per
version asked for: the first `initialize` asking for a version goes to a session of its own
(the first one to the server started with the bridge, later versions to another copy of the
server started on demand), and is answered by the server itself; later requesters asking for
the same version (or for the version a session's server answered with) share that session and
get its answer. Each participant thus gets a truly negotiated version, and the server speaks
that version to it. A server that keeps state in memory keeps one state per session.

The bridge answers `ping` itself, with an empty result, whatever the server implements.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from .._envelope import Envelope
from .._errors import BridgeError
from .._rpc import INTERNAL_ERROR, error_response
from ..client._topic import TopicClient
from ._bridge_session import StdioSession, asked_version, open_session

logger = logging.getLogger("mcpx_router.mcpx.bridge")

_Pending = tuple[str, dict[str, Any], Envelope]


class StdioBridge:
    """The running bridge (an inbound handler of its topic client).

    `process` and `exited` are those of the server started with the bridge: when it exits,
    the bridge ends. Copies started for other protocol versions end with the bridge.
    """

    def __init__(
        self,
        topic: TopicClient,
        primary: StdioSession,
        tg: anyio.abc.TaskGroup,
        command: Sequence[str],
        spawn_options: Mapping[str, Any],
    ) -> None:
        self.topic = topic
        self.primary = primary
        self.connection_lost = anyio.Event()
        self._tg = tg
        self._command = list(command)
        self._spawn_options = dict(spawn_options)
        self._sessions: list[StdioSession] = [primary]
        self._by_peer: dict[str, StdioSession] = {}
        self._spawning: dict[str, list[_Pending]] = {}
        self._aliases: dict[str, StdioSession] = {}
        self._scopes: dict[StdioSession, anyio.CancelScope] = {}

    @property
    def process(self) -> anyio.abc.Process:
        return self.primary.process

    @property
    def exited(self) -> anyio.Event:
        return self.primary.exited

    @property
    def peers(self) -> frozenset[str]:
        """Participants that have talked to the bridged server."""
        return frozenset().union(*(s.peers for s in self._sessions))

    @property
    def sessions(self) -> tuple[StdioSession, ...]:
        """The server sessions running: the first one, and one per other version asked for."""
        return tuple(self._sessions)

    async def wait(self) -> None:
        """Return when the server exited or the topic connection was lost."""
        async with anyio.create_task_group() as tg:

            async def watch(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch, self.exited)
            tg.start_soon(watch, self.connection_lost)

    # -- InboundHandler -----------------------------------------------------------------------

    def on_request(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        method = payload["method"]
        if method == "ping":
            self._reply(peer, envelope, {"jsonrpc": "2.0", "id": payload["id"], "result": {}})
            return
        if method != "initialize":
            self._session_of(peer).on_request(peer, payload, envelope)
            return
        version = asked_version(payload)
        if version in self._spawning:
            self._spawning[version].append((peer, payload, envelope))
            return
        session = self._session_for(version)
        if session is None:
            self._spawning[version] = [(peer, payload, envelope)]
            self._tg.start_soon(self._spawn, version)
            return
        self._use(peer, session)
        session.on_request(peer, payload, envelope)

    def on_notification(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        self._session_of(peer).on_notification(peer, payload, envelope)

    def on_peer_gone(self, peer: str) -> None:
        session = self._by_peer.pop(peer, None)
        for pending in self._spawning.values():
            pending[:] = [p for p in pending if p[0] != peer]
        if session is not None:
            session.on_peer_gone(peer)

    def on_connection_lost(self) -> None:
        self._by_peer.clear()
        for session in self._sessions:
            session.on_connection_lost()
        self.connection_lost.set()

    # -- choosing a session -------------------------------------------------------------------

    def _session_for(self, version: str) -> StdioSession | None:
        """The session that answers an `initialize` asking for `version`; None: start one."""
        live = [s for s in self._sessions if not s.exited.is_set()]
        alias = self._aliases.get(version)
        if alias in live:
            return alias
        for session in live:
            if session.serves(version):
                return session
        if self.primary.requested_version is None:
            return self.primary  # the first initialize of all
        if not version:
            return self.primary  # no version asked: let the first server answer as it can
        return None

    def _session_of(self, peer: str) -> StdioSession:
        """The session of a participant's `initialize`; the first one for a participant that
        sends requests without one (liberal: some clients skip the handshake)."""
        return self._by_peer.get(peer) or self.primary

    def _use(self, peer: str, session: StdioSession) -> None:
        old = self._by_peer.get(peer)
        if old is not None and old is not session:
            old.on_peer_gone(peer)  # a new initialize: its requests on the old session are over
        self._by_peer[peer] = session

    async def _spawn(self, version: str) -> None:
        try:
            session: StdioSession = await self._tg.start(self._run_session)
        except BridgeError as exc:
            logger.warning("cannot start another copy of the server for protocol %s: %s", version, exc)
            for peer, payload, envelope in self._spawning.pop(version, []):
                text = f"cannot start the server for protocol version {version}: {exc}"
                self._reply(peer, envelope, error_response(payload["id"], INTERNAL_ERROR, text))
            return
        logger.info("started another copy of the server for protocol version %s", version)
        self._sessions.append(session)
        for peer, payload, envelope in self._spawning.pop(version, []):
            self._use(peer, session)
            session.on_request(peer, payload, envelope)

    async def _run_session(self, *, task_status: anyio.abc.TaskStatus[StdioSession]) -> None:
        with anyio.CancelScope() as scope:
            async with open_session(self.topic, self._command, **self._spawn_options) as session:
                self._scopes[session] = scope
                session.on_negotiated = self._negotiated
                task_status.started(session)
                await session.exited.wait()
        self._scopes.pop(session, None)
        if session in self._sessions:
            self._sessions.remove(session)
        for peer in [p for p, s in self._by_peer.items() if s is session]:
            del self._by_peer[peer]
        if not scope.cancel_called:
            logger.warning("the copy of the server for protocol %s exited", session.requested_version)

    def _negotiated(self, session: StdioSession) -> None:
        """A copy's server answered with a version another session already speaks (it does not
        speak the one asked for): its participants move there, and the copy is closed."""
        version = session.negotiated_version
        twins = [
            s
            for s in self._sessions
            if s is not session and not s.exited.is_set() and s.negotiated_version == version
        ]
        if not twins or session.requested_version is None:
            return
        twin = twins[0]
        self._aliases[session.requested_version] = twin
        for peer in [p for p, s in self._by_peer.items() if s is session]:
            self._by_peer[peer] = twin
            twin.adopt(peer)
        self._sessions.remove(session)
        self._scopes[session].cancel()

    def _reply(self, peer: str, request: Envelope, payload: dict[str, Any]) -> None:
        self.topic._send_nowait(self.topic.envelope("mcp", payload, to=(peer,), correlation_id=request.id))


@asynccontextmanager
async def bridge_stdio_server(
    topic: TopicClient,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[StdioBridge]:
    """Spawn `command` and serve it to the topic as `topic.participant_id` until the block ends.

    It may be entered before the topic client connects (`run_bridge` does): the server is then
    ready when the other participants see this one join. The server runs in a process group of
    its own, as the `mcp` SDK's stdio client starts servers: a Ctrl-C in the terminal reaches
    the bridge alone, which then closes the server's input, and after `shutdown_grace` seconds
    terminates the group. A participant asking for another protocol version than the first
    one gets another copy of the server, started the same way (see the module docstring).
    """
    options: dict[str, Any] = {"env": env, "cwd": cwd, "shutdown_grace": shutdown_grace}
    async with open_session(topic, command, **options) as primary, anyio.create_task_group() as tg:
        bridge = StdioBridge(topic, primary, tg, command, options)
        topic._routes.set_handler(bridge)
        try:
            yield bridge
        finally:
            topic._routes.set_handler(None)
            tg.cancel_scope.cancel()
