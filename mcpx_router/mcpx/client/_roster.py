"""Who is in a topic: the roster kept from the welcome and presence frames, and its subscribers.

The topic client's connection loop feeds it frames; it keeps the other participants present,
tells the routes when one is gone (its sessions end), and fans topic events out to every
`subscribe()` stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._envelope import (
    Envelope,
    ErrorFrame,
    ParticipantInfo,
    Welcome,
    parse_frame,
    parse_participant,
    parse_presence,
    parse_welcome,
)
from .._errors import EnvelopeError, MCPxAuthError, MCPxConnectionError, WebSocketClosed
from .._welcome import speaks_for_gateway
from ._routes import Routes
from ._topic_events import ConnectionEvent, ConnectionState, PresenceEvent, TopicEvent

if TYPE_CHECKING:
    from .._ws import WebSocket

__all__ = ["Roster"]

logger = logging.getLogger("mcpx_router.mcpx")


class Roster:
    """The participants of one topic as its frames tell them, and the streams that follow them.

    Args:
        topic: The topic's name (for log lines).
        routes: The topic client's routes: a participant that leaves or reconnects ends its sessions.
        ours: Whether a participant id is our own (the requested or the assigned one).
    """

    def __init__(self, topic: str, routes: Routes, ours: Callable[[str], bool]) -> None:
        self._topic = topic
        self._routes = routes
        self._ours = ours
        self._present: dict[str, ParticipantInfo] = {}
        self.history: tuple[Envelope, ...] = ()
        """The recent broadcast history the gateway sent with its welcome."""
        self._subscribers: set[MemoryObjectSendStream[TopicEvent]] = set()
        self._impostors: set[str] = set()

    @property
    def present(self) -> Mapping[str, ParticipantInfo]:
        """The other participants currently present (never ourselves), as a copy."""
        return dict(self._present)

    @asynccontextmanager
    async def subscribe(
        self, state: ConnectionState, *, closed: bool, buffer: int
    ) -> AsyncIterator[MemoryObjectReceiveStream[TopicEvent]]:
        """A stream that starts with `state` and a `join` per participant present, then follows live."""
        send, recv = anyio.create_memory_object_stream[TopicEvent](buffer)
        send.send_nowait(ConnectionEvent(state))
        for info in self._present.values():
            send.send_nowait(PresenceEvent("join", info))
        if closed:
            send.close()
        else:
            self._subscribers.add(send)
        try:
            with recv:
                yield recv
        finally:
            self._subscribers.discard(send)
            send.close()

    def admit(self, env: Envelope) -> bool:
        """Whether a `presence` or `system` frame may speak for the topic: only the gateway's may.

        A participant's frame claiming to be one (a gateway that forwards any kind let it through)
        is dropped: a warning the first time each participant does it, debug records after.
        """
        if speaks_for_gateway(env):
            return True
        if env.sender in self._impostors:
            logger.debug(
                "topic %r: dropping a %s frame from participant %r", self._topic, env.kind, env.sender
            )
        else:
            self._impostors.add(env.sender)
            logger.warning(
                "topic %r: dropping a %s frame from participant %r: only the gateway speaks for the topic"
                " (later ones are logged at debug)",
                self._topic,
                env.kind,
                env.sender,
            )
        return False

    async def await_welcome(
        self, ws: WebSocket, wait: float, on_error: Callable[[ErrorFrame], None]
    ) -> tuple[Welcome, list[str]]:
        """Read until the gateway's welcome; return it and the frames that came before it
        (presence among them is applied, error frames go to `on_error`)."""
        early: list[str] = []
        try:
            with anyio.fail_after(wait):
                while True:
                    text = await ws.receive_text()
                    try:
                        frame = parse_frame(text)
                    except EnvelopeError:
                        logger.warning("dropping malformed frame before the welcome")
                        continue
                    if isinstance(frame, ErrorFrame):
                        on_error(frame)
                        continue
                    if frame.kind != "mcp" and not self.admit(frame):
                        continue
                    welcome = parse_welcome(frame)
                    if welcome is not None:
                        return welcome, early
                    if frame.kind == "presence":
                        self.on_presence(frame)
                    else:
                        early.append(text)
        except TimeoutError:
            raise MCPxConnectionError(f"no welcome from the gateway within {wait} s") from None
        except WebSocketClosed as exc:
            if exc.code == 1008:
                raise MCPxAuthError(f"the gateway refused us: {exc.reason or 'policy violation'}") from None
            message = f"the gateway closed the connection before the welcome: {exc}"
            raise MCPxConnectionError(message) from None

    def welcome(self, welcome: Welcome) -> None:
        """Take the welcome's history and roster: `leave` for those gone, `join` for newcomers."""
        self.history = welcome.history
        new = {p.id: p for p in welcome.participants if not self._ours(p.id)}
        for pid in [pid for pid in self._present if pid not in new]:
            info = self._present.pop(pid)
            self._routes.peer_gone(pid, "participant left")
            self.publish(PresenceEvent("leave", info))
        for pid, info in new.items():
            known = pid in self._present
            self._present[pid] = info  # its connection as the gateway knows it now
            if not known:
                self.publish(PresenceEvent("join", info))

    def on_presence(self, env: Envelope) -> None:
        """Follow a presence frame: a join, a leave, a heartbeat from someone we missed, or a
        batch of joins and leaves (what gateways send to clients that ask, `?presence=batched`)."""
        batch = env.payload if isinstance(env.payload, Mapping) else {}
        if str(batch.get("event", batch.get("type", ""))).lower() == "batch":
            self._on_batch(batch)
            return
        presence = parse_presence(env)
        if presence is None:
            logger.debug("topic %r: ignoring presence frame %r", self._topic, env.payload)
            return
        self._apply(presence.event, presence.participant)

    def _on_batch(self, batch: Mapping[str, Any]) -> None:
        """A batch: the net change since the one before, a participant named at most once. A
        `joined` entry with the connection we know (our welcome had it) is no news; one with
        another connection is a reconnect."""
        for key, event in (("left", "leave"), ("joined", "join")):
            entries = batch.get(key)
            for entry in entries if isinstance(entries, list) else ():
                info = parse_participant(entry)
                if info is None:
                    continue
                known = self._present.get(info.id)
                if event == "join" and known is not None and known.connection == info.connection:
                    if info.connection is not None:
                        continue  # the welcome had this connection already
                self._apply(event, info)

    def _apply(self, event: str, info: ParticipantInfo) -> None:
        if self._ours(info.id):
            return  # our own join (possibly before the welcome) or a stale leave
        if event == "join":
            rejoined = info.id in self._present
            self._present[info.id] = info
            if rejoined:
                self._routes.peer_gone(info.id, "participant reconnected")
            self.publish(PresenceEvent("join", info, rejoined=rejoined))
        elif event == "leave":
            known = self._present.pop(info.id, None)
            self._routes.peer_gone(info.id, "participant left")
            self.publish(PresenceEvent("leave", known or info))
        elif info.id not in self._present:  # a heartbeat from someone we missed
            self._present[info.id] = info
            self.publish(PresenceEvent("join", info))

    def publish(self, event: TopicEvent) -> None:
        """Hand the event to every subscriber; one that does not read loses it (logged), not us."""
        for send in list(self._subscribers):
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning("topic %r: a subscriber is not reading; dropped %r", self._topic, event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._subscribers.discard(send)

    def close(self) -> None:
        """End every subscriber's stream."""
        for send in list(self._subscribers):
            send.close()
        self._subscribers.clear()
