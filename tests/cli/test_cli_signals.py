"""Ctrl-C on every command, as a terminal sends it: SIGINT to the command's whole process group.

Each command runs as a real process in a session of its own, is caught mid-work (connecting to a
server that never answers, in the middle of a call, at the chat prompt, waiting for the model,
bridging, serving), and must exit with status 130, print no traceback, and leave none of its
child processes behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVER = Path(__file__).parent.parent / "support" / "cli_stdio_server.py"
COMMAND = [sys.executable, "-m", "mcpx_router"]
WAIT = 30.0

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    return parents


def descendants(pid: int) -> set[int]:
    """Every process started, directly or not, by `pid` (that still exists)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def marked(mark: Path, text: str) -> Callable[[], bool]:
    return lambda: mark.exists() and text in mark.read_text()


@contextmanager
def command(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """Run `mcpx-router ARGS` in a session of its own; kill the session if the test fails."""
    process = subprocess.Popen(
        [*COMMAND, *args],
        stdin=subprocess.PIPE,  # left open: a chat waits at its prompt
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def interrupt(process: subprocess.Popen[str], *, children: int = 1) -> str:
    """Press Ctrl-C; check the status, the output and the children; return standard error."""
    until(lambda: len(descendants(process.pid)) >= children, "the command's child processes")
    before = descendants(process.pid)
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=WAIT)  # standard input stays open, as a terminal's does
    assert process.stderr is not None
    err = process.stderr.read()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    left = sorted(pid for pid in before if alive(pid))
    assert left == [], f"left behind: {left}"
    return err


def config(tmp_path: Path, *args: str) -> tuple[Path, Path]:
    mark = tmp_path / "mark"
    file = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": [str(SERVER), *args, "--mark", str(mark)]}
    file.write_text(json.dumps({"mcpServers": {"x": server}}))
    return file, mark


def test_tools_while_connecting(tmp_path: Path) -> None:
    file, mark = config(tmp_path, "--hang")
    with command("tools", "--config", str(file)) as process:
        until(marked(mark, "started"), "the server to start")
        assert interrupt(process) == ""


def test_call_in_the_middle_of_a_call(tmp_path: Path) -> None:
    file, mark = config(tmp_path)
    with command("call", "x__wait", "--config", str(file)) as process:
        until(marked(mark, "call wait"), "the call to reach the server")
        assert interrupt(process) == ""


def _chat_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    # Never asked: the command is interrupted before its first prompt reaches the model.
    return env | {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x", "OPENAI_MODEL": "m"}


def test_chat_waiting_at_the_prompt(tmp_path: Path) -> None:
    file, _ = config(tmp_path)
    with command("chat", "--config", str(file), env=_chat_env()) as process:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("2 tools from 1 peers: x (2)")
        assert interrupt(process) == ""


def test_chat_while_connecting(tmp_path: Path) -> None:
    file, mark = config(tmp_path, "--hang")
    with command("chat", "--config", str(file), env=_chat_env()) as process:
        until(marked(mark, "started"), "the server to start")
        assert interrupt(process) == ""


def listening(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", process.stdout.readline())
    assert found, "the gateway did not say where it listens"
    return found.group(1)


def test_gateway_while_serving() -> None:
    with command("gateway", "--port", "0") as process:
        listening(process)
        assert interrupt(process, children=0) == ""


def test_bridge_while_bridging(tmp_path: Path) -> None:
    """The server runs in a process group of its own: the Ctrl-C reaches the bridge alone,
    which stops the server quietly (the server would print a KeyboardInterrupt traceback)."""
    mark = tmp_path / "mark"
    with command("gateway", "--port", "0") as gateway:
        url = listening(gateway)
        topic = ["--gateway", url, "--topic", "room", "--id", "x"]
        with command("bridge", *topic, "--", sys.executable, str(SERVER), "--mark", str(mark)) as bridge:
            until(marked(mark, "started"), "the bridged server to start")
            assert interrupt(bridge) == ""
        assert interrupt(gateway, children=0) == ""


def test_topic_demo_in_the_middle() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    with command("demo", "--topic", env=env) as process:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("== MCPx gateway on")
        assert interrupt(process) == ""  # its child: the bridged docs server


@pytest.mark.parametrize("delay", [0.2, 0.4, 0.6, 0.8])
def test_topic_demo_interrupted_at_any_stage(delay: float) -> None:
    """Ctrl-C while participants join and leave: the Router must not start members as it closes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    with command("demo", "--topic", env=env) as process:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("== MCPx gateway on")
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=WAIT)
        assert process.stderr is not None
        err = process.stderr.read()
        assert process.returncode in (0, 130), err  # 0: the demo had finished by then
        assert "Traceback" not in err, err


@contextmanager
def silent_endpoint() -> Iterator[tuple[str, Callable[[], None]]]:
    """An OpenAI base URL whose server takes connections and never answers, and a function that
    returns once a request has connected to it."""
    accepted: list[socket.socket] = []

    def requested() -> None:
        connection, _ = server.accept()
        accepted.append(connection)

    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(WAIT)
        try:
            yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", requested
        finally:
            for connection in accepted:
                connection.close()


def _read_until(process: subprocess.Popen[str], prefix: str) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(prefix):
            return
    raise AssertionError(f"the command ended before printing {prefix!r}")


def test_demo_waiting_for_the_model() -> None:
    with silent_endpoint() as (url, requested):
        env = _chat_env() | {"OPENAI_BASE_URL": url}
        with command("demo", env=env) as process:
            _read_until(process, "user: ")
            requested()  # the request is on its way
            assert interrupt(process, children=0) == ""


def test_chat_waiting_for_the_model(tmp_path: Path) -> None:
    file, _ = config(tmp_path)
    with silent_endpoint() as (url, requested):
        env = _chat_env() | {"OPENAI_BASE_URL": url}
        with command("chat", "--config", str(file), "--prompt", "hi", env=env) as process:
            _read_until(process, "user: hi")
            requested()
            assert interrupt(process) == ""
