"""`mcpx-router tools` and `mcpx-router call` against real stdio servers: our standard-library
server and an MCPServer with typed parameters, progress, images and errors."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpx_router.cli import main

from ..support.router_support import HTTP_SERVER, free_port, tiny

TOOLS_SERVER = Path(__file__).parent.parent / "support" / "cli_tools_server.py"
SERVER = ["--command", shlex.join([sys.executable, str(TOOLS_SERVER)])]
"""The typed server, with no config file: its peer id is `cli_tools`."""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    small = tiny()
    file = tmp_path / "mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "small": {"command": small.command, "args": list(small.args)},
                    "paged": {
                        "command": small.command,
                        "args": [*small.args, "--page-size", "3", "--tools", "2"],
                    },
                }
            }
        )
    )
    return file


def test_tools_lists_signatures_in_the_configs_order(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    builtin = ("echo", "pid", "sleep", "add_tool", "remove_tool")
    expected = [f"small__{t}" for t in builtin] + [f"paged__{t}" for t in (*builtin, "t0", "t1")]
    assert [line.split("(")[0] for line in lines[:-1]] == expected  # every page, one tool a line
    assert lines[0].split() == ["small__echo(text:", "str)", "Echo", "the", "text", "back."]
    assert lines[-1] == "12 tools from 2 peers: small, paged"


def test_signatures_show_types_optional_parameters_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", *SERVER]) == 0
    rows = {line.split("(")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["cli_tools__args"].startswith(
        "cli_tools__args(name: str, count?: int = 1, flag?: bool = false, ratio?: float = 0.5, "
        'tags?: list[str] | None = null, color?: "red" | "blue" = "red")  Answer the arguments received'
    )
    assert rows["cli_tools__args"].endswith("as JSON.")  # the first line of the description only


def test_tools_as_json(tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(config.read_text())
    data["mcpServers"]["ghost"] = {"command": str(tmp_path / "no-such-server")}
    config.write_text(json.dumps(data))
    assert main(["tools", "--config", str(config), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert len(document["tools"]) == 12
    first = document["tools"][0]
    assert set(first) == {"name", "peer", "tool", "title", "description", "signature", "inputSchema"}
    assert (first["name"], first["peer"], first["tool"]) == ("small__echo", "small", "echo")
    assert first["signature"] == "small__echo(text: str)"
    assert first["inputSchema"]["required"] == ["text"]
    assert document["peers"][:2] == [
        {"id": "small", "connected": True, "tools": 5},
        {"id": "paged", "connected": True, "tools": 7},
    ]
    ghost = document["peers"][2]
    assert ghost["id"] == "ghost" and ghost["connected"] is False and "could not connect" in ghost["error"]


def test_tools_as_the_model_receives_them(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--config", str(config), "--openai"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert len(tools) == 12 and tools[0]["type"] == "function"
    assert tools[0]["function"]["name"] == "small__echo"
    assert main(["tools", "--config", str(config), "--openai", "responses"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["name"] == "small__echo"


def test_tools_with_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", *SERVER, "--schema"]) == 0
    out = capsys.readouterr().out
    add = out[out.index("cli_tools__add(") :]
    schema = add[add.index("\n") + 1 : add.index("\ncli_tools__steps")]
    assert json.loads(schema)["required"] == ["a", "b"]


def test_call_types_key_value_arguments_by_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["call", "cli_tools__args", "name=3", "count=3", "flag=yes", "tags=a,b", "color=blue", "ratio=2"]
    assert main([*argv, *SERVER]) == 0
    received = json.loads(capsys.readouterr().out)
    assert received == {
        "name": "3",
        "count": 3,
        "flag": True,
        "tags": ["a", "b"],
        "color": "blue",
        "ratio": 2,
    }


def test_call_takes_json_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "cli_tools__args", '{"name": "x", "count": 2}', "flag=true", *SERVER]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 2
    assert main(["call", "cli_tools__args", 'name:="a=b"', 'tags:=["a,b"]', *SERVER]) == 0
    received = json.loads(capsys.readouterr().out)
    assert (received["name"], received["tags"]) == ("a=b", ["a,b"])


def test_a_tools_own_name_works_when_one_server_has_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "add", "a=2", "b=3", *SERVER]) == 0
    assert capsys.readouterr().out == "5\n"  # {"result": 5} is the text "5"


def test_call_shows_progress_and_describes_images(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "cli_tools__steps", "n=3", *SERVER]) == 0
    captured = capsys.readouterr()
    assert captured.out == "3 steps done\n"
    assert captured.err.splitlines() == [f"mcpx-router: cli_tools__steps: {i}/3 step {i}" for i in (1, 2, 3)]
    assert main(["call", "cli_tools__picture", *SERVER]) == 0
    assert capsys.readouterr().out == "[image: image/png, 66 bytes]\n"


def test_call_json_is_the_raw_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "cli_tools__add", "a=1", "b=2", "--json", *SERVER]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["structuredContent"] == {"result": 3} and result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "3"}]
    assert main(["call", "cli_tools__refuse", "reason=no", "--json", *SERVER]) == 1
    assert json.loads(capsys.readouterr().out)["isError"] is True


def test_call_errors_are_written_for_a_person(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "small__echoo", "--config", str(config)]) == 1
    assert (
        capsys.readouterr().err
        == 'mcpx-router: there is no tool named "small__echoo"; did you mean small__echo?\n'
    )
    assert main(["call", "small__sleep", '{"seconds": 5}', "--timeout", "0.2", "--config", str(config)]) == 1
    assert "mcpx-router: small__sleep did not answer within 0.2 s" in capsys.readouterr().err
    assert main(["call", "small__echo", "{text}", "--config", str(config)]) == 2
    assert "mcpx-router: the JSON object is not valid JSON" in capsys.readouterr().err
    assert main(["call", "small__echo", "text", "--config", str(config)]) == 2
    assert "mcpx-router: 'text' is not an argument: give key=value, key:=JSON" in capsys.readouterr().err


def test_call_says_what_the_arguments_lack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "cli_tools__add", "a=1", *SERVER]) == 2
    assert capsys.readouterr().err == "mcpx-router: cli_tools__add needs b: cli_tools__add(a: int, b: int)\n"
    assert main(["call", "cli_tools__add", "a=1", "b=x", *SERVER]) == 2
    assert capsys.readouterr().err == (
        "mcpx-router: b='x': expected an integer; cli_tools__add(a: int, b: int)\n"
    )
    assert main(["call", "cli_tools__add", '{"a": 1, "b": "x"}', *SERVER]) == 2
    assert capsys.readouterr().err == (
        "mcpx-router: cli_tools__add: b: 'x' is not of type 'integer': cli_tools__add(a: int, b: int)\n"
    )
    assert main(["call", "cli_tools__refuse", "reason=no", *SERVER]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "mcpx-router: cli_tools__refuse answered with an error: Error executing tool refuse"
    )


def test_tools_matching_patterns(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "paged__t*", "*__pid", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("(")[0] for line in lines[:-1]] == [
        "small__pid",
        "paged__pid",
        "paged__t0",
        "paged__t1",
    ]
    assert lines[-1] == "4 of 12 tools from 2 peers: small, paged"
    assert main(["tools", "nothing*", "--config", str(config)]) == 1
    assert capsys.readouterr().err == "mcpx-router: no tool matches 'nothing*'\n"


@pytest.fixture
def http_url() -> Iterator[str]:
    """tests/support/http_peer_server.py on a free port of 127.0.0.1."""
    port = free_port()
    with subprocess.Popen([sys.executable, str(HTTP_SERVER), str(port)], stdin=subprocess.PIPE) as server:
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.kill()


def test_a_server_by_url_with_headers(http_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--url", http_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{len(lines) - 1} tools from 1 peer: local"
    assert any(line.startswith("local__header(") for line in lines)
    argv = ["call", "web__header", "name=X-Test", "--url", http_url, "--name", "web"]
    assert main([*argv, "--header", "X-Test: from the shell"]) == 0
    assert capsys.readouterr().out == "from the shell\n"


def test_a_parameter_the_tool_does_not_take(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "cli_tools__point", "x=1", "y=2", *SERVER]) == 0
    assert capsys.readouterr().out == "(1, 2)\n"
    assert main(["call", "cli_tools__point", "x=1", "yy=2", *SERVER]) == 2
    assert capsys.readouterr().err == (
        'mcpx-router: cli_tools__point has no parameter "yy"; did you mean y?: '
        "cli_tools__point(x: int, y: int)\n"
    )
    assert main(["call", "cli_tools__args", "name=a", "extra=1", *SERVER]) == 0  # its schema takes others
