"""The command's surface: --version, help for every option, one message prefix, servers without a
config (--command, --url, --name), config discovery, and the status line on a terminal only."""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpx_router.cli import _main as cli_main
from mcpx_router.cli import build_parser, main
from mcpx_router.cli._discover import candidates
from mcpx_router.cli._sources import command_id, url_id
from mcpx_router.mcpx.bridge._bridge_cli import bridge_parser
from mcpx_router.mcpx.gateway._serve import gateway_parser

from ..support.router_support import TINY

TOOLS_SERVER = Path(__file__).parent.parent / "support" / "cli_tools_server.py"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    root = build_parser()
    found = {"mcpx-router": root, "gateway": gateway_parser(), "bridge": bridge_parser()}
    for action in root._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                found.setdefault(name, parser)
    return found


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == f"mcpx-router {cli_main.version()}\n"
    assert cli_main.version()[0].isdigit()


def test_every_option_of_every_command_says_what_it_does() -> None:
    parsers = _parsers()
    assert {"tools", "call", "chat", "demo", "gateway", "bridge"} <= set(parsers)
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, parser in parsers.items()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and not (action.help or "").strip()
        and not (name in ("gateway", "bridge") and parser.add_help is False)
    ]
    assert missing == []


@pytest.mark.parametrize("name", ["tools", "call", "chat", "demo", "gateway", "bridge"])
def test_help_shows_the_defaults(name: str) -> None:
    parser = _parsers()[name]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.option_strings and action.default not in (None, False, [], "", argparse.SUPPRESS):
            shown = f"default: {action.default}"
            assert shown in text or "default:" in (action.help or ""), (name, action.option_strings)


@pytest.mark.parametrize(
    "argv",
    [["tools", "--connect-timeout", "x"], ["call"], ["nope"], ["chat", "--strict", "maybe"], []],
)
def test_usage_errors_read_like_every_other_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpx-router: ") and err.count("\n") == 1 and "--help" in err


def test_an_unexpected_failure_is_one_line_and_its_traceback_is_at_vv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise KeyError("oops")

    monkeypatch.setattr("mcpx_router.cli._peer_commands._run_tools", broken)
    assert main(["tools"]) == 1
    assert capsys.readouterr().err == (
        "mcpx-router: unexpected error: KeyError: 'oops' (-vv shows the traceback)\n"
    )
    assert main(["tools", "-vv"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("mcpx-router: unexpected error: KeyError: 'oops'\n")


def test_a_peer_that_fails_is_one_line_with_its_traceback_at_vv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "no-such-server")
    assert main(["tools", "--command", missing]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcpx-router: could not connect to peer 'no-such'") and err.count("\n") == 1
    assert main(["tools", "--command", missing, "-vv"]) == 1
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "peer"),
    [
        ("uvx mcp-server-time", "time"),
        ("npx -y @modelcontextprotocol/server-everything stdio", "everything"),
        ("python -m mcp_server_git --repository .", "git"),
        ("node /opt/weather/dist/index.js", "weather"),
        ("docker run -i --rm mcp/fetch", "fetch"),
        ("npx -y github-mcp-server@1.2", "github"),
        ("/usr/local/bin/notes-mcp", "notes"),
    ],
)
def test_peer_ids_from_commands(command: str, peer: str) -> None:
    assert command_id(shlex.split(command)) == peer


@pytest.mark.parametrize(
    ("url", "peer"),
    [
        ("https://mcp.deepwiki.com/mcp", "deepwiki"),
        ("https://api.githubcopilot.com/mcp/", "githubcopilot"),
        ("http://127.0.0.1:8000/mcp", "local"),
        ("http://localhost:3000/mcp", "local"),
    ],
)
def test_peer_ids_from_urls(url: str, peer: str) -> None:
    assert url_id(url) == peer


def test_servers_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    command = shlex.join([sys.executable, str(TINY)])
    assert main(["tools", "--command", command, "--command", command, "--json"]) == 0
    peers = [peer["id"] for peer in json.loads(capsys.readouterr().out)["peers"]]
    assert peers == ["tiny_stdio", "tiny_stdio-2"]
    assert main(["call", "mine__echo", "text=hi", "--command", command, "--name", "mine"]) == 0
    assert capsys.readouterr().out == "hi\n"
    assert main(["tools", "--command", command, "--command", command, "--name", "x"]) == 2
    assert "--name names the one server" in capsys.readouterr().err
    for url in ("ftp://x", "http://[", "https://"):
        assert main(["tools", "--url", url]) == 2
        assert (
            capsys.readouterr().err == f"mcpx-router: --url must be an http:// or https:// URL, not {url!r}\n"
        )


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and home."""
    (tmp_path / "work").mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    return tmp_path


def test_without_a_config_the_usual_places_are_looked_at(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpx-router: no MCP config found; looked for ") and err.count("\n") == 1
    for place in candidates(elsewhere / "work", elsewhere / "home", sys.platform, os.environ):
        assert str(place.path) in err
    assert "--command 'uvx mcp-server-time' or --url URL" in err

    servers = {"mcpServers": {"t": {"command": sys.executable, "args": [str(TINY)]}}}
    home_file = elsewhere / "home" / ".claude.json"
    home_file.write_text(json.dumps({"projects": {}}))  # Claude Code's file, without servers: passed over
    assert main(["tools"]) == 2
    capsys.readouterr()
    cursor = elsewhere / "home" / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text(json.dumps(servers))
    assert main(["tools"]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"mcpx-router: using {cursor} (Cursor, user)\n"
    assert captured.out.splitlines()[-1] == "5 tools from 1 peer: t"
    project = elsewhere / "work" / ".mcp.json"
    project.write_text(json.dumps(servers))
    assert main(["call", "t__echo", "text=found"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "found\n",
        f"mcpx-router: using {project} (Claude Code, project)\n",
    )


def test_claude_desktop_is_found_where_it_lives_on_each_system(tmp_path: Path) -> None:
    home = tmp_path
    found = {
        platform: next(
            p.path for p in candidates(tmp_path, home, platform, env) if p.host == "Claude Desktop"
        )
        for platform, env in [("darwin", {}), ("win32", {"APPDATA": "C:/AppData"}), ("linux", {})]
    }
    assert (
        found["darwin"] == home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    )
    assert found["win32"] == Path("C:/AppData") / "Claude" / "claude_desktop_config.json"
    assert found["linux"] == home / ".config" / "Claude" / "claude_desktop_config.json"


def _on_a_terminal(argv: list[str]) -> tuple[int, str]:
    """Run the command with standard error on a pseudo-terminal; return its status and what it wrote there."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpx_router", *argv],
        stdout=subprocess.PIPE,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TERM": "xterm"},
    )
    os.close(follower)
    written = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            written += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    process.communicate(timeout=30)
    return process.returncode, written.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_the_status_line_shows_on_a_terminal_only() -> None:
    argv = ["call", "cli_tools__steps", "n=3", "--command", shlex.join([sys.executable, str(TOOLS_SERVER)])]
    status, terminal = _on_a_terminal(argv)
    assert status == 0
    assert "connecting to cli_tools" in terminal and "\x1b[K" in terminal
    assert "cli_tools__steps: 3/3 step 3" in terminal
    assert terminal.endswith("\r\x1b[K")  # erased when done
    piped = subprocess.run(
        [sys.executable, "-m", "mcpx_router", *argv], capture_output=True, text=True, timeout=60
    )
    assert piped.returncode == 0
    assert "\x1b" not in piped.stderr and "\r" not in piped.stderr and "connecting" not in piped.stderr


def test_each_place_is_looked_at_once_when_the_working_directory_is_home(tmp_path: Path) -> None:
    places = [place.path for place in candidates(tmp_path, tmp_path, "linux", {})]
    assert len(places) == len(set(places)) == 8


def test_servers_shows_the_configs_found(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["servers"]) == 1
    assert capsys.readouterr().err.startswith("mcpx-router: no MCP config found; looked for ")
    project = elsewhere / "work" / ".mcp.json"
    project.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}))
    cursor = elsewhere / "home" / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text("{not json")
    assert main(["servers"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{project} (Claude Code, project)  (used when no --config is given)",
        "  time  uvx mcp-server-time",
        f"{cursor} (Cursor, user)",
        f"  cannot be used: the peer config '{cursor}' is not valid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ]
    assert main(["servers", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0] == {
        "path": str(project),
        "host": "Claude Code, project",
        "default": True,
        "servers": {"time": "uvx mcp-server-time"},
    }
    assert listed[1]["default"] is False and "not valid JSON" in listed[1]["error"]
