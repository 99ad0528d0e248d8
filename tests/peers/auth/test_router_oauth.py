"""HTTP peers behind OAuth: a real MCPServer with the `mcp` SDK's authorization server on 127.0.0.1.

The server (tests/support/oauth_peer_server.py) registers clients, approves every authorization
at once and counts what it did; the test plays the browser by fetching the authorization URL.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mcpx_router import (
    BearerAuth,
    FileTokenStore,
    HttpPeer,
    PeerUnavailableError,
    Router,
    SsePeer,
    load_config,
    oauth_provider,
)

from ...support.oauth_support import STATIC_TOKEN, Browser, counts, oauth_server, unexpected_visit
from ...support.router_support import ABANDONED_HTTP_STREAMS

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]

TOKEN_TTL = 60
"""Seconds an access token from an authorization code lasts: far longer than a join under load."""
PAST_EXPIRY = 600
"""How far the tests move the clocks (the client's and the server's) to expire such a token
without waiting; less than the hour a refreshed token lasts."""


async def test_without_credentials_the_join_says_authorization_is_needed() -> None:
    async with oauth_server() as server, Router(connect_timeout=10) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("notes", HttpPeer(server.url))
        message = str(caught.value)
        assert message.startswith(
            f"peer 'notes': the server at {server.url} requires authorization (HTTP 401"
        )
        assert "mcpx-router login" in message and caught.value.peer == "notes"
        assert router.adapter.tools_of("notes") == ()


async def test_a_bearer_token_is_accepted_and_a_wrong_one_refused() -> None:
    async with oauth_server() as server, Router(connect_timeout=10) as router:
        await router.join("good", HttpPeer(server.url, auth=BearerAuth(STATIC_TOKEN)))
        assert (await router.call("good__echo", {"text": "hi"})).text == "hi"
        # The same token as a plain header works too.
        headers = {"Authorization": f"Bearer {STATIC_TOKEN}"}
        await router.join("header", HttpPeer(server.url, headers=headers))
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("bad", HttpPeer(server.url, auth=BearerAuth("not-" + STATIC_TOKEN)))
        assert str(caught.value).startswith(
            f"peer 'bad': the server at {server.url} refused the bearer token (HTTP 401"
        )
        assert "invalid_token" in str(caught.value)


async def test_the_authorization_code_flow_and_tokens_reused_from_the_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    async with oauth_server() as server:
        browser = Browser()
        auth = oauth_provider(
            server.url,
            redirect_handler=browser.visit,
            callback_handler=browser.callback,
            store=FileTokenStore(tokens, server.url),
        )
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=auth))
            assert (await router.call("notes__echo", {"text": "signed in"})).text == "signed in"
        assert len(browser.visited) == 1 and "code_challenge_method=S256" in browser.visited[0]
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
        entry = json.loads(tokens.read_text())["servers"][server.url]
        assert entry["tokens"]["access_token"].startswith("at-") and entry["client"]["client_id"]

        # A second Router, a new provider, the same file: no new registration or authorization.
        again = oauth_provider(
            server.url, redirect_handler=unexpected_visit, store=FileTokenStore(tokens, server.url)
        )
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=again))
            assert await counts(router, "notes") == {
                "authorizations": 1,
                "exchanges": 1,
                "refreshes": 0,
                "registrations": 1,
            }


async def test_an_expired_stored_access_token_is_refreshed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = tmp_path / "tokens.json"
    async with oauth_server("--code-token-ttl", str(TOKEN_TTL)) as server:
        browser = Browser()
        store = FileTokenStore(tokens, server.url)
        auth = oauth_provider(
            server.url, redirect_handler=browser.visit, callback_handler=browser.callback, store=store
        )
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=auth))
        first = json.loads(tokens.read_text())["servers"][server.url]["tokens"]
        server.advance_clocks(monkeypatch, PAST_EXPIRY)  # the access token from the code has expired
        again = oauth_provider(server.url, redirect_handler=unexpected_visit, store=store)
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=again))
            assert await counts(router, "notes") == {
                "authorizations": 1,
                "exchanges": 1,
                "refreshes": 1,
                "registrations": 1,
            }
        refreshed = json.loads(tokens.read_text())["servers"][server.url]["tokens"]
        assert refreshed["access_token"] != first["access_token"]
        assert refreshed["refresh_token"] != first["refresh_token"]  # the server rotates it


async def test_an_access_token_that_expires_while_joined_is_refreshed_before_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with oauth_server("--code-token-ttl", str(TOKEN_TTL)) as server:
        browser = Browser()
        auth = oauth_provider(server.url, redirect_handler=browser.visit, callback_handler=browser.callback)
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=auth))
            assert (await counts(router, "notes"))["refreshes"] == 0
            server.advance_clocks(monkeypatch, PAST_EXPIRY)
            assert (await router.call("notes__echo", {"text": "still here"})).text == "still here"
            assert (await counts(router, "notes"))["refreshes"] == 1
        assert len(browser.visited) == 1


async def test_no_person_to_authorize_and_a_corrupt_store_are_clear_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tokens = tmp_path / "tokens.json"
    async with oauth_server() as server, Router(connect_timeout=10) as router:
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("notes", HttpPeer(server.url, auth=oauth_provider(server.url)))
        assert str(caught.value).startswith(
            f"peer 'notes': the server at {server.url} needs a person to authorize this client"
        )
        # An expected condition, said in the error: the SDK's traceback for it is not logged.
        assert [r.getMessage() for r in caplog.records if r.name.startswith("mcp.client.auth")] == []
        tokens.write_text('{"version": 1, "servers": {')
        store = FileTokenStore(tokens, server.url)
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("notes", HttpPeer(server.url, auth=oauth_provider(server.url, store=store)))
        assert str(caught.value).startswith(
            f"peer 'notes': the token store {str(tokens)!r} is unusable: it is not valid JSON"
        )
        assert tokens.read_text() == '{"version": 1, "servers": {'  # left as it was


async def test_a_client_registered_beforehand_authorizes_without_registering() -> None:
    redirect = "http://127.0.0.1:9/callback"  # the test plays the browser: nothing listens there
    async with oauth_server("--client", "app", "s3cret", redirect) as server:
        browser = Browser()
        auth = oauth_provider(
            server.url,
            client_id="app",
            client_secret="s3cret",
            redirect_uri=redirect,
            redirect_handler=browser.visit,
            callback_handler=browser.callback,
        )
        async with Router(connect_timeout=10) as router:
            await router.join("notes", HttpPeer(server.url, auth=auth))
            assert (await counts(router, "notes"))["registrations"] == 0
            assert "client_id=app&" in browser.visited[0]
            wrong = oauth_provider(
                server.url,
                client_id="app",
                client_secret="not-the-secret",  # masked wherever it shows: not the peer's id
                redirect_uri=redirect,
                redirect_handler=browser.visit,
                callback_handler=browser.callback,
            )
            with pytest.raises(PeerUnavailableError) as caught:
                await router.join("wrong", HttpPeer(server.url, auth=wrong))
            assert str(caught.value).startswith(
                f"peer 'wrong': the authorization with the server at {server.url} failed: "
                "Token exchange failed (401)"
            )


async def test_a_config_entry_with_a_bearer_token(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    async with oauth_server() as server:
        entries = {
            "good": {"url": server.url, "auth": {"type": "bearer", "token": STATIC_TOKEN}},
            "bad": {"url": server.url, "auth": {"type": "bearer", "token": "wrong"}},
        }
        config.write_text(json.dumps({"mcpServers": entries}))
        specs = load_config(config)
        async with Router(connect_timeout=10) as router:
            await router.join("good", specs["good"])
            with pytest.raises(PeerUnavailableError, match="refused the bearer token"):
                await router.join("bad", specs["bad"])


async def test_sse_peers_take_credentials_too_and_config_values_are_expanded(tmp_path: Path) -> None:
    async with oauth_server(sse=True) as server, Router() as router:
        assert server.url.endswith("/sse")
        with pytest.raises(PeerUnavailableError) as caught:
            await router.join("bare", SsePeer(server.url))
        assert "requires authorization (HTTP 401" in str(caught.value)
        with pytest.raises(PeerUnavailableError, match="refused the bearer token"):
            await router.join("bad", SsePeer(server.url, auth=BearerAuth("not-" + STATIC_TOKEN)))
        config = tmp_path / "mcp.json"
        entry = {"url": "${NOTES_URL}", "auth": {"type": "bearer", "token": "${NOTES_TOKEN}"}}
        config.write_text(json.dumps({"mcpServers": {"notes": entry}}))
        specs = load_config(config, environ={"NOTES_URL": server.url, "NOTES_TOKEN": STATIC_TOKEN})
        assert isinstance(specs["notes"], SsePeer)
        names = await router.join("notes", specs["notes"])
        assert "notes__echo" in names
        outcome = await router.call("notes__echo", {"text": "over SSE"})
        assert not outcome.is_error and "over SSE" in outcome.text
