"""The "auth" (and "oauth") key of an mcpServers entry: every well-formed form gives the credentials it
says, and any other value is a ConfigError naming the server, never another exception."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.auth import OAuthClientProvider

from mcpx_router import BearerAuth, ConfigError, FileTokenStore, HttpPeer, MemoryTokenStore
from mcpx_router.peers import parse_config
from mcpx_router.peers.auth._auth import token_file

URL = "https://notes.example/mcp"
PROPERTY = settings(max_examples=300, deadline=None)

printable = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20)
anything = st.text(st.characters(exclude_categories=()), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | anything,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(anything, inner, max_size=3),
    max_leaves=10,
)
scope_lists = st.lists(printable.filter(lambda s: '"' not in s and "\\" not in s), min_size=1, max_size=3)


def written(value: str) -> str:
    """`value` as a config file writes it: values are expanded, so a `$` run before `{` is doubled."""
    return re.sub(r"(\$+)(?=\{)", lambda run: run.group(1) * 2, value)


def spec_of(entry: dict[str, Any], base_dir: Path | None = None) -> HttpPeer:
    spec = parse_config({"mcpServers": {"notes": {"url": URL, **entry}}}, base_dir=base_dir)["notes"]
    assert isinstance(spec, HttpPeer)
    return spec


@PROPERTY
@given(token=printable, typed=st.booleans())
def test_a_bearer_entry_sends_its_token(token: str, typed: bool) -> None:
    # Values are expanded like every other config value: a `$` run before `{` is written doubled.
    auth = {"type": "bearer", "token": written(token)} if typed else {"token": written(token)}
    spec = spec_of({"auth": auth})
    assert isinstance(spec.auth, BearerAuth) and repr(spec.auth) == "BearerAuth(token='…')"
    request = httpx2.Request("GET", URL)
    assert next(spec.auth.auth_flow(request)).headers["authorization"] == f"Bearer {token}"


@PROPERTY
@given(
    client=st.none() | st.tuples(printable, st.none() | printable),
    scopes=st.none() | scope_lists,
    as_text=st.booleans(),
    port=st.none() | st.integers(1, 65535),
    store=st.sampled_from([None, "memory", "tokens.json", "/abs/t.json"]),
    form=st.sampled_from(["auth", "oauth", "cursor"]),
)
def test_an_oauth_entry_gives_a_provider_with_its_settings(
    client: tuple[str, str | None] | None,
    scopes: list[str] | None,
    as_text: bool,
    port: int | None,
    store: str | None,
    form: str,
) -> None:
    settings_: dict[str, Any] = {}
    if client is not None:
        names = ("CLIENT_ID", "CLIENT_SECRET") if form == "cursor" else ("clientId", "clientSecret")
        settings_[names[0]] = written(client[0])
        if client[1] is not None:
            settings_[names[1]] = written(client[1])
    if scopes is not None:
        settings_["scopes"] = written(" ".join(scopes)) if as_text else [written(s) for s in scopes]
    if port is not None:
        settings_["callbackPort"] = port
    if store is not None:
        settings_["tokenStore"] = store
    entry = {"oauth": settings_} if form == "oauth" else {"auth": {"type": "oauth", **settings_}}
    spec = spec_of(entry, base_dir=Path("/config"))
    assert isinstance(spec.auth, OAuthClientProvider)
    context = spec.auth.context
    assert context.server_url == URL
    assert context.client_metadata.scope == (" ".join(scopes) if scopes else None)
    (uri,) = context.client_metadata.redirect_uris or []
    # The redirect URI is a URL: the default port is not written (":80" is implied).
    assert (uri.scheme, uri.host, uri.port, uri.path) == ("http", "127.0.0.1", port or 33418, "/callback")
    expected = {
        None: None,
        "memory": None,
        "tokens.json": Path("/config/tokens.json"),
        "/abs/t.json": Path("/abs/t.json"),
    }
    if store is None:
        assert token_file(spec.auth) is not None and token_file(spec.auth).name == "tokens.json"  # type: ignore[union-attr]
    else:
        assert token_file(spec.auth) == expected[store]
    if store == "memory":
        assert isinstance(getattr(context.storage, "inner", context.storage), MemoryTokenStore)
    else:
        assert isinstance(getattr(context.storage, "inner", context.storage), FileTokenStore)


async def _client_of(provider: OAuthClientProvider) -> Any:
    return await provider.context.storage.get_client_info()


@pytest.mark.anyio
async def test_a_preregistered_client_is_used_without_registering(tmp_path: Path) -> None:
    spec = spec_of({"auth": {"clientId": "app", "clientSecret": "s", "tokenStore": str(tmp_path / "t.json")}})
    assert isinstance(spec.auth, OAuthClientProvider)
    client = await _client_of(spec.auth)
    assert (client.client_id, client.client_secret, client.token_endpoint_auth_method) == (
        "app",
        "s",
        "client_secret_post",
    )


@PROPERTY
@given(key=st.sampled_from(["auth", "oauth"]), value=json_values)
def test_any_other_value_is_a_config_error_naming_the_server(key: str, value: Any) -> None:
    try:
        spec = spec_of({key: value})
    except ConfigError as exc:
        assert str(exc).startswith("the peer config: server 'notes': ") and exc.peer == "notes"
    else:
        assert spec.auth is None or isinstance(spec.auth, BearerAuth | OAuthClientProvider)
        assert value is None or isinstance(value, dict)


@PROPERTY
@given(
    settings_=st.dictionaries(
        st.sampled_from(
            ["type", "token", "clientId", "clientSecret", "scopes", "callbackPort", "tokenStore"]
        ),
        json_values,
        max_size=4,
    )
)
def test_any_settings_give_credentials_or_a_config_error(settings_: dict[str, Any]) -> None:
    try:
        spec = spec_of({"auth": settings_})
    except ConfigError as exc:
        assert exc.peer == "notes" and "'notes'" in str(exc)
    else:
        assert isinstance(spec.auth, BearerAuth | OAuthClientProvider)


def test_errors_say_what_is_wrong(tmp_path: Path) -> None:
    cases = {
        json.dumps({"type": "basic"}): '"auth"."type" must be "bearer" or "oauth", not \'basic\'',
        json.dumps({"type": "bearer"}): '"auth"."token" must be a non-empty string, not None',
        json.dumps({"type": "bearer", "token": "a b"}): "printable ASCII characters without spaces",
        json.dumps({"type": "oauth", "clientSecret": "s"}): '"clientSecret" needs the "clientId"',
        json.dumps({"type": "oauth", "callbackPort": 0}): '"callbackPort" must be a port number',
        json.dumps({"type": "oauth", "scopes": ["a b"]}): '"scopes" must be a list of scope names',
        json.dumps({"type": "oauth", "clientID": "x"}): "unknown keys 'clientID'",
        json.dumps({"clientId": "x", "CLIENT_ID": "y"}): "names the client id or secret twice",
    }
    for auth, expected in cases.items():
        with pytest.raises(ConfigError) as caught:
            spec_of({"auth": json.loads(auth)})
        assert expected in str(caught.value), (auth, str(caught.value))
    with pytest.raises(ConfigError, match='give either "auth" or "oauth", not both'):
        spec_of({"auth": {"token": "t"}, "oauth": {}})
