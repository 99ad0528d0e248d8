"""One stdio MCP server process behind the bridge: the JSON-RPC plumbing between it and the topic.

Several participants share one session: their JSON-RPC ids are rewritten towards the server
(they may use the same ids) and restored on the way back, so each response reaches its
requester, addressed and correlated. The first `initialize` is passed through and its result is
replayed to later participants of the session; `notifications/initialized` is forwarded once.
Progress tokens are rewritten the same way as ids; cancellations are mapped. The server's own
requests are not routed to participants: `ping` is answered here, anything else gets "method not
found". Which participant uses which session is the bridge's choice (see `_bridge`).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.os.posix.utilities import terminate_posix_process_tree

from .._envelope import Envelope
from .._errors import BridgeError
from .._rpc import INTERNAL_ERROR, METHOD_NOT_FOUND, IdKey, classify, error_response, id_key
from ..client._routes import Sender

logger = logging.getLogger("mcpx_router.mcpx.bridge")

MAX_LINE = 16 * 1024 * 1024
_STREAM_ENDED = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)


def asked_version(payload: Mapping[str, Any]) -> str:
    """The protocol version an `initialize` request asks for ("" when it names none)."""
    params = payload.get("params")
    version = params.get("protocolVersion") if isinstance(params, Mapping) else None
    return version if isinstance(version, str) else ""


@dataclass(slots=True)
class _Route:
    peer: str
    request_id: int | str
    envelope_id: str
    method: str
    progress_token: int | None = None


class StdioSession:
    """One running server process and the participants that use it."""

    def __init__(self, topic: Sender, process: anyio.abc.Process) -> None:
        self.topic = topic
        self.process = process
        self.exited = anyio.Event()
        self.requested_version: str | None = None
        """The protocol version its first `initialize` asked for (None: not asked yet)."""
        self._stdin_send, self._stdin_recv = anyio.create_memory_object_stream[bytes](1024)
        self._next_id = 0
        self._routes: dict[int, _Route] = {}
        self._by_request: dict[tuple[str, IdKey], int] = {}
        self._progress: dict[int, tuple[str, Any, str]] = {}  # our token -> (peer, token, envelope id)
        self._init_result: dict[str, Any] | None = None
        self._init_waiters: list[tuple[str, int | str, str]] = []
        self._init_in_flight = False
        self._initialized_sent = False
        self._peers: set[str] = set()
        self._stray_seen = False
        self.on_negotiated: Callable[[StdioSession], None] | None = None
        """Called once the server has answered this session's `initialize`."""

    @property
    def peers(self) -> frozenset[str]:
        """Participants that have talked to the server through this session."""
        return frozenset(self._peers)

    def adopt(self, peer: str) -> None:
        """Take over a participant that was answered by another session with the same version."""
        self._peers.add(peer)

    @property
    def negotiated_version(self) -> str | None:
        """The protocol version the server answered its `initialize` with (None: not yet)."""
        version = self._init_result.get("protocolVersion") if self._init_result is not None else None
        return version if isinstance(version, str) else None

    def serves(self, version: str) -> bool:
        """Whether a participant asking for `version` gets this session's answer: the server
        was asked for it here, or answered with it."""
        return version in (self.requested_version, self.negotiated_version)

    # -- towards the server -------------------------------------------------------------------

    def _write(self, message: Mapping[str, Any]) -> bool:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            self._stdin_send.send_nowait(line)
        except anyio.WouldBlock:
            logger.warning("the bridged server does not read its input; dropping a message")
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def _reply(self, peer: str, envelope_id: str, payload: dict[str, Any]) -> None:
        self.topic._send_nowait(self.topic.envelope("mcp", payload, to=(peer,), correlation_id=envelope_id))

    def _forward(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> int | None:
        self._next_id += 1
        new_id = self._next_id
        route = _Route(peer, payload["id"], envelope.id, payload["method"])
        out = dict(payload, id=new_id)
        params = payload.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(params, dict) and isinstance(meta, dict) and "progressToken" in meta:
            route.progress_token = new_id
            self._progress[new_id] = (peer, meta["progressToken"], envelope.id)
            out["params"] = dict(params, _meta=dict(meta, progressToken=new_id))
        key = id_key(payload["id"])
        assert key is not None
        self._routes[new_id] = route
        self._by_request[(peer, key)] = new_id
        if not self._write(out):
            self._drop_route(new_id)
            return None
        return new_id

    def _drop_route(self, new_id: int) -> _Route | None:
        route = self._routes.pop(new_id, None)
        if route is not None:
            key = id_key(route.request_id)
            if key is not None:
                self._by_request.pop((route.peer, key), None)
            if route.progress_token is not None:
                self._progress.pop(route.progress_token, None)
        return route

    # -- from the participants the bridge gave this session -----------------------------------

    def on_request(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        if payload["method"] == "initialize" and self.requested_version is None:
            self.requested_version = asked_version(payload)
        if self.exited.is_set():
            self._reply(peer, envelope.id, error_response(payload["id"], INTERNAL_ERROR, "server exited"))
            return
        self._peers.add(peer)
        if payload["method"] != "initialize":
            if self._forward(peer, payload, envelope) is None:
                self._reply(peer, envelope.id, error_response(payload["id"], INTERNAL_ERROR, "server busy"))
            return
        if self._init_result is not None:
            self._reply(
                peer, envelope.id, {"jsonrpc": "2.0", "id": payload["id"], "result": self._init_result}
            )
            return
        self._init_waiters.append((peer, payload["id"], envelope.id))
        if not self._init_in_flight:
            self._init_in_flight = self._forward(peer, payload, envelope) is not None

    def on_notification(self, peer: str, payload: dict[str, Any], envelope: Envelope) -> None:
        method = payload["method"]
        if method == "notifications/initialized":
            if self._init_result is not None and not self._initialized_sent:
                self._initialized_sent = self._write(payload)
            return
        if method == "notifications/cancelled":
            params = payload.get("params")
            key = id_key(params.get("requestId")) if isinstance(params, dict) else None
            new_id = self._by_request.get((peer, key)) if key is not None else None
            if new_id is not None and isinstance(params, dict):
                self._drop_route(new_id)
                self._write(dict(payload, params=dict(params, requestId=new_id)))
            return
        self._write(payload)

    def on_peer_gone(self, peer: str) -> None:
        self._peers.discard(peer)
        self._init_waiters = [w for w in self._init_waiters if w[0] != peer]
        for new_id in [i for i, r in self._routes.items() if r.peer == peer and r.method != "initialize"]:
            self._drop_route(new_id)
            cancel = {"requestId": new_id, "reason": "participant left"}
            self._write({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})

    def on_connection_lost(self) -> None:
        for peer in list(self._peers):
            self.on_peer_gone(peer)

    # -- from the server ----------------------------------------------------------------------

    def _on_server_message(self, message: dict[str, Any]) -> None:
        kind = classify(message)
        if kind == "response":
            self._on_server_response(message)
        elif kind == "request":
            if message["method"] == "ping":
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            else:
                text = f"{message['method']} is not available through the MCPx bridge"
                self._write(error_response(message["id"], METHOD_NOT_FOUND, text))
        elif kind == "notification":
            self._on_server_notification(message)
        else:
            self._stray(json.dumps(message, ensure_ascii=False))

    def _on_server_response(self, message: dict[str, Any]) -> None:
        server_id = message.get("id")
        route = self._drop_route(server_id) if isinstance(server_id, int) else None
        if route is None:
            logger.warning("ignoring a response for unknown id %r from the bridged server", server_id)
            return
        if route.method != "initialize":
            self._reply(route.peer, route.envelope_id, dict(message, id=route.request_id))
            return
        self._init_in_flight = False
        if isinstance(message.get("result"), dict):
            self._init_result = message["result"]
        waiters, self._init_waiters = self._init_waiters, []
        for peer, request_id, envelope_id in waiters:
            self._reply(peer, envelope_id, dict(message, id=request_id))
        if self.on_negotiated is not None and self._init_result is not None:
            self.on_negotiated(self)

    def _on_server_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params")
        if method == "notifications/progress":
            token = params.get("progressToken") if isinstance(params, dict) else None
            target = self._progress.get(token) if isinstance(token, int) else None
            if target is not None and isinstance(params, dict):
                peer, original, envelope_id = target
                out = dict(message, params=dict(params, progressToken=original))
                self.topic._send_nowait(
                    self.topic.envelope("mcp", out, to=(peer,), correlation_id=envelope_id)
                )
            return
        if method == "notifications/cancelled" or not self._peers:
            return
        self.topic._send_nowait(self.topic.envelope("mcp", message, to=tuple(sorted(self._peers))))

    # -- process I/O --------------------------------------------------------------------------

    def _stray(self, text: str) -> None:
        """A line that is not JSON-RPC: a warning the first time (a server that does nothing else
        should be noticed), then debug records (a chatty server is not an error)."""
        excerpt = repr(text if len(text) <= 40 else text[:39] + "…")
        if self._stray_seen:
            logger.debug("ignoring a line that is not JSON-RPC from the bridged server: %s", excerpt)
            return
        self._stray_seen = True
        logger.warning(
            "ignoring a line that is not JSON-RPC from the bridged server: %s (more are logged at debug)",
            excerpt,
        )

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        reader = BufferedByteReceiveStream(self.process.stdout)
        try:
            while True:
                line = await reader.receive_until(b"\n", MAX_LINE)
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if isinstance(message, dict):
                    self._on_server_message(message)
                else:
                    self._stray(line.decode("utf-8", "replace"))
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ):
            pass  # the server closed its output: it has exited, which `exited` reports
        except anyio.DelimiterNotFound:
            logger.error("the bridged server wrote a line longer than %d bytes", MAX_LINE)
        finally:
            self.exited.set()

    async def _write_stdin(self) -> None:
        assert self.process.stdin is not None
        try:
            async with self._stdin_recv:
                async for line in self._stdin_recv:
                    await self.process.stdin.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self.exited.set()
        finally:
            await self.process.stdin.aclose()

    async def _shutdown(self, grace: float) -> None:
        with anyio.CancelScope(shield=True):
            self._stdin_send.close()
            with anyio.move_on_after(grace):
                await self.process.wait()
            if self.process.returncode is None:
                await _terminate(self.process, grace)
                await self.process.wait()


async def _terminate(process: anyio.abc.Process, grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace`, to the server and everything it started (its group)."""
    if sys.platform == "win32":  # no process groups: the server alone
        process.kill()
        return
    await terminate_posix_process_tree(process, grace)


@asynccontextmanager
async def open_session(
    topic: Sender,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[StdioSession]:
    """Spawn `command` (in a process group of its own) and pump its stdio until the block ends;
    then close its input, and after `shutdown_grace` seconds terminate its group."""
    if not command:
        raise ValueError("the bridge needs a command to run")
    try:
        process = await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise BridgeError(f"cannot start {command[0]!r}: {exc}") from exc
    session = StdioSession(topic, process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session._read_stdout)
            tg.start_soon(session._write_stdin)
            try:
                yield session
            finally:
                await session._shutdown(shutdown_grace)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
