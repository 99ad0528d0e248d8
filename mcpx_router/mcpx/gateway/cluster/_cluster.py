"""Many gateways serving the same topics through NATS (`GatewayConfig(nats=...)`; asyncio only).

Subjects, under a prefix (`mcpx` by default):

- `<prefix>.b.<topic>`: a topic's broadcast frames and presence, captured by the JetStream
  stream `<PREFIX>_HISTORY` (the last `history_limit` per topic). Every gateway reads the stream
  with an ordered consumer: what was there at start is history, what follows is delivered to
  its own participants, except the frames it published itself (it delivered those already).
- `<prefix>.d.<topic>.<participant>`: frames addressed to one participant; only the gateway
  holding that participant's connection subscribes (core NATS, no storage). Each is answered
  on `<prefix>.r.<gateway>.<n>`: delivered or not; one not delivered waits for its recipient
  while it moves between gateways (`_cluster_direct`).
- `<prefix>.hb`: each gateway's heartbeat, every `heartbeat` seconds, listing the participants
  it holds. A gateway silent for three heartbeats is dead: its participants leave every roster.

Topic and participant ids go into subjects as unpadded base64url (`encode_token`). nats-py runs
on asyncio only, so this mode does too: on trio, `MCPxClusterError` says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import sniffio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..._errors import MCPxClusterError
from .._gateway_state import History, system_frame
from ._cluster_direct import H_PARTICIPANT, DirectFrames
from ._cluster_state import (
    Change,
    HeartbeatParts,
    Member,
    Placement,
    SharedRoster,
    decode_token,
    encode_token,
    heartbeat_messages,
    heartbeat_stamp,
)
from ._handover import Refuse

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS
    from nats.aio.msg import Msg

__all__ = ["Cluster", "ClusterHost"]

logger = logging.getLogger("mcpx_router.mcpx.gateway")

EXPIRY_BEATS: Final = 3
"""Heartbeats a gateway may miss before it counts as dead."""
_FIRST_ATTEMPTS: Final = 5
"""Attempts (half a second apart) to reach NATS at start, before the gateway gives up."""
_H_GATEWAY, _H_CONN, _H_PRESENCE, _H_PID = "Mcpx-Gateway", "Mcpx-Conn", "Mcpx-Presence", H_PARTICIPANT
_H_MOVE = "Mcpx-Move"
"""On a `leave`: its gateway is stopping, the participant will connect elsewhere (hold its frames)."""


class ClusterHost(Protocol):
    """What the cluster needs of the gateway it serves (see `Gateway`)."""

    def local_members(self) -> Iterable[Member]: ...
    def local_conn(self, topic: str, participant_id: str) -> str | None: ...
    def deliver(self, topic: str, text: str, *, to: str | None = None, sender: str | None = None) -> bool: ...
    def replace(self, topic: str, participant_id: str) -> None: ...
    def presence(self, topic: str, participant_id: str, event: str, text: str) -> None: ...


class Cluster:
    """This gateway's link to the others (see the module docstring), while `running()` lasts."""

    def __init__(
        self,
        host: ClusterHost,
        servers: Sequence[str],
        *,
        prefix: str = "mcpx",
        heartbeat: float = 2.0,
        history_limit: int = 100,
        replicas: int = 1,
        connect_timeout: float = 10.0,
        handover: float = 5.0,
    ) -> None:
        self.gateway_id = uuid.uuid4().hex
        self._host = host
        self._servers = list(servers)
        self._prefix = prefix
        self._stream = f"{prefix.upper().replace('-', '_')}_HISTORY"
        self._heartbeat = heartbeat
        self._history_limit = history_limit
        self._replicas = replicas
        self._connect_timeout = connect_timeout
        self.roster = SharedRoster(self.gateway_id, heartbeat * EXPIRY_BEATS, host.local_conn)
        self._histories: dict[str, History] = {}
        self._ops: MemoryObjectSendStream[tuple[Any, ...]] | None = None
        self._subs: dict[tuple[str, str], Any] = {}
        self._loaded_upto = 0
        self._loaded = anyio.Event()
        self._nc: NATS | None = None
        self._closing = False
        self._beats = HeartbeatParts()
        self.direct = DirectFrames(host, self.roster, prefix, self.gateway_id, self._op, handover)

    # -- what the gateway reads ---------------------------------------------------------------

    def remote(self, topic: str) -> dict[str, Mapping[str, Any]]:
        """The participants of `topic` connected to other gateways, with their roster entries."""
        return {pid: p.info for pid, p in self.roster.remote(topic).items()}

    def history(self, topic: str) -> History:
        if topic not in self._histories:
            self._histories[topic] = History(self._history_limit)
        return self._histories[topic]

    def topics(self) -> set[str]:
        return self.roster.topics()

    # -- what the gateway tells ---------------------------------------------------------------

    def joined(self, topic: str, pid: str, conn: str, text: str) -> None:
        """`pid` connected here (connection `conn`); `text` is its `join` frame."""
        self.roster.taken_over(topic, pid, time.monotonic())
        self._op("sub", topic, pid)
        self._publish(self._broadcast_subject(topic), text, {_H_PRESENCE: "join", _H_PID: pid, _H_CONN: conn})
        self.direct.arrived(topic, pid)

    def left(self, topic: str, pid: str, conn: str, text: str | None) -> None:
        """`pid`'s connection `conn` here ended; `text` is its `leave` frame (None: it was replaced)."""
        if self._host.local_conn(topic, pid) is None:
            self._op("unsub", topic, pid)
        if text is not None:
            headers = {_H_PRESENCE: "leave", _H_PID: pid, _H_CONN: conn}
            if self.direct.stopping:
                headers[_H_MOVE] = "1"
            self._publish(self._broadcast_subject(topic), text, headers)

    def broadcast(self, topic: str, text: str, sender: str) -> None:
        """A frame our participant `sender` broadcast (already delivered to our own)."""
        self._publish(self._broadcast_subject(topic), text, {_H_PID: sender})

    def send(self, topic: str, pid: str, text: str, on_fail: Refuse, sender: str) -> None:
        """An addressed frame for `pid`, who is not ours: `on_fail(error, message)` runs when it
        was not delivered (see `DirectFrames`), at once while our link to NATS is down."""
        if self._nc is None or not self._nc.is_connected:
            message = "the gateways cannot reach each other now (NATS is down); send it again shortly"
            on_fail("unavailable", message)
        else:
            self.direct.send(topic, pid, text, on_fail, self._headers({_H_PID: sender}))

    def stopping(self) -> None:
        """The gateway is stopping: our participants' leaves are moves (the others hold their frames)."""
        self.direct.stopping = True

    # -- the task -----------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Connect, load the history, follow the others until the block ends.

        Raises:
            MCPxClusterError: On trio, without nats-py, or when NATS (with JetStream) cannot be used.
        """
        nc = await self._connect()
        self._nc = nc
        self._ops, ops = anyio.create_memory_object_stream[tuple[Any, ...]](math.inf)
        try:
            try:
                await self._load(nc)
            except Exception as exc:
                raise MCPxClusterError(
                    f"NATS at {', '.join(self._servers)} cannot keep the topics' history: {exc}; "
                    "is JetStream enabled (nats-server -js)?"
                ) from None
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._drain, ops)
                tg.start_soon(self._beat)
                tg.start_soon(self.direct.run)
                yield
                tg.cancel_scope.cancel()
        finally:
            self._closing = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(2 + self.direct.frames.hold):
                # What is still queued (our participants' leaves, as the gateway stops) goes out,
                # and the frames for them that the others answer "not delivered" reach them where
                # they connect next, for at most the hand-over time.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._drain, ops)
                    await self.direct.settle(self.direct.frames.hold)
                    self._ops.close()
                with contextlib.suppress(Exception):
                    await nc.flush(timeout=1)
            self._ops.close()
            ops.close()
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await nc.close()

    async def _connect(self) -> NATS:
        if sniffio.current_async_library() != "asyncio":
            raise MCPxClusterError(
                "the NATS mode of the gateway runs on asyncio only (the NATS client, nats-py, is "
                "asyncio-only): run it with anyio.run(..., backend='asyncio'), or leave out `nats`"
            )
        try:
            import nats
        except ImportError:
            raise MCPxClusterError("the NATS mode needs nats-py: pip install 'mcpx-router[nats]'") from None

        async def on_disconnected() -> None:
            if not self._closing:
                logger.warning("lost the connection to NATS; reconnecting")

        async def on_reconnected() -> None:
            logger.info("reconnected to NATS")
            self.roster.restart_clocks(time.monotonic())

        async def on_error(exc: Exception) -> None:
            logger.info("NATS: %s", exc)

        try:
            nc = await nats.connect(
                servers=self._servers,
                name=f"mcpx-gateway-{self.gateway_id}",
                connect_timeout=max(1, math.ceil(self._connect_timeout)),
                reconnect_time_wait=0.5,
                max_reconnect_attempts=_FIRST_ATTEMPTS,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                error_cb=on_error,
            )
        except Exception as exc:
            servers = ", ".join(self._servers)
            raise MCPxClusterError(
                f"could not connect to NATS at {servers}: {exc}; is nats-server running (with -js)?"
            ) from None
        nc.options["max_reconnect_attempts"] = -1  # once connected, reconnect for as long as we run
        return nc

    async def _load(self, nc: NATS) -> None:
        """Make sure the history stream exists; read it, then follow it live."""
        from nats.js.api import DeliverPolicy, StorageType
        from nats.js.errors import NotFoundError

        js = nc.jetstream()
        limit = max(1, self._history_limit)
        subjects = [f"{self._prefix}.b.>"]
        try:
            info = await js.stream_info(self._stream)
        except NotFoundError:
            info = await js.add_stream(
                name=self._stream,
                subjects=subjects,
                max_msgs_per_subject=limit,
                storage=StorageType.FILE,
                num_replicas=self._replicas,
            )
        else:  # made by another gateway, or edited by the operator: its settings win
            kept = info.config.max_msgs_per_subject
            if kept != limit:
                logger.info("stream %s keeps %s broadcasts per topic (not %d)", self._stream, kept, limit)
        self._loaded_upto = info.state.last_seq
        if self._loaded_upto == 0:
            self._loaded.set()
        await nc.subscribe(f"{self._prefix}.hb", cb=self._on_heartbeat)
        await nc.subscribe(f"{self.direct.inbox}.*", cb=self.direct.on_answer)
        await js.subscribe(
            subjects[0],
            cb=self._on_broadcast,
            ordered_consumer=True,
            idle_heartbeat=1.0,
            deliver_policy=DeliverPolicy.ALL,
        )
        with anyio.fail_after(30):
            await self._loaded.wait()

    async def _drain(self, ops: MemoryObjectReceiveStream[tuple[Any, ...]]) -> None:
        assert self._nc is not None
        async for op in ops:
            await self._do(self._nc, op)

    async def _do(self, nc: NATS, op: tuple[Any, ...]) -> None:
        try:
            if op[0] == "pub":  # ("pub", subject, data, headers[, reply])
                await nc.publish(op[1], op[2], reply=op[4] if len(op) > 4 else "", headers=op[3])
            elif op[0] == "sub":
                key = (op[1], op[2])
                if key not in self._subs:
                    subject = f"{self._prefix}.d.{encode_token(op[1])}.{encode_token(op[2])}"
                    self._subs[key] = await nc.subscribe(subject, cb=self.direct.on_direct)
            elif op[0] == "unsub":
                sub = self._subs.pop((op[1], op[2]), None)
                if sub is not None and self._host.local_conn(op[1], op[2]) is None:
                    await sub.unsubscribe()
                elif sub is not None:
                    self._subs[(op[1], op[2])] = sub  # it came back meanwhile
        except Exception as exc:  # NATS down: the frame is lost, as a dropped connection's would be
            logger.warning("NATS: %s failed: %s", op[0], exc)

    async def _beat(self) -> None:
        assert self._nc is not None
        while not self._closing:
            members = list(self._host.local_members())
            stopping = self.direct.stopping  # the participants it no longer lists are moving
            for body in heartbeat_messages(self.gateway_id, heartbeat_stamp(), members, stopping=stopping):
                self._op("pub", f"{self._prefix}.hb", body, None)
            if self._nc.is_connected:
                self._apply(self.roster.expire(time.monotonic()), None)
            else:
                self.roster.restart_clocks(time.monotonic())
            await anyio.sleep(self._heartbeat)

    # -- inbound ------------------------------------------------------------------------------

    async def _on_heartbeat(self, msg: Msg) -> None:
        try:
            body = json.loads(msg.data)
            whole = self._beats.add(body)
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed heartbeat on %s", msg.subject)
            return
        if whole is None:
            return  # more parts to come
        gateway, sent, members = whole
        changes = self.roster.heartbeat(gateway, members, time.monotonic(), sent)
        self._apply(changes, None, move=body.get("stopping") is True)

    async def _on_broadcast(self, msg: Msg) -> None:
        topic = decode_token(msg.subject.rsplit(".", 1)[1])
        text = msg.data.decode()
        try:
            envelope = json.loads(text)
        except ValueError:
            return
        self.history(topic).add(envelope, text)
        seq = msg.metadata.sequence.stream
        if seq <= self._loaded_upto:
            if seq == self._loaded_upto:
                self._loaded.set()
            return  # history from before we started
        headers = msg.headers or {}
        origin = headers.get(_H_GATEWAY, "")
        if origin == self.gateway_id:
            return  # ours: delivered already
        event, pid, conn = headers.get(_H_PRESENCE), headers.get(_H_PID, ""), headers.get(_H_CONN, "")
        now = time.monotonic()
        if event == "join":
            info = envelope.get("payload", {}).get("participant", {"id": pid})
            self._apply([self.roster.joined(topic, pid, Placement(origin, conn, info), now)], text)
        elif event == "leave":
            self._apply([self.roster.left(topic, pid, conn, now)], text, move=headers.get(_H_MOVE) == "1")
        else:
            self._host.deliver(topic, text, sender=pid or None)

    def _apply(self, changes: Iterable[Change | None], text: str | None, *, move: bool = False) -> None:
        """Tell our participants: the frame `text` when given, else one made for each change
        (`move`: a leave whose participant connects elsewhere next); frames wait or go on."""
        for change in changes:
            if change is None:
                continue
            if change.event == "join":
                self.direct.arrived(change.topic, change.participant_id)
            else:
                self.direct.left(change.topic, change.participant_id, move=move)
            if change.replaces_local:
                self._host.replace(change.topic, change.participant_id)
            frame = text or system_frame(
                "presence", {"event": change.event, "participant": dict(change.info)}
            )
            self._host.presence(change.topic, change.participant_id, change.event, frame)

    # -- outbound -----------------------------------------------------------------------------

    def _broadcast_subject(self, topic: str) -> str:
        return f"{self._prefix}.b.{encode_token(topic)}"

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        return {_H_GATEWAY: self.gateway_id, **extra}

    def _publish(self, subject: str, text: str, extra: dict[str, str]) -> None:
        self._op("pub", subject, text.encode(), self._headers(extra))

    def _op(self, *op: Any) -> None:
        if self._ops is None:
            return  # not running yet
        try:
            self._ops.send_nowait(op)
        except anyio.ClosedResourceError:
            pass  # the gateway is stopping
