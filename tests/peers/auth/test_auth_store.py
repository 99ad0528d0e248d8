"""Token stores: any tokens and client registrations for any server URLs come back as they went in,
and a token file that is not one is refused with a clear error and never overwritten."""

from __future__ import annotations

import json
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from mcpx_router import ConfigError, FileTokenStore, MemoryTokenStore
from mcpx_router._errors import redact
from mcpx_router.peers.auth._token_file import expires_at, with_expires_in

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Any code point, lone surrogates included: a server's JSON can carry them (as "\ud800").
texts = st.text(st.characters(exclude_categories=()), min_size=1, max_size=30)
tokens = st.builds(
    OAuthToken,
    access_token=texts,
    expires_in=st.none() | st.integers(-(10**6), 10**9),
    scope=st.none() | texts,
    refresh_token=st.none() | texts,
)
clients = st.builds(
    OAuthClientInformationFull,
    client_id=texts,
    client_secret=st.none() | texts,
    redirect_uris=st.just(["http://127.0.0.1:33418/callback"]),
    client_name=st.none() | texts,
    scope=st.none() | texts,
)
servers = st.dictionaries(
    st.text(max_size=40), st.tuples(st.none() | tokens, st.none() | clients), max_size=4
)


def same_tokens(loaded: OAuthToken | None, stored: OAuthToken | None) -> None:
    """Equal, but for `expires_in`, which is the seconds left: at most 2 s fewer after a round trip."""
    if stored is None or loaded is None:
        assert loaded is stored is None
        return
    assert loaded.model_dump(exclude={"expires_in"}) == stored.model_dump(exclude={"expires_in"})
    if stored.expires_in is None:
        assert loaded.expires_in is None
    else:
        assert loaded.expires_in is not None and 0 <= stored.expires_in - loaded.expires_in <= 2


@PROPERTY
@given(table=servers)
async def test_a_file_store_gives_back_what_it_kept_for_every_url(table: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "deeper" / "tokens.json"
        for url, (token, client) in table.items():
            store = FileTokenStore(path, url)
            if token is not None:
                await store.set_tokens(token)
            if client is not None:
                await store.set_client_info(client)
        for url, (token, client) in table.items():
            fresh = FileTokenStore(path, url)  # as another process would read it
            same_tokens(await fresh.get_tokens(), token)
            assert await fresh.get_client_info() == client
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert sorted(json.loads(path.read_text())["servers"]) == sorted(
                url for url, (token, client) in table.items() if (token, client) != (None, None)
            )


@PROPERTY
@given(token=st.none() | tokens, client=st.none() | clients)
async def test_a_memory_store_gives_back_what_it_kept(token: OAuthToken | None, client: Any) -> None:
    store = MemoryTokenStore()
    if token is not None:
        await store.set_tokens(token)
    if client is not None:
        await store.set_client_info(client)
    same_tokens(await store.get_tokens(), token)
    assert await store.get_client_info() == client


@PROPERTY
@given(token=tokens, now=st.floats(0, 4e9), later=st.floats(0, 1e6))
def test_a_stored_expiry_counts_down_and_never_lengthens(token: OAuthToken, now: float, later: float) -> None:
    loaded = with_expires_in(expires_at(token, now), now + later)
    elapsed = (now + later) - now  # the time that passed as the two clock readings tell it (floats round)
    if token.expires_in is None:
        assert loaded.expires_in is None
    else:
        assert loaded.expires_in is not None
        assert token.expires_in - elapsed - 1 <= loaded.expires_in <= token.expires_in - elapsed


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "tokens": json_values | st.dictionaries(st.text(max_size=12), json_values),
        "client": json_values,
    },
)
broken_files = st.one_of(
    st.binary(max_size=60),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(st.just("u"), entries | json_values, max_size=1).map(
        lambda servers: json.dumps({"version": 1, "servers": servers}).encode()
    ),
)


@PROPERTY
@given(content=broken_files, token=tokens)
async def test_any_file_is_read_or_refused_clearly_and_a_refused_file_is_left_alone(
    content: bytes, token: OAuthToken
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tokens.json"
        path.write_bytes(content)
        store = FileTokenStore(path, "u")
        for read in (store.get_tokens, store.get_client_info):
            try:
                value = await read()
            except ConfigError as exc:
                # The path as the message shows it: the tokens of earlier examples are secrets, and
                # a secret is masked wherever it appears, in a random folder's name too.
                shown = redact(repr(str(path)))
                assert str(exc).startswith(
                    (f"the token store {shown} is unusable: ", f"cannot read the token store {shown}: ")
                )
            else:
                assert value is None or isinstance(value, OAuthToken | OAuthClientInformationFull)
        try:
            await store.set_tokens(token)
        except ConfigError as exc:
            assert "token store" in str(exc)
            assert path.read_bytes() == content
        else:
            same_tokens(await FileTokenStore(path, "u").get_tokens(), token)


async def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.mkdir()  # a directory where the file should be: reading fails even as root
    with pytest.raises(ConfigError, match=r"cannot read the token store .*tokens\.json': Is a directory"):
        await FileTokenStore(path, "u").get_tokens()
    with pytest.raises(ConfigError, match="cannot read the token store"):
        await FileTokenStore(path, "u").set_tokens(OAuthToken(access_token="a"))
