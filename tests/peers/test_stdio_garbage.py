"""A stdio server that writes something other than JSON-RPC on its stdout.

Before the handshake is done, whatever it wrote (text, partial JSON, JSON that is not JSON-RPC,
bytes that are not UTF-8) fails the peer at once with one clear line, instead of running out the
connect timeout; after the handshake a stray line is tolerated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcpx_router import PeerUnavailableError, Router, StdioPeer
from mcpx_router.cli import main

SERVER = Path(__file__).parent.parent / "support" / "cli_stdio_server.py"
FAST = 5.0
"""Seconds a chatty server's call may take."""
NEVER = 3600.0
"""The connect timeout where a server that wrote garbage must be failed at once: were the join to
wait for it instead, the test's own timeout would fail it, however busy the machine."""

_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def server(*args: str, mark: Path | None = None) -> StdioPeer:
    extra = ["--mark", str(mark)] if mark is not None else []
    return StdioPeer(sys.executable, [str(SERVER), *args, *extra])


def is_jsonrpc(line: bytes) -> bool:
    """Whether the `mcp` SDK would take this line as a JSON-RPC message."""
    try:  # bytes that are not UTF-8 are replaced, as the Router asks of the SDK
        mcp_types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
    except ValueError:  # not JSON, or not JSON-RPC
        return False
    return True


_MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}},
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}},
    {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}},
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
jsonrpc_like = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": json_values},
    optional={"method": json_values, "result": json_values, "error": json_values, "params": json_values},
)
garbage_lines = st.one_of(
    st.text(max_size=120).map(str.encode),  # a banner, a log line
    st.tuples(st.sampled_from(_MESSAGES), st.floats(0, 0.999)).map(  # a message cut short
        lambda pair: (text := json.dumps(pair[0]))[: int(len(text) * pair[1])].encode()
    ),
    json_values.map(lambda value: json.dumps(value).encode()),  # JSON, not JSON-RPC
    jsonrpc_like.map(lambda value: json.dumps(value).encode()),  # almost JSON-RPC
    st.binary(min_size=1, max_size=64),  # bytes, mostly not UTF-8
).map(lambda line: line.split(b"\n")[0])


def expected_reason(line: bytes) -> str:
    """The start of the error that `line`, written before the handshake, must give."""
    text = line.decode("utf-8", "replace")
    start = "the server wrote something that is not JSON-RPC on stdout: "
    try:
        json.loads(text)
    except ValueError:
        if not text.strip():
            return start + ("an empty line" if not text else f"a blank line {text!r}")
        return start + repr(text if len(text) <= 40 else text[:39] + "…")
    return start  # JSON, shown as the SDK parsed it


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def started_pid(mark: Path) -> int:
    [line] = [line for line in mark.read_text().splitlines() if line.startswith("started ")]
    return int(line.split()[1])


@pytest.mark.anyio
@settings(max_examples=60, deadline=None, suppress_health_check=_HEALTH)
@given(line=garbage_lines)
async def test_garbage_before_the_handshake_fails_the_peer_at_once(
    line: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assume(not is_jsonrpc(line))
    mark = tmp_path_factory.mktemp("garbage") / "mark"
    async with Router(connect_timeout=NEVER) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("x", server("--before", (line + b"\n").hex(), mark=mark))
        assert router.peers == () and router.tools == ()
        message = str(caught.value)
        assert caught.value.peer == "x"
        assert message.startswith(f"peer 'x': {expected_reason(line)}"), message
        assert message.endswith("its logs belong on stderr)") and "\n" not in message
    assert not alive(started_pid(mark))  # nothing is left behind


@pytest.mark.anyio
@settings(max_examples=25, deadline=None, suppress_health_check=_HEALTH)
@given(lines=st.lists(garbage_lines, min_size=1, max_size=5))
async def test_a_chatty_server_is_tolerated_after_the_handshake(lines: list[bytes]) -> None:
    chatter = b"".join(line + b"\n" for line in lines if not is_jsonrpc(line))
    assume(chatter)
    async with Router() as router:
        names = await router.join("chatty", server("--after", chatter.hex()))
        assert names == ("chatty__echo", "chatty__wait")
        for text in ("one", "two"):
            outcome = await router.call("chatty__echo", {"text": text}, call_timeout=FAST)
            assert (outcome.is_error, outcome.text) == (False, text)


def _config(tmp_path: Path, **servers: list[str]) -> Path:
    file = tmp_path / "mcp.json"
    entries: dict[str, Any] = {
        name: {"command": sys.executable, "args": [str(SERVER), *args]} for name, args in servers.items()
    }
    file.write_text(json.dumps({"mcpServers": entries}))
    return file


@settings(max_examples=40, deadline=None, suppress_health_check=_HEALTH)
@given(line=garbage_lines)
def test_tools_command_reports_garbage_in_one_line(
    line: bytes, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    assume(not is_jsonrpc(line))
    tmp = tmp_path_factory.mktemp("config")
    config = _config(tmp, bad=["--before", (line + b"\n").hex()], good=[])
    capsys.readouterr()
    assert main(["tools", "--config", str(config), "--connect-timeout", str(NEVER)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "2 tools from 1 peer: good"
    [report] = err.splitlines()
    assert report.startswith(f"mcpx-router: peer 'bad': {expected_reason(line)}"), report


def test_messages_cut_short_come_from_whole_ones() -> None:
    """A prefix of these is partial JSON-RPC only if the whole is JSON-RPC."""
    for message in _MESSAGES:
        assert is_jsonrpc(json.dumps(message).encode())


QUITTER = """
import os, sys, time
sys.stdout.write("started with --api-key ***\\n")
sys.stdout.flush()
os.close(0)  # it reads no more: the handshake sent to it fails to be written
os.close(1)
open(sys.argv[1], "w").close()
time.sleep(30)
"""


@pytest.mark.anyio
async def test_what_a_server_wrote_before_it_stopped_reading_reaches_a_late_session(tmp_path: Path) -> None:
    """The write of the handshake fails (the server closed its stdin); a session that reads only
    afterwards, as a busy one does, still gets the line the server wrote, then the end."""
    import mcp
    from mcp.shared.message import SessionMessage

    from mcpx_router.peers.wire._answers import Exchange, Strays
    from mcpx_router.peers.wire._stdio import stdio_transport

    mark = tmp_path / "closed"
    params = mcp.StdioServerParameters(command=sys.executable, args=["-c", QUITTER, str(mark)])
    with anyio.fail_after(30):
        async with stdio_transport(params, Exchange("quitter", Strays("quitter"))) as (read, write):
            while not mark.exists():  # noqa: ASYNC110 - another process writes it
                await anyio.sleep(0.05)
            request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params={})
            await write.send(SessionMessage(request))
            await anyio.sleep(0.5)  # the write has failed by now; the session has not read yet
            first = await read.receive()
            assert isinstance(first, ValueError) and "started with --api-key ***" in str(first)
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
