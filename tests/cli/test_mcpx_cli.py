"""The MCPx commands as a user runs them: `mcpx-router gateway`, `mcpx-router bridge`, `demo --topic`."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpx_router import CallProgress, PeerJoined, PeerLeft, Router
from mcpx_router.cli import main
from mcpx_router.mcpx import MCPxAuthError, static_token

from ..support.mcpx_router_support import call
from ..support.router_support import next_event

HANG_SERVER = Path(__file__).parent.parent / "support" / "mcpx_hang_server.py"
COMMAND = [sys.executable, "-m", "mcpx_router"]


def test_topic_demo_shows_participants_joining_answering_and_leaving() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [*COMMAND, "demo", "--topic"], capture_output=True, text=True, timeout=60, env=env, check=True
    )
    out = done.stdout
    assert re.search(r"MCPx gateway on http://127\.0\.0\.1:\d+; topic 'demo'", out)
    assert "The Router joined as 'planner' and handshook with 3 participants" in out
    # the merged catalogue: in-process and bridged participants, names prefixed by participant
    for name, participant in [
        ("weather__forecast", "weather"),
        ("search-agent__search", "search-agent"),
        ("docs__search", "docs"),
    ]:
        assert re.search(rf"^\s+{name}\s+participant={participant}\s", out, re.M), name
    assert re.search(r"^\s+docs__page_get_[0-9a-f]{8}\s+participant=docs\s+tool='page\.get'", out, re.M)
    # calls answered by the participant their name points to
    assert "[call_1] weather__forecast" in out and "Lisbon: sunny, 21°C, for the next 2 day(s)" in out
    assert (
        "-> participant 'docs'" in out and "docs/architecture.md: tools are published as peer__tool." in out
    )
    # a participant leaves: its tools are withdrawn, a late call is told why
    assert "PeerLeft: peer 'weather' left topic 'demo'" in out
    assert "3 tools remain: search-agent__search, docs__search, docs__page_get_" in out
    assert "Error: 'weather__forecast' is not available now: peer 'weather' left topic 'demo'." in out
    assert done.stderr == ""  # the run's 60 s timeout is what bounds it: no wall-clock bound here


def test_mcpx_commands_are_registered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert "gateway" in listing and "bridge" in listing
    with pytest.raises(SystemExit):
        main(["gateway", "--help"])
    assert "--dev-tokens" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bridge", "--help"])
    assert "--gateway" in capsys.readouterr().out


@asynccontextmanager
async def command(*args: str, new_session: bool = False) -> AsyncIterator[anyio.abc.Process]:
    """Run `mcpx-router ARGS`; kill it (and its children, in a new session) if it outlives the block."""
    process = await anyio.open_process(
        [*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=new_session
    )
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                if new_session:
                    # The group may be gone already: the loop can reap the leader before it
                    # records the return code.
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
            await process.aclose()


async def first_line(process: anyio.abc.Process) -> str:
    assert process.stdout is not None
    with anyio.fail_after(30):
        line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 4096)
    return line.decode()


@pytest.mark.anyio
async def test_gateway_and_bridge_commands_with_a_participant_killed_mid_call() -> None:
    tokens = ["--token", "hang=s3cret", "--token", "planner=p1"]  # pre-shared: no development tokens
    async with command("gateway", "--port", "0", *tokens) as gateway:
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", await first_line(gateway))
        assert found, "the gateway did not say where it listens"
        url = found.group(1)
        bridge_args = ["--gateway", url, "--topic", "room", "--id", "hang", "--token", "s3cret"]
        async with (
            command(
                "bridge", *bridge_args, "--", sys.executable, str(HANG_SERVER), new_session=True
            ) as bridge,
            Router() as router,
        ):
            with pytest.raises(MCPxAuthError):  # no token, and the gateway issues none
                await router.join_topic(url, "room", "intruder")
            with router.events() as events:
                topic = await router.join_topic(url, "room", "planner", token_provider=static_token("p1"))
                joined = await next_event(events, PeerJoined, lambda e: e.peer == "hang", within=30)
                assert joined.tools == ("hang__echo", "hang__hang") and topic.peers == ("hang",)
                [answer] = await router.dispatch([call("hang__echo", {"text": "over the bridge"})])
                assert answer["content"] == "over the bridge"

                answers: list[dict[str, Any]] = []
                async with anyio.create_task_group() as tg:

                    async def ask() -> None:
                        answers.extend(await router.dispatch([call("hang__hang", {})]))

                    tg.start_soon(ask)
                    await next_event(events, CallProgress, lambda e: e.name == "hang__hang")
                    os.killpg(bridge.pid, signal.SIGKILL)  # the bridge and its server, mid-call
                left = await next_event(events, PeerLeft, lambda e: e.peer == "hang")
            assert left.reason == "peer 'hang' left topic 'room'"
            [answer] = answers
            assert answer["content"].startswith("Error: ") and "peer 'hang'" in answer["content"]
            assert router.tools == () and topic.peers == ()
            [answer] = await router.dispatch([call("hang__echo", {"text": "anyone?"})])
            assert "peer 'hang' left topic 'room'" in answer["content"]
        gateway.send_signal(signal.SIGTERM)
        with anyio.fail_after(10):
            assert await gateway.wait() == 0


def test_the_walkthrough_of_docs_mcpx_md() -> None:
    """The shell commands of docs/mcpx.md, with development tokens, on a free port."""
    statuses: list[int] = []

    def stop(process: subprocess.Popen[str]) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        statuses.append(process.wait(timeout=20))

    with contextlib.ExitStack() as stack:
        gateway = stack.enter_context(
            subprocess.Popen([*COMMAND, "gateway", "--port", "0"], stdout=subprocess.PIPE, text=True)
        )
        stack.callback(stop, gateway)
        assert gateway.stdout is not None
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", gateway.stdout.readline())
        assert found, "the gateway did not say where it listens"
        topic = ["--gateway", found.group(1), "--topic", "room"]
        server = [sys.executable, "-m", "mcpx_router.testing", "docs"]
        bridge = stack.enter_context(
            subprocess.Popen(
                [*COMMAND, "bridge", *topic, "--id", "docs", "--", *server], start_new_session=True
            )
        )
        stack.callback(stop, bridge)
        deadline = time.monotonic() + 30
        while True:  # the bridge joins once its process has started: ask until it is listed
            tools = subprocess.run(
                [*COMMAND, "tools", *topic], capture_output=True, text=True, timeout=60, check=True
            )
            if "docs__search" in tools.stdout or time.monotonic() > deadline:
                break
        assert re.search(r"^docs__search\(query: str\)\s+Search the documentation\.$", tools.stdout, re.M)
        page = r"^docs__page_get_[0-9a-f]{8}\(path: str\)\s+Read one documentation page by path\.$"
        assert re.search(page, tools.stdout, re.M)
        assert tools.stdout.rstrip().endswith("2 tools from 1 peer: docs")
        answer = subprocess.run(
            [*COMMAND, "call", "docs__search", "query=names", *topic],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert answer.returncode == 0
        assert answer.stdout == "docs/architecture.md: tools are published as peer__tool.\n"
        wrong = subprocess.run(
            [*COMMAND, "call", "docs__serch", "query=install", *topic],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert wrong.returncode == 1
        assert (
            wrong.stderr == 'mcpx-router: there is no tool named "docs__serch"; did you mean docs__search?\n'
        )
    assert statuses == [0, 0]  # the bridge, then the gateway: both stop cleanly on SIGTERM
