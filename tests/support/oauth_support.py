"""The OAuth-protected test server (oauth_peer_server.py) as a subprocess, and a test playing the browser."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp.shared.auth import AuthorizationCodeResult

from mcpx_router import Router

from .router_support import HERE, HttpServer

OAUTH_SERVER = HERE / "oauth_peer_server.py"
STATIC_TOKEN = "static-test-token"


class OAuthServer(HttpServer):
    """tests/support/oauth_peer_server.py on a free port of 127.0.0.1.

    Its clock and this process's `time.time()` can be moved ahead together (`advance_clocks`):
    tokens then expire for both sides at once, with no waiting on the wall clock.
    """

    def __init__(self, *options: str, sse: bool = False) -> None:
        super().__init__(sse=sse)
        self.options = (*options, "--sse") if sse else options
        handle, self.clock_file = tempfile.mkstemp(prefix="oauth-clock-")
        os.write(handle, b"0")
        os.close(handle)
        self.ahead = 0.0

    def advance_clocks(self, monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
        """Move this process's wall clock (`time.time`, undone with `monkeypatch`) and the server's
        ahead by `seconds`: the client first, so that a request in between is refreshed, not refused."""
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + seconds)
        self.ahead += seconds
        with open(self.clock_file + ".new", "w") as file:
            file.write(repr(self.ahead))
        os.replace(self.clock_file + ".new", self.clock_file)

    async def kill(self) -> None:
        try:
            await super().kill()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.clock_file)

    async def start(self) -> None:
        args = [
            sys.executable,
            str(OAUTH_SERVER),
            str(self.port),
            "--static-token",
            STATIC_TOKEN,
            "--clock-file",
            self.clock_file,
            *self.options,
        ]
        self.process = await anyio.open_process(args, stdin=subprocess.PIPE, stdout=None, stderr=None)
        try:
            await self._wait_until_listening()
        except BaseException:
            await self.kill()
            raise


@asynccontextmanager
async def oauth_server(*options: str, sse: bool = False) -> AsyncIterator[OAuthServer]:
    server = OAuthServer(*options, sse=sse)
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


class Browser:
    """Plays the person with a browser: fetches the authorization URL and reads where it redirects.

    Use `visit` as a redirect handler and `callback` as the callback handler of `oauth_provider`.
    """

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    async def visit(self, url: str) -> None:
        self.visited.append(url)
        location = await authorize(url)
        query = parse_qs(urlsplit(location).query)
        self._result = AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None, "the callback came before the browser visited the URL"
        result, self._result = self._result, None
        return result


async def authorize(url: str) -> str:
    """GET the authorization URL as a browser would; return where the server redirects to."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 302, (response.status_code, response.text)
    return response.headers["location"]


async def unexpected_visit(url: str) -> None:
    raise AssertionError(f"no authorization was expected, but the client asked for one at {url}")


async def counts(router: Router, peer: str) -> dict[str, int]:
    """What the server's authorization side has done: registrations, authorizations, exchanges, refreshes."""
    outcome = await router.call(f"{peer}__counts", {})
    result: dict[str, int] = json.loads(outcome.text)
    return result
