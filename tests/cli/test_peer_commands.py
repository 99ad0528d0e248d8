"""`mcpx-router tools` and `mcpx-router call` with a config of our standard-library stdio server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpx_router.cli import main

from ..support.router_support import tiny


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


def test_tools_lists_the_merged_catalogue(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    builtin = ("echo", "pid", "sleep", "add_tool", "remove_tool")
    expected = [f"small__{t}" for t in builtin] + [f"paged__{t}" for t in (*builtin, "t0", "t1")]
    assert [line.split()[0] for line in lines[:-1]] == expected  # in the config's order, every page
    assert lines[0].split() == ["small__echo", "Echo", "the", "text", "back."]
    assert lines[-1] == "12 tools from 2 peer(s): small, paged"


def test_tools_as_json(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--config", str(config), "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert len(tools) == 12 and tools[0]["type"] == "function"
    assert tools[0]["function"]["name"] == "small__echo"


def test_a_peer_that_cannot_join_is_reported(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(config.read_text())
    data["mcpServers"]["ghost"] = {"command": str(tmp_path / "no-such-server")}
    config.write_text(json.dumps(data))
    assert main(["tools", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    assert "could not connect to peer 'ghost'" in captured.err
    assert captured.out.splitlines()[-1] == "12 tools from 2 peer(s): small, paged"


def test_call_prints_the_answer(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "small__echo", '{"text": "hello from the shell"}', "--config", str(config)]) == 0
    assert capsys.readouterr().out == "hello from the shell\n"
    assert main(["call", "paged__t1", '{"text": "page two"}', "--config", str(config)]) == 0
    assert capsys.readouterr().out == "page two\n"


def test_call_errors(config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "small__echoo", "--config", str(config)]) == 1
    assert "there is no tool named 'small__echoo'. Did you mean 'small__echo'" in capsys.readouterr().err
    assert main(["call", "small__sleep", '{"seconds": 5}', "--timeout", "0.2", "--config", str(config)]) == 1
    assert "did not answer within 0.2 s" in capsys.readouterr().err
    assert main(["call", "small__echo", "{text}", "--config", str(config)]) == 2
    assert "the arguments are not valid JSON" in capsys.readouterr().err
    assert main(["call", "small__echo", "[1]", "--config", str(config)]) == 2
    assert "must be a JSON object, not list" in capsys.readouterr().err
    assert main(["tools", "--config", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the peer config" in capsys.readouterr().err
