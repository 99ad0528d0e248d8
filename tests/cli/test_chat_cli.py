"""`mcpx-router chat` in a subprocess: a config file of real stdio peers, a replayed model endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpx_router.model.strict._strict import check_strict

from ..support import _servers
from ..support._openai_replay import CHAT, chat_completion, replay_openai, tool_call

TINY = Path(__file__).parent.parent / "support" / "tiny_stdio_server.py"


def write_config(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def chat(
    config: Path,
    *args: str,
    base_url: str | None,
    stdin: str | None = None,
    model: str | None = "replay-model",
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    if base_url is not None:
        env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}
    if model is not None:
        env["OPENAI_MODEL"] = model
    return subprocess.run(
        [sys.executable, "-m", "mcpx_router", "chat", "--config", str(config), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


@pytest.mark.thirdparty
@pytest.mark.timeout(600, func_only=True)
def test_chat_with_the_time_server(tmp_path: Path) -> None:
    params = _servers.time_server_params()
    config = write_config(tmp_path, {"time": {"command": params.command, "args": list(params.args)}})
    script = [
        chat_completion(
            {
                "content": None,
                "tool_calls": [tool_call("c1", "time__get_current_time", '{"timezone": "Asia/Tokyo"}')],
            }
        ),
        chat_completion({"content": "It is evening in Tokyo."}),
    ]
    with replay_openai(script) as replay:
        done = chat(config, "--prompt", "What time is it in Tokyo?", base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    first, second = replay.bodies(CHAT)
    assert first["model"] == "replay-model"
    assert first["messages"] == [{"role": "user", "content": "What time is it in Tokyo?"}]
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(tools) == {"time__get_current_time", "time__convert_time"}
    assert all(f["strict"] is True and check_strict(f["parameters"]) == [] for f in tools.values())
    answer = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert json.loads(answer)["timezone"] == "Asia/Tokyo"
    out = done.stdout.splitlines()
    assert out[0] == "2 tools from 1 peers: time (2); model replay-model"
    assert "user: What time is it in Tokyo?" in out
    assert '  call time__get_current_time({"timezone": "Asia/Tokyo"})' in out
    assert any(
        line.startswith('  -> time__get_current_time: { "timezone": "Asia/Tokyo", "datetime": ')
        for line in out
    )
    assert "assistant: It is evening in Tokyo." in out


def test_chat_reads_prompts_from_stdin_and_keeps_the_conversation(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"tiny": {"command": sys.executable, "args": [str(TINY)]}, "off": {"command": "x", "disabled": True}},
    )
    script = [
        chat_completion(
            {"content": None, "tool_calls": [tool_call("c1", "tiny__echo", '{"text": "hello"}')]}
        ),
        chat_completion({"content": "The echo said hello."}),
        chat_completion({"content": "You asked about the echo."}),
    ]
    with replay_openai(script) as replay:
        done = chat(
            config,
            "--system",
            "Be brief.",
            "--strict",
            "off",
            base_url=replay.base_url,
            stdin="Echo hello.\n\nWhat did I ask?\n",
        )
    assert done.returncode == 0, done.stderr
    first, second, third = replay.bodies(CHAT)
    assert not any(t["function"].get("strict") for t in first["tools"])
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    # The second prompt continues the first conversation, tool call and answer included.
    assert [m["role"] for m in third["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert third["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "hello"}
    assert third["messages"][-1] == {"role": "user", "content": "What did I ask?"}
    assert done.stdout.splitlines()[1:] == [
        "user: Echo hello.",
        '  call tiny__echo({"text": "hello"})',
        "  -> tiny__echo: hello",
        "assistant: The echo said hello.",
        "",
        "user: What did I ask?",
        "assistant: You asked about the echo.",
        "",
    ]


def test_chat_stops_at_max_turns(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    script = [chat_completion({"content": None, "tool_calls": [tool_call("c1", "tiny__pid", "")]})]
    with replay_openai(script) as replay:
        done = chat(config, "--prompt", "pid?", "--max-turns", "1", base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    assert "(no answer after 1 requests; --max-turns is 1)" in done.stdout
    assert len(replay.bodies(CHAT)) == 1


@pytest.mark.parametrize(
    ("servers", "model", "status", "message"),
    [
        ({}, None, 2, "mcpx-router: no model: set OPENAI_MODEL or pass --model"),
        ({"bad": {"url": "ftp://x"}}, "m", 2, "server 'bad': \"url\" must be an http:// or https:// URL"),
        ({"gone": {"command": "/nonexistent/mcp-server"}}, "m", 1, "mcpx-router: no server could connect"),
    ],
)
def test_chat_says_what_is_wrong(
    tmp_path: Path, servers: dict[str, Any], model: str | None, status: int, message: str
) -> None:
    config = write_config(tmp_path, servers)
    with replay_openai([]) as replay:
        done = chat(config, "--prompt", "hi", base_url=replay.base_url, model=model)
    assert done.returncode == status
    assert message in done.stderr
    assert replay.requests == []  # nothing was asked of the model


def test_chat_with_an_endpoint_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    with replay_openai([]) as replay:  # an empty script answers 500
        done = chat(config, "--prompt", "hi", base_url=replay.base_url)
    assert done.returncode == 1
    assert "mcpx-router: the model endpoint answered with an error:" in done.stderr
    assert "replay script exhausted" in done.stderr


def test_chat_goes_on_with_the_servers_that_connected(tmp_path: Path) -> None:
    servers = {
        "gone": {"command": str(tmp_path / "no-such-server")},
        "tiny": {"command": sys.executable, "args": [str(TINY)]},
    }
    config = write_config(tmp_path, servers)
    script = [chat_completion({"content": "Hello."})]
    with replay_openai(script) as replay:
        done = chat(config, "--prompt", "hi", base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("mcpx-router: could not connect to peer 'gone'")
    assert len(done.stderr.splitlines()) == 1
    out = done.stdout.splitlines()
    assert out[0] == "5 tools from 1 peers: tiny (5); model replay-model"
    assert out[1] == "  without gone: could not connect (see above)"
    assert out[-2:] == ["assistant: Hello.", ""]
    tools = {t["function"]["name"] for t in replay.bodies(CHAT)[0]["tools"]}
    assert tools == {"tiny__echo", "tiny__pid", "tiny__sleep", "tiny__add_tool", "tiny__remove_tool"}


def test_chat_records_its_calls_into_a_stats_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    stats = tmp_path / "stats.json"
    script = [
        chat_completion(
            {
                "content": None,
                "tool_calls": [
                    tool_call("c1", "tiny__echo", '{"text": "hello"}'),
                    tool_call("c2", "tiny__echo", '{"txt": 1}'),
                ],
            }
        ),
        chat_completion({"content": "Done."}),
    ]
    with replay_openai(script) as replay:
        done = chat(config, "--prompt", "Echo.", "--stats-file", str(stats), base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "mcpx_router", "tools", "--stats", "--json", "--stats-file", str(stats)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    [peer] = json.loads(shown.stdout)["peers"]
    assert (peer["peer"], peer["calls"], peer["errors"]) == ("tiny", 2, {"invalid_arguments": 1})


def test_chat_in_code_mode_offers_run_python_and_runs_the_program(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    program = 'said = tiny.echo(text="hello")\nsaid.upper()'
    script = [
        chat_completion(
            {"content": None, "tool_calls": [tool_call("c1", "run_python", json.dumps({"code": program}))]}
        ),
        chat_completion({"content": "It said HELLO."}),
    ]
    with replay_openai(script) as replay:
        done = chat(config, "--code-mode", "--prompt", "Echo hello, loudly.", base_url=replay.base_url)
    assert done.returncode == 0, done.stderr
    first, second = replay.bodies(CHAT)
    assert [t["function"]["name"] for t in first["tools"]] == ["run_python", "find_tools"]
    assert "tiny (5): echo, pid, sleep, add_tool, remove_tool" in first["tools"][0]["function"]["description"]
    answer = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert answer == 'Calls made (1):\n1. tiny.echo(text="hello") -> ok\n\nResult: "HELLO"'
    assert "assistant: It said HELLO." in done.stdout.splitlines()


def test_chat_refuses_code_mode_with_text_calls(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": {"command": sys.executable, "args": [str(TINY)]}})
    done = chat(config, "--code-mode", "--text-calls", "--prompt", "hi", base_url="http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "leave --text-calls off" in done.stderr
