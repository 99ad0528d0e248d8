"""`--stats-file` on `call`, and `tools --stats`: statistics recorded by one run, read by another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).parent.parent / "support" / "cli_stdio_server.py"
COMMAND = [sys.executable, "-m", "mcpx_router"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=60, env=env)


def config(tmp_path: Path) -> str:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": {"x": {"command": sys.executable, "args": [str(SERVER)]}}}))
    return str(file)


def test_calls_recorded_in_a_file_are_shown_by_tools_stats(tmp_path: Path) -> None:
    servers, stats = config(tmp_path), str(tmp_path / "state" / "stats.json")
    for text in ("one", "two"):
        done = run("call", "x__echo", f"text={text}", "--config", servers, "--stats-file", stats)
        assert (done.returncode, done.stdout) == (0, f"{text}\n"), done.stderr
    env = {**os.environ, "MCPX_ROUTER_STATS_FILE": stats}
    late = run("call", "x__wait", "--timeout", "0.2", "--config", servers, env=env)
    assert late.returncode == 1 and "did not answer within 0.2 s" in late.stderr

    shown = run("tools", "--stats", "--json", "--stats-file", stats)
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    [peer] = document["peers"]
    assert (peer["peer"], peer["calls"], peer["errors"]) == ("x", 3, {"timeout": 1})
    assert peer["last_failure"]["kind"] == "timeout" and peer["score"] == round(3 / 4, 4)
    tools = {row["tool"]: row for row in document["tools"]}
    assert (tools["echo"]["calls"], tools["echo"]["errors"], tools["echo"]["last_failure"]) == (2, {}, None)
    assert tools["wait"]["errors"] == {"timeout": 1} and tools["wait"]["p50"] >= 0.2
    assert peer["p50"] <= peer["p95"] == tools["wait"]["p95"]

    table = run("tools", "--stats", "x__ec*", env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["calls", "p50", "s", "p95", "s", "score", "errors;", "last", "failure"]
    assert lines[1].startswith("peer x") and "timeout 1; timeout at " in lines[1]
    assert lines[2].split()[:2] == ["echo", "2"] and lines[2].endswith("no errors")
    assert len(lines) == 3  # wait does not match the pattern


def test_an_unusable_stats_file_is_said_and_left_alone(tmp_path: Path) -> None:
    servers, stats = config(tmp_path), tmp_path / "stats.json"
    stats.write_text('{"version": 1, "peers": {"x": {"calls": -1}}, "tools": []}')
    before = stats.read_text()
    for args in (["call", "x__echo", "text=hi", "--config", servers], ["tools", "--stats"]):
        done = run(*args, "--stats-file", str(stats))
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (
            f"mcpx-router: the statistics file {str(stats)!r} is unusable: peer 'x': calls must be a "
            "whole number of at least 0, not -1; it was left as it is: delete it (or pass another file) "
            "to start the statistics afresh\n"
        )
    assert stats.read_text() == before
    env = {key: value for key, value in os.environ.items() if key != "MCPX_ROUTER_STATS_FILE"}
    missing = run("tools", "--stats", env=env)
    assert (
        missing.returncode == 2 and "give --stats-file FILE or set MCPX_ROUTER_STATS_FILE" in missing.stderr
    )
    absent = run("tools", "--stats", "--stats-file", str(tmp_path / "none.json"))
    assert absent.returncode == 1 and "run call or chat with --stats-file" in absent.stderr
