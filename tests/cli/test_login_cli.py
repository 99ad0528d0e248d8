"""`mcpx-router login`: the authorization-code flow against the OAuth-protected test server, the test
playing the browser; then `tools` and `call` use the stored tokens without authorizing again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcpx_router.cli import main
from mcpx_router.cli._auth import callback_query, same_state

from ..support.oauth_support import STATIC_TOKEN, authorize, oauth_server
from ..support.router_support import WAIT, free_port

COMMAND = [sys.executable, "-m", "mcpx_router"]


@pytest.fixture
def anyio_backend() -> str:
    """The commands under test run in child processes, on their own event loop; the test's loop only
    starts them, plays the browser and reads their output: one backend drives them as well as two."""
    return "asyncio"


def write_config(tmp_path: Path, url: str, port: int) -> Path:
    file = tmp_path / "mcp.json"
    auth = {"type": "oauth", "callbackPort": port, "tokenStore": "tokens.json", "scopes": ["tools"]}
    file.write_text(json.dumps({"mcpServers": {"notes": {"url": url, "auth": auth}}}))
    return file


async def read_lines(stream: anyio.abc.ByteReceiveStream, seen: bytearray, lines: int) -> None:
    with anyio.fail_after(WAIT):
        while seen.count(b"\n") < lines:
            seen += await stream.receive()


@pytest.mark.anyio
async def test_login_then_the_other_commands_use_the_stored_tokens(tmp_path: Path) -> None:
    port = free_port()
    async with oauth_server() as server:
        config = write_config(tmp_path, server.url, port)
        login = [*COMMAND, "login", "notes", "--config", str(config)]
        process = await anyio.open_process(login, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert process.stderr is not None
            stderr = bytearray()
            await read_lines(process.stderr, stderr, 2)
            url = stderr.decode().splitlines()[1]
            assert stderr.decode().startswith("To authorize 'notes', open this URL in a browser:\n")
            location = await authorize(url)
            assert location.startswith(f"http://127.0.0.1:{port}/callback?")
            async with httpx2.AsyncClient() as browser:
                stray = await browser.get(f"http://127.0.0.1:{port}/favicon.ico")
                assert stray.status_code == 404  # not the callback: the command keeps waiting
                answer = await browser.get(location)
            assert (answer.status_code, answer.text) == (200, "Authorized. You can close this window.")
            with anyio.fail_after(WAIT):
                await process.wait()
                while chunk := await _more(process.stderr):
                    stderr += chunk
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()
        assert process.returncode == 0, stderr.decode()
        tokens = tmp_path / "tokens.json"
        assert stderr.decode().endswith(f"Authorized with 'notes': 2 tools; its tokens are in {tokens}\n")
        assert (tokens.stat().st_mode & 0o777) == 0o600

        listed = await anyio.run_process([*COMMAND, "tools", "--config", str(config)], check=False)
        assert listed.returncode == 0, listed.stderr.decode()
        assert [line.split("(")[0] for line in listed.stdout.decode().splitlines()[:2]] == [
            "notes__echo",
            "notes__counts",
        ]
        called = await anyio.run_process([*COMMAND, "call", "notes__counts", "--config", str(config)])
        assert json.loads(called.stdout) == {
            "authorizations": 1,
            "exchanges": 1,
            "refreshes": 0,
            "registrations": 1,
        }


async def _more(stream: anyio.abc.ByteReceiveStream | None) -> bytes:
    assert stream is not None
    try:
        return await stream.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return b""


@pytest.mark.anyio
async def test_login_with_a_token_stores_it_and_a_refused_token_fails(tmp_path: Path) -> None:
    async with oauth_server() as server:
        config = write_config(tmp_path, server.url, free_port())
        login = [*COMMAND, "login", "notes", "--config", str(config), "--token", "-"]
        (tmp_path / "tokens.json").write_text("[]")
        corrupt = await anyio.run_process(login, input=STATIC_TOKEN.encode() + b"\n", check=False)
        assert corrupt.returncode == 1
        assert corrupt.stderr.decode().startswith("mcpx-router: the token store ")
        assert (tmp_path / "tokens.json").read_text() == "[]"
        (tmp_path / "tokens.json").unlink()
        refused = await anyio.run_process(login, input=b"wrong-token\n", check=False)
        assert refused.returncode == 1
        assert "did not accept the given token" in refused.stderr.decode()
        accepted = await anyio.run_process(login, input=STATIC_TOKEN.encode() + b"\n", check=False)
        assert accepted.returncode == 0, accepted.stderr.decode()
        called = await anyio.run_process(
            [*COMMAND, "call", "notes__echo", '{"text": "hi"}', "--config", str(config)]
        )
        assert called.stdout.decode().strip() == "hi"


def test_login_needs_an_oauth_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": {"plain": {"url": "http://127.0.0.1:9/mcp"}}}))
    for name, expected in [
        ("plain", "server 'plain' of"),
        ("missing", "has no enabled server 'missing'"),
    ]:
        assert main(["login", name, "--config", str(file)]) == 2  # in-process: nothing to connect to
        assert expected in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_refused_authorization_and_a_busy_port_are_one_line_errors(tmp_path: Path) -> None:
    port = free_port()
    async with oauth_server() as server:
        config = write_config(tmp_path, server.url, port)
        login = [*COMMAND, "login", "notes", "--config", str(config)]
        process = await anyio.open_process(login, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert process.stderr is not None
            stderr = bytearray()
            await read_lines(process.stderr, stderr, 2)
            state = parse_qs(urlsplit(stderr.decode().splitlines()[1]).query)["state"][0]
            async with httpx2.AsyncClient() as browser:
                refusal = f"http://127.0.0.1:{port}/callback?error=access_denied&error_description=no"
                assert (await browser.get(f"{refusal}&state={state}")).status_code == 400
            with anyio.fail_after(WAIT):
                await process.wait()
                while chunk := await _more(process.stderr):
                    stderr += chunk
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()
        assert process.returncode == 1
        last = stderr.decode().splitlines()[-1]
        assert last.startswith("mcpx-router: peer 'notes': the authorization with the server at ")
        assert last.endswith("failed: the authorization server refused: access_denied (no)")

        async with await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port):
            busy = await anyio.run_process(login, check=False)
        assert busy.returncode == 1
        assert busy.stderr.decode().startswith(
            f"mcpx-router: cannot receive the authorization on http://127.0.0.1:{port}/callback: "
        )


@pytest.mark.anyio
async def test_a_forged_callback_gets_400_and_the_login_waits_for_the_real_one(tmp_path: Path) -> None:
    """Any local process or web page can reach the callback port: a request without the login's
    `state` (none, another, twice, with a refusal or a code) must neither end the login nor learn
    the state; the redirect of the real authorization then completes it."""
    port = free_port()
    async with oauth_server() as server:
        config = write_config(tmp_path, server.url, port)
        login = [*COMMAND, "login", "notes", "--config", str(config)]
        process = await anyio.open_process(login, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert process.stderr is not None
            stderr = bytearray()
            await read_lines(process.stderr, stderr, 2)
            url = stderr.decode().splitlines()[1]
            state = parse_qs(urlsplit(url).query)["state"][0]
            callback = f"http://127.0.0.1:{port}/callback"
            forged = [
                f"{callback}?code=forged-code",
                f"{callback}?code=forged-code&state=forged-state",
                f"{callback}?code=forged-code&state={state}x",
                f"{callback}?code=forged-code&state={state[:-1]}",
                f"{callback}?code=forged-code&state={state}&state=forged-state",
                f"{callback}?error=access_denied",
                f"{callback}?error=access_denied&state=forged-state",
                f"{callback}?state={state[:8]}",
            ]
            async with httpx2.AsyncClient() as browser:
                for request in forged:
                    answer = await browser.get(request)
                    assert answer.status_code == 400, request
                    assert state not in answer.text
                assert (await browser.get(f"http://127.0.0.1:{port}/")).status_code == 404
                assert process.returncode is None  # still waiting
                location = await authorize(url)
                answer = await browser.get(location)
            assert (answer.status_code, answer.text) == (200, "Authorized. You can close this window.")
            with anyio.fail_after(WAIT):
                await process.wait()
                while chunk := await _more(process.stderr):
                    stderr += chunk
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()
        assert process.returncode == 0, stderr.decode()
        lines = stderr.decode().splitlines()
        assert lines[-1].startswith("Authorized with 'notes': 2 tools")
        assert [line for line in lines if state in line] == [url]  # shown once: in the URL to open
        assert "forged-code" not in stderr.decode() and "forged-state" not in stderr.decode()


@settings(max_examples=200, deadline=None)
@given(
    given_states=st.none() | st.lists(st.text(max_size=12), max_size=3),
    state=st.none() | st.text(max_size=12),
)
def test_only_the_one_state_of_the_authorization_url_is_accepted(
    given_states: list[str] | None, state: str | None
) -> None:
    accepted = same_state(given_states, state)
    assert accepted == (given_states == [state] if state is not None else not given_states)


@settings(max_examples=300, deadline=None)
@example(target="//[/callback", path="/callback")  # urlsplit raises on an unclosed IPv6 host
@given(
    target=st.none() | st.text(st.characters(exclude_categories=()), max_size=40),
    path=st.sampled_from(["/callback", "/"]),
)
def test_any_request_target_is_the_callback_or_not_and_never_an_error(target: str | None, path: str) -> None:
    query = callback_query(target, path)
    if query is not None:
        assert target is not None and target.split("?")[0].split("#")[0].endswith(path)
    assert callback_query(f"{path}?code=c&state=s", path) == {"code": ["c"], "state": ["s"]}
    assert callback_query(f"{path}x?code=c", path) is None
