"""The command as a person runs it (a child process) never prints a secret of its config: not in its
one-line errors, `tools --json`, nor the -vv log with its tracebacks; a header HTTP cannot send is
refused naming the header; a config file others can write is used with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.router_support import free_port

COMMAND = [sys.executable, "-m", "mcpx_router"]
TOKEN = "tok-3c2b1a0f9e8d"
KEY = "key-Pw7.secret/+="
QUERY = "qs-5e6f7a8b"
SCRIPT = "import sys; print('started with ' + ' '.join(sys.argv[1:]))"
"""A stdio server that is not one: it writes its command line on stdout and exits."""


def run(args: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        env={**os.environ, **environ},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write(tmp_path: Path, servers: dict[str, object], mode: int = 0o600) -> Path:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": servers}))
    file.chmod(mode)
    return file


@pytest.mark.parametrize("verbose", [[], ["-vv"]])
def test_peers_that_fail_never_show_a_secret_in_the_errors_json_or_log(
    tmp_path: Path, verbose: list[str]
) -> None:
    servers = {
        "chatty": {"command": sys.executable, "args": ["-c", SCRIPT, "--api-key", "${KEY}"]},
        "gone": {
            "url": f"http://127.0.0.1:{free_port()}/mcp?token=${{QUERY}}&page=1",
            "headers": {"Authorization": "Bearer ${TOKEN}"},
        },
        "keyed": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit(3)", f"--password={TOKEN}"],
        },
    }
    config = write(tmp_path, servers)
    environ = {"KEY": KEY, "TOKEN": TOKEN, "QUERY": QUERY}
    done = run(
        ["tools", "--json", "--config", str(config), "--connect-timeout", "30", *verbose], environ, tmp_path
    )
    assert done.returncode == 1, done.stderr
    for secret in (KEY, TOKEN, QUERY, "key-Pw7.secret"):
        assert secret not in done.stdout and secret not in done.stderr
    errors = {peer["id"]: peer["error"] for peer in json.loads(done.stdout)["peers"]}
    assert "'started with --api-key ***'" in errors["chatty"]
    assert "?token=***&page=1" in errors["gone"]
    assert "--password=***)" in errors["keyed"]
    if verbose:
        assert "Traceback" in done.stderr and "DEBUG" in done.stderr  # the log is there, masked
    else:
        starts = [
            "mcpx-router: could not connect to peer 'gone' (http://127.0.0.1:",
            f"mcpx-router: could not connect to peer 'keyed' ({sys.executable} -c import sys; sys.exit(3) "
            "--password=***)",
            "mcpx-router: peer 'chatty': the server wrote something that is not JSON-RPC on stdout: 'started",
        ]
        lines = sorted(done.stderr.splitlines())
        assert len(lines) == 3 and all(
            line.startswith(start) for line, start in zip(lines, starts, strict=True)
        )


@pytest.mark.parametrize("ending", ["\r\n", "\r", "\n"])
def test_a_token_with_a_windows_line_ending_is_refused_naming_the_header(tmp_path: Path, ending: str) -> None:
    config = write(
        tmp_path,
        {"notes": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
    )
    done = run(["tools", "--json", "--config", str(config)], {"TOKEN": TOKEN + ending}, tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"mcpx-router: {config}: server 'notes': \"headers\": the value of header 'Authorization' ends "
        "with a line break (CR or LF), as a value read from a file with Windows line endings does; "
        "remove it\n"
    )


def test_a_header_option_http_cannot_send_is_refused_naming_the_header(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = run(["tools", "--url", url, "--header", f"Authorization: Bearer {TOKEN}\x01x"], {}, tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr
        == "mcpx-router: --header: the value of header 'Authorization' holds a control character\n"
    )
    done = run(["tools", "--url", url, "--header", f"Bearer {TOKEN}"], {}, tmp_path)
    assert (done.returncode, done.stderr) == (2, "mcpx-router: --header expects 'NAME: VALUE'\n")
    done = run(
        ["tools", "--url", f"{url}?api_key={QUERY}", "--header", f"Authorization: Bearer {TOKEN}"],
        {},
        tmp_path,
    )
    assert done.returncode == 1
    assert TOKEN not in done.stderr and QUERY not in done.stderr and f"{url}?api_key=***" in done.stderr


@pytest.mark.skipif(os.name == "nt", reason="file modes say nothing on Windows")
def test_a_config_others_can_write_is_used_with_a_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path, {"t": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}}, 0o666
    )
    done = run(["tools", "--config", str(config)], {}, tmp_path)
    assert done.returncode == 1  # used: its server was started
    first, second = done.stderr.splitlines()
    assert first == (
        f"mcpx-router: the peer config {str(config)!r} has mode 0666: others can write it, and it decides "
        f"which commands run; make it your own alone with: chmod go-w {config}"
    )
    assert second.startswith("mcpx-router: could not connect to peer 't'")
