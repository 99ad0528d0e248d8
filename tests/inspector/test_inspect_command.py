"""`mcpx-router inspect`: the servers the options name, served to the browser on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpx_router.cli import main

from ..cli.test_cli_signals import command, interrupt
from ..support.inspector_support import session
from ..support.router_support import TINY


def test_it_prints_a_tokened_loopback_url_and_serves_the_servers_until_interrupted(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": {"small": {"command": sys.executable, "args": [str(TINY)]}}}))
    with command("inspect", "--config", str(file), "--read-only") as process:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        base = url.split("?")[0].rstrip("/")
        with httpx2.Client(base_url=base, timeout=30) as client:
            assert client.get("/api/overview").status_code == 401
            assert client.get(url).status_code == 303
            view = client.get("/api/overview").json()
            (peer,) = view["peers"]
            assert peer["id"] == "small" and peer["transport"]["kind"] == "stdio"
            assert "small__echo" in [tool["name"] for tool in peer["tools"]]
            assert view["read_only"] is True and view["stats_kept"] is True
            refused = client.post("/api/call", json={"name": "small__echo", "arguments": {"text": "hi"}})
            assert refused.status_code == 403
        assert "inspecting small (read-only)" in interrupt(process)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "70000"], "--port must be 0 to 65535"),
        (["--gateway", "http://127.0.0.1:9"], "give both --gateway and --topic"),
        (["--config", "/nonexistent/mcp.json"], "mcp.json"),
    ],
)
def test_unusable_options_are_said(args: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", *args]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_topics_participants_inspected_from_the_shell() -> None:
    from mcpx_router.mcpx import Gateway, run_gateway

    from ..support.mcpx_router_support import TOPIC, agent

    async with run_gateway(Gateway()) as gateway, agent(gateway, "alice"):
        command = [sys.executable, "-m", "mcpx_router", "inspect", "--gateway", gateway, "--topic", TOPIC]
        async with await anyio.open_process(command) as process:
            try:
                assert process.stdout is not None
                with anyio.fail_after(30):
                    url = (await process.stdout.receive()).decode().strip()
                async with session(url) as client:
                    view = (await client.get("/api/overview")).json()
                assert view["topic"]["topic"] == TOPIC
                assert [p["id"] for p in view["topic"]["present"]] == ["alice"]
                assert [peer["id"] for peer in view["peers"]] == ["alice"]
            finally:
                process.send_signal(signal.SIGINT)
                with anyio.fail_after(30):
                    assert await process.wait() == 130
