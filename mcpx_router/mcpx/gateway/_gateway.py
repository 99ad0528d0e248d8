"""An MCPx v0 gateway: its HTTP routes an ASGI application (Starlette), its WebSocket served below
ASGI (`_front.py`, `_wspeer.py`: each frame encoded once for all its recipients); `run_gateway`
serves both on one port.

- `GET /v0/ws?topic=T` with `Authorization: Bearer <token>`: the realtime stream. A bad token is
  answered by closing with code 1008. The first frame is the welcome (our id, the others
  present, recent broadcast history); then presence joins and leaves (one frame each, batched
  with `&presence=batched`, none with `&presence=none`: `_presence.py`), and the envelopes
  addressed to us or broadcast. `from` must be the authenticated id, or the frame is rejected
  with a system error (never delivered).
- `POST /v0/auth/token {"participantId", "topic"}`: development tokens (if enabled).
- `GET /v0/topics`, `/v0/topics/{topic}/participants`, `/v0/topics/{topic}/history` (bearer token).

A participant connecting again under the same id replaces its old connection: the old one is
closed with code 4000, no `leave` is sent, and a `join` announces the new connection.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ._gateway_state import (
    FrameRejected,
    GatewayConfig,
    History,
    Member,
    RateLimiter,
    TokenGrant,
    TokenStore,
    check_client_frame,
    error_frame,
    over_rate,
    valid_id,
)
from ._presence import PresenceClock, presence_mode
from ._room import CLOSE_REPLACED, Room
from ._wspeer import WebSocketPeer, text_frame
from .cluster._cluster_state import Member as ClusterMember
from .cluster._cluster_state import new_conn_id

if TYPE_CHECKING:
    from .cluster._cluster import Cluster

logger = logging.getLogger("mcpx_router.mcpx.gateway")

CLOSE_POLICY = 1008
CLOSE_GOING_AWAY = 1001
CLOSE_TOO_SLOW = 1013
WS_PATH = "/v0/ws"


class _Connection:
    """One participant's WebSocket. `enqueue(text)` hands it a frame; a broadcast encodes its
    frame once (`text_frame`) and hands every recipient the same bytes (`enqueue_encoded`)."""

    def __init__(self, peer: WebSocketPeer, member: Member) -> None:
        self.peer = peer
        self.member = member
        self.conn_id = new_conn_id()

    @property
    def participant_id(self) -> str:
        return self.member.participant_id

    @property
    def closing(self) -> bool:
        return self.peer.closing

    def enqueue(self, text: str) -> None:
        """A frame for this connection alone: written at once when nothing waits before it."""
        self.enqueue_encoded(text_frame(text), now=True)

    def enqueue_encoded(self, frame: bytes, *, now: bool = False) -> None:
        if not self.peer.send_frame(frame, now=now):
            logger.warning("closing %r: it does not read its frames", self.participant_id)
            self.shut(CLOSE_TOO_SLOW, "too slow: send queue full")

    def shut(self, code: int, reason: str) -> None:
        self.peer.close(code, reason)


def _ignore(*_: str) -> None:
    pass  # what a connection being closed sends


def _bad_request(details: str) -> JSONResponse:
    return JSONResponse({"error": "bad_request", "details": details}, status_code=400)


def _bearer(value: str | None) -> str | None:
    if value and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


class Gateway:
    """The gateway state and its ASGI app (`gateway.app`). Serve it with `run_gateway`."""

    def __init__(self, config: GatewayConfig | None = None) -> None:
        self.config = config or GatewayConfig()
        self.tokens = TokenStore(self.config)
        self._limiter = RateLimiter(self.config.rate_per_second, self.config.rate_burst)
        self._rooms: dict[str, Room] = {}
        self._clock = PresenceClock(self.config.presence_interval)
        self._closed = False
        self.cluster: Cluster | None = None
        """The link to the other gateways, in the NATS mode (`GatewayConfig(nats=...)`)."""
        if self.config.nats is not None:
            from .cluster._cluster import Cluster

            self.cluster = Cluster(
                self,
                list(self.config.nats),
                prefix=self.config.nats_prefix,
                heartbeat=self.config.nats_heartbeat,
                history_limit=self.config.history_limit,
                replicas=self.config.nats_replicas,
                handover=self.config.nats_handover,
            )
        self.app = Starlette(
            routes=[
                Route("/v0/auth/token", self._issue_token, methods=["POST"]),
                Route("/v0/topics", self._list_topics, methods=["GET"]),
                Route("/v0/topics/{topic}/participants", self._list_participants, methods=["GET"]),
                Route("/v0/topics/{topic}/history", self._list_history, methods=["GET"]),
            ]
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Send presence batches while the block lasts (`run_gateway` enters it); without it,
        each change goes out on its own."""
        async with self._clock.running():
            yield

    # -- programmatic access ------------------------------------------------------------------

    def issue_token(self, participant_id: str, topic: str) -> str:
        if not valid_id(participant_id) or not topic:
            raise ValueError(f"invalid participant id {participant_id!r} or topic {topic!r}")
        return self.tokens.issue(participant_id, topic)

    def topics(self) -> list[str]:
        remote = self.cluster.topics() if self.cluster is not None else set()
        return sorted(set(self._rooms) | remote)

    def participants(self, topic: str) -> list[dict[str, Any]]:
        room = self._rooms.get(topic)
        local = [] if room is None else [c.member.info() for c in room.members.values()]
        return local + [dict(i) for i in self._remote(topic).values()]

    def history(self, topic: str) -> list[dict[str, Any]]:
        """The topic's broadcast history, oldest first."""
        return self._history(topic).items()

    def _history(self, topic: str) -> History:
        if self.cluster is not None:
            return self.cluster.history(topic)
        room = self._rooms.get(topic)
        return History(0) if room is None else room.history

    def _remote(self, topic: str) -> dict[str, Any]:
        return {} if self.cluster is None else self.cluster.remote(topic)

    # -- what the other gateways ask (the NATS mode: `ClusterHost`) -------------------------------

    def local_members(self) -> Iterable[ClusterMember]:
        for topic, room in list(self._rooms.items()):
            for pid, conn in list(room.members.items()):
                yield topic, pid, conn.conn_id, conn.member.info()

    def local_conn(self, topic: str, participant_id: str) -> str | None:
        room = self._rooms.get(topic)
        conn = None if room is None else room.members.get(participant_id)
        return None if conn is None else conn.conn_id

    def deliver(self, topic: str, text: str, *, to: str | None = None, sender: str | None = None) -> bool:
        """A frame from another gateway: to our participant `to`, or to all of ours in `topic`;
        `sender`'s join, if our participants have not been told it yet, goes first."""
        room = self._rooms.get(topic)
        if room is None:
            return False
        if sender is not None:
            room.settle(sender)
        if to is None:
            room.broadcast(text)
            return True
        conn = room.members.get(to)
        if conn is None or conn.closing:  # a closing one never gets what it is sent now
            return False
        conn.enqueue(text)
        return True

    def presence(self, topic: str, participant_id: str, event: str, text: str) -> None:
        """A `join` or `leave` on another gateway (`text`, its frame): told to ours in `topic`."""
        room = self._rooms.get(topic)
        if room is not None:
            room.tell(participant_id, event, text)

    def replace(self, topic: str, participant_id: str) -> None:
        """`participant_id` connected to another gateway: close its connection here, no `leave`."""
        room = self._rooms.get(topic)
        conn = None if room is None else room.remove(participant_id)
        if room is not None and conn is not None:
            logger.info("%r reconnected to %r elsewhere; closing its connection here", participant_id, topic)
            if self.cluster is not None:
                self.cluster.left(topic, participant_id, conn.conn_id, None)
            conn.shut(CLOSE_REPLACED, "replaced by a new connection")

    def close_all(self) -> None:
        """Stop accepting participants and close every connection (code 1001)."""
        self._closed = True
        for room in self._rooms.values():
            for conn in room.members.values():
                conn.shut(CLOSE_GOING_AWAY, "gateway shutting down")

    # -- REST ---------------------------------------------------------------------------------

    async def _issue_token(self, request: Request) -> JSONResponse:
        if not self.config.dev_tokens:
            details = "token issuing is disabled"
            return JSONResponse({"error": "forbidden", "details": details}, status_code=403)
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _bad_request("expected a JSON object")
        pid = body.get("participantId", body.get("participant_id"))
        topic = body.get("topic")
        if not valid_id(pid) or not isinstance(topic, str) or not 0 < len(topic) <= 256:
            details = "participantId and topic must be non-empty strings; ids may not start with 'system'"
            return _bad_request(details)
        token = self.tokens.issue(pid, topic)
        return JSONResponse(
            {"token": token, "participantId": pid, "topic": topic, "expiresIn": int(self.config.token_ttl)}
        )

    def _authorize(self, request: Request, topic: str | None) -> TokenGrant | None:
        return self.tokens.check(_bearer(request.headers.get("authorization")), topic)

    async def _list_topics(self, request: Request) -> JSONResponse:
        grant = self._authorize(request, None)
        if grant is None:
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        visible = [t for t in self.topics() if grant.topics is None or t in grant.topics]
        return JSONResponse({"topics": visible})

    async def _list_participants(self, request: Request) -> JSONResponse:
        topic = request.path_params["topic"]
        if self._authorize(request, topic) is None:
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return JSONResponse({"topic": topic, "participants": self.participants(topic)})

    async def _list_history(self, request: Request) -> JSONResponse:
        topic = request.path_params["topic"]
        if self._authorize(request, topic) is None:
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        try:
            limit = int(request.query_params.get("limit", "100"))
        except ValueError:
            return _bad_request("limit must be an integer")
        items = self._history(topic).page(limit, request.query_params.get("before"))
        return JSONResponse({"topic": topic, "history": items})

    # -- WebSocket ----------------------------------------------------------------------------

    async def serve_websocket(
        self, peer: WebSocketPeer, target: str, headers: list[tuple[bytes, bytes]]
    ) -> None:
        """Serve one accepted WebSocket (`GET /v0/ws`) until it closes; `run_gateway` calls it."""
        query = dict(parse_qsl(urlsplit(target).query))
        topic = query.get("topic") or ""
        authorization = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        token = _bearer(authorization.decode("latin-1"))
        if token is None and self.config.query_tokens:
            token = query.get("token")
        grant = self.tokens.check(token, topic) if topic else None
        if self._closed or grant is None:
            if self._closed:
                peer.close(CLOSE_GOING_AWAY, "gateway shutting down")
            else:
                reason = "missing topic" if not topic else "invalid or expired token for this topic"
                peer.close(CLOSE_POLICY, reason)
            await peer.run(_ignore, _ignore)
            return
        pid = grant.participant_id
        conn = _Connection(peer, Member(pid, presence=presence_mode(query.get("presence"))))
        room = self._rooms.get(topic)
        if room is None:
            history = History(self.config.history_limit) if self.cluster is None else History(0)
            room = self._rooms[topic] = Room(topic, history, self.cluster, self._clock)
        room.admit(conn, self._remote(topic), self._history(topic))
        try:
            await peer.run(
                lambda text: self._on_frame(conn, room, text),
                lambda error, message: self._reject(conn, FrameRejected(error, message)),
            )
        finally:
            if room.remove(pid, conn) is not None:
                room.announce(conn, "leave")
                if not room.members and self._rooms.get(topic) is room:
                    del self._rooms[topic]

    def _reject(self, conn: _Connection, rejected: FrameRejected) -> None:
        logger.info("rejected a frame from %r: %s", conn.participant_id, rejected.message)
        conn.enqueue(error_frame(conn.participant_id, rejected))

    def _on_frame(self, conn: _Connection, room: Room, text: str) -> None:
        pid = conn.participant_id
        if room.members.get(pid) is not conn:
            return  # a replaced connection's last frames
        if len(text) > self.config.max_message_bytes:
            self._reject(conn, FrameRejected("too_large", "frame exceeds the size limit"))
            return
        key = f"{room.topic}\x00{pid}"
        if not self._limiter.allow(key):
            self._reject(conn, over_rate(text, self._limiter, key))  # every one: never silently
            return
        try:
            envelope = check_client_frame(text, pid)
        except FrameRejected as rejected:
            self._reject(conn, rejected)
            return
        room.settle(pid)
        recipients: list[str] = envelope["to"]
        if not recipients:
            room.broadcast(text, exclude=pid)
            if self.cluster is None:
                room.history.add(envelope)
            else:
                self.cluster.broadcast(room.topic, text, pid)
            return
        missing: list[str] = []
        for recipient in dict.fromkeys(recipients):
            target = room.members.get(recipient)
            if target is not None:
                target.enqueue(text)
            elif self.cluster is not None:  # on another gateway, or refused by the cluster
                self.cluster.send(room.topic, recipient, text, self._refuser(conn, envelope), pid)
            else:
                missing.append(recipient)
        if missing:
            message = f"not in topic {room.topic!r}: {', '.join(missing)}"
            self._reject(conn, FrameRejected("unknown_recipient", message, envelope["id"]))

    def _refuser(self, conn: _Connection, envelope: dict[str, Any]) -> Callable[[str, str], None]:
        return lambda error, message: self._reject(conn, FrameRejected(error, message, envelope["id"]))
