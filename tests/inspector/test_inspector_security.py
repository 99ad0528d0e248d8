"""The inspector refuses what it must, served on a real socket on 127.0.0.1 and asked with httpx.

Each refusal is a way a page or program other than the developer's could reach a tool: no
token, a wrong one, another site's page, a DNS-rebound name, a form post, the host's own check,
a call while read-only. Each test also shows that the same request with that one thing put
right goes through, so a refusal is never the inspector refusing everything.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount

from mcpx_router import OpenAIPeerToolAdapter, UsageError
from mcpx_router.inspector import Inspector
from mcpx_router.mcpx.gateway._serve import serve_asgi

from ..support.inspector_support import WAIT, base_of, inspected, session

pytestmark = pytest.mark.anyio


async def test_it_listens_on_loopback_only_and_prints_a_tokened_url() -> None:
    async with inspected() as (_, inspector, url, _):
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1"
        assert parts.query == f"token={inspector.token}"
        assert inspector.token is not None and len(inspector.token) >= 40
        # Another loopback address of this machine reaches no socket: only 127.0.0.1 is bound.
        with pytest.raises(OSError):
            await anyio.connect_tcp("127.0.0.2", parts.port or 0)
        stream = await anyio.connect_tcp("127.0.0.1", parts.port or 0)
        await stream.aclose()


async def test_two_inspectors_have_different_tokens() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        assert Inspector(adapter).token != Inspector(adapter).token


async def test_every_path_needs_the_token() -> None:
    async with inspected() as (_, inspector, url, calls), httpx2.AsyncClient(base_url=base_of(url)) as client:
        for path in ("/", "/static/app.js", "/api/overview", "/api/model", "/api/names", "/api/events"):
            response = await client.get(path)
            assert response.status_code == 401, path
            assert "session token" in response.text
        refused = await client.post(
            "/api/call", json={"name": "counter__broken", "arguments": {"reason": "x"}}
        )
        assert refused.status_code == 401
        wrong = await client.get("/api/overview", params={"token": "x" * 43})
        assert wrong.status_code == 401
        bearer = await client.get("/api/overview", headers={"Authorization": "Bearer " + "y" * 43})
        assert bearer.status_code == 401
        assert calls == []
        # Put right: the token as a bearer credential.
        ok = await client.get("/api/overview", headers={"Authorization": f"Bearer {inspector.token}"})
        assert ok.status_code == 200
        assert [peer["id"] for peer in ok.json()["peers"]] == ["weather", "counter"]


async def test_the_url_token_becomes_a_strict_httponly_cookie_and_leaves_the_address_bar() -> None:
    async with inspected() as (_, inspector, url, _), httpx2.AsyncClient(base_url=base_of(url)) as client:
        first = await client.get(url + "&tab=peers")
        assert first.status_code == 303
        assert first.headers["location"] == "/?tab=peers"  # the token is gone from the URL
        cookie = first.headers["set-cookie"]
        assert f"={inspector.token}" in cookie
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        page = await client.get("/")
        assert page.status_code == 200
        assert "mcpx-router inspector" in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert (await client.get("/static/app.js")).headers["content-type"].startswith("text/javascript")


async def test_a_dns_rebound_host_name_is_refused() -> None:
    async with inspected() as (_, _, url, _), session(url) as client:
        port = urlsplit(url).port
        for host in (
            f"attacker.example:{port}",
            f"127.0.0.1.nip.io:{port}",
            "",
            f"localhost.:{port}",
            "[::1",
        ):
            response = await client.get("/api/overview", headers={"Host": host})
            assert response.status_code == 403, host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert (await client.get("/api/overview", headers={"Host": host})).status_code == 200, host


async def test_another_sites_page_is_refused_even_with_the_cookie() -> None:
    async with inspected() as (_, _, url, calls), session(url) as client:
        port = urlsplit(url).port
        body = {"name": "counter__record", "arguments": {"label": "a", "point": {"x": 1, "y": 2}, "tags": []}}
        for origin in (
            "http://attacker.example",
            "null",
            f"http://localhost:{port}",
            f"https://127.0.0.1:{port}",
        ):
            response = await client.post("/api/call", json=body, headers={"Origin": origin})
            assert response.status_code == 403, origin
            assert (await client.get("/api/events", headers={"Origin": origin})).status_code == 403
        cross = await client.post("/api/call", json=body, headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        assert calls == []
        same = await client.post("/api/call", json=body, headers={"Origin": f"http://127.0.0.1:{port}"})
        assert same.status_code == 200, same.text
        assert len(calls) == 1


async def test_a_form_post_is_refused() -> None:
    """A cross-site HTML form can send no JSON content type; the inspector takes nothing else."""
    async with inspected() as (_, _, url, calls), session(url) as client:
        for kind in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"):
            response = await client.post(
                "/api/call",
                content=b'{"name":"counter__broken","arguments":{"reason":"x"}}',
                headers={"Content-Type": kind},
            )
            assert response.status_code == 415, kind
        assert calls == []


async def test_read_only_refuses_calls_and_shows_the_rest() -> None:
    async with inspected(read_only=True) as (_, _, url, calls), session(url) as client:
        body = {"name": "counter__record", "arguments": {"label": "a", "point": {"x": 1, "y": 2}, "tags": []}}
        refused = await client.post("/api/call", json=body)
        assert refused.status_code == 403
        assert "read-only" in refused.json()["error"]
        assert calls == []
        overview = await client.get("/api/overview")
        assert overview.json()["read_only"] is True
        assert (await client.get("/api/select", params={"q": "weather"})).status_code == 200


async def test_a_mounted_inspector_takes_the_hosts_auth_hook() -> None:
    asked: list[str] = []

    async def hook(request: Request) -> bool:
        asked.append(request.url.path)
        return request.headers.get("x-user") == "dev"

    async with inspected() as (router, _, _, calls):
        inspector = Inspector(router, auth=hook)
        host_app = Starlette(routes=[Mount("/inspect", app=inspector)])
        async with serve_asgi(host_app) as base, httpx2.AsyncClient(base_url=base, timeout=WAIT) as client:
            url = inspector.url(f"{base}/inspect")
            assert url.startswith(f"{base}/inspect/?token=")
            # The hook refuses, whatever the token says.
            refused = await client.get(url)
            assert refused.status_code == 403
            assert "auth check" in refused.text
            # The hook accepts: the token is still needed, and its cookie is scoped to the mount.
            user = {"x-user": "dev"}
            assert (await client.get("/inspect/api/overview", headers=user)).status_code == 401
            first = await client.get(url, headers=user)
            assert first.status_code == 303
            assert first.headers["location"] == "/inspect/"
            assert "Path=/inspect" in first.headers["set-cookie"]
            overview = await client.get("/inspect/api/overview", headers=user)
            assert overview.status_code == 200
            assert "/inspect/api/overview" in asked
            assert calls == []


async def test_a_hook_that_raises_refuses(caplog: pytest.LogCaptureFixture) -> None:
    def hook(request: Request) -> bool:
        raise RuntimeError("the user store is down")

    async with inspected() as (router, _, _, _):
        inspector = Inspector(router, auth=hook, token=None)
        async with serve_asgi(inspector) as base, httpx2.AsyncClient(base_url=base) as client:
            response = await client.get("/api/overview")
            assert response.status_code == 500
            assert "refused" in response.text
    assert "auth hook raised" in caplog.text


async def test_a_hook_that_answers_something_other_than_true_refuses() -> None:
    async with inspected() as (router, _, _, _):
        inspector = Inspector(router, auth=lambda request: "yes", token=None)  # type: ignore[arg-type,return-value]
        async with serve_asgi(inspector) as base, httpx2.AsyncClient(base_url=base) as client:
            assert (await client.get("/api/overview")).status_code == 403


async def test_the_token_may_be_left_out_only_for_the_hosts_own_check() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UsageError, match="auth hook"):
            Inspector(adapter, token=None)
        with pytest.raises(ValueError, match="16 characters"):
            Inspector(adapter, token="short")
        with pytest.raises(UsageError, match="Router or an adapter"):
            Inspector(object())  # type: ignore[arg-type]
