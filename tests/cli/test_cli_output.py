"""What the commands print on standard error: our own one-line messages, and the records of the
libraries underneath only with `-v`; `--connect-timeout` on every command that opens peers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpx_router.cli import main

SERVER = Path(__file__).parent.parent / "support" / "cli_stdio_server.py"
COMMAND = [sys.executable, "-m", "mcpx_router"]
CHATTER = b"".join(f"Hello world {i}\n".encode() for i in range(20))
"""What a chatty server writes on stdout after every answer."""


def config(tmp_path: Path, *args: str, **extra: Any) -> Path:
    file = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), *args], **extra}
    file.write_text(json.dumps({"mcpServers": {"x": entry}}))
    return file


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60, env=env)


def test_a_chatty_server_is_warned_of_in_one_line(tmp_path: Path) -> None:
    file = config(tmp_path, "--after", CHATTER.hex())
    warning = (
        "mcpx-router: peer 'x' wrote a line that is not JSON on stdout, which was ignored: "
        "'Hello world 0' (further such lines are counted, not logged)\n"
    )
    quiet = run("tools", "--config", str(file))
    assert (quiet.returncode, quiet.stderr) == (0, warning)
    assert [line.split("(")[0] for line in quiet.stdout.splitlines()][:2] == ["x__echo", "x__wait"]
    answer = run("call", "x__echo", '{"text": "hi"}', "--config", str(file))
    assert (answer.returncode, answer.stdout) == (0, "hi\n")
    assert answer.stderr.count("wrote a line that is not JSON") == 1

    verbose = run("tools", "--config", str(file), "-vv")
    assert verbose.returncode == 0 and verbose.stdout == quiet.stdout
    assert "Traceback" not in verbose.stderr and "Failed to parse JSONRPC" not in verbose.stderr
    assert verbose.stderr.count("wrote a line that is not JSON") == 1


def test_a_server_that_writes_garbage_first_fails_in_one_line_at_once(tmp_path: Path) -> None:
    file = config(tmp_path, "--before", b"Hello world, starting up\n".hex())
    # Failed at once: with an hour's connect timeout, waiting for it would outlast run()'s 60 s.
    done = run("tools", "--config", str(file), "--connect-timeout", "3600")
    assert done.returncode == 1
    assert done.stderr == (
        "mcpx-router: peer 'x': the server wrote something that is not JSON-RPC on stdout: "
        "'Hello world, starting up'; an MCP server must write only JSON-RPC messages on stdout "
        "(its logs belong on stderr)\n"
    )


def test_our_own_warnings_still_show_in_one_line(tmp_path: Path) -> None:
    file = config(tmp_path, excludeTool=["echo"])  # a misspelt key: what the warning is for
    done = run("tools", "--config", str(file))
    assert done.returncode == 0
    assert done.stderr == f"mcpx-router: {file}: server 'x': ignoring unknown keys excludeTool\n"


def _chat_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return env | {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x", "OPENAI_MODEL": "m"}


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["tools"], None),
        (["call", "x__echo", "{}"], None),
        (["chat", "--prompt", "hi"], _chat_env()),
    ],
    ids=["tools", "call", "chat"],
)
def test_connect_timeout_bounds_a_server_that_never_answers(
    tmp_path: Path, args: list[str], env: dict[str, str] | None
) -> None:
    file = config(tmp_path, "--hang")
    done = run(*args, "--config", str(file), "--connect-timeout", "0.5", env=env)  # 60 s: no hang
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert "could not connect to peer 'x'" in lines[0] and "within 0.5 s (connect_timeout)" in lines[0]
    # once; a call adds that the tool is not there, a chat that nothing is left to talk with
    assert (
        lines[1:]
        == {
            "tools": [],
            "call": [
                'mcpx-router: there is no tool named "x__echo" among the servers that connected (x could not)'
            ],
            "chat": ["mcpx-router: no server could connect; there is nothing to chat with"],
        }[args[0]]
    )


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_connect_timeout_must_be_a_positive_number(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["tools", "--connect-timeout", value])
    assert exit.value.code == 2
    assert "argument --connect-timeout: expected a" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["tools", "call", "chat", "demo", "gateway", "bridge"])
def test_every_command_takes_verbose(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([name, "--help"])
    usage = capsys.readouterr().out
    assert "-v, --verbose" in usage
    assert ("--connect-timeout SECONDS" in usage) == (name != "gateway")


def test_a_bridged_server_that_chats_is_said_once(tmp_path: Path) -> None:
    from .test_cli_signals import command, interrupt, listening, marked, until

    mark = tmp_path / "mark"
    server = [sys.executable, str(SERVER), "--before", CHATTER.hex(), "--mark", str(mark)]
    with command("gateway", "--port", "0") as gateway:
        topic = ["--gateway", listening(gateway), "--topic", "room", "--id", "x"]
        with command("bridge", *topic, "--", *server) as bridge:
            until(marked(mark, "started"), "the bridged server to start")
            assert bridge.stderr is not None
            assert bridge.stderr.readline() == (
                "mcpx-router: ignoring a line that is not JSON-RPC from the bridged server: "
                "'Hello world 0' (more are logged at debug)\n"
            )
            assert interrupt(bridge) == ""  # the other 19 lines were not shown
        interrupt(gateway, children=0)
