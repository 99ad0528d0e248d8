"""Credentials for HTTP peers: a bearer token, or OAuth with the `mcp` SDK's client provider.

    HttpPeer(url, auth=BearerAuth(os.environ["NOTES_TOKEN"]))
    HttpPeer(url, auth=oauth_provider(url, scopes=["tools"], store=FileTokenStore("tokens.json", url)))

Both are `httpx2.Auth` objects that the peer's HTTP client applies to every request. The OAuth
provider discovers the authorization server, registers a client (unless a client id is given),
runs the authorization-code flow with PKCE when it has no usable token, and refreshes an
expired access token with its refresh token. Tokens and the registered client are kept in a
token store: `MemoryTokenStore` (the default, for one process) or `FileTokenStore` (a JSON file
only its owner can read, shared by every process that names it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from ..._errors import remember_secret
from ._token_file import FileTokenStore, expires_at, remember_token_secrets, with_expires_in

if TYPE_CHECKING:  # the SDK's OAuth client loads with the first provider made
    from mcp.client.auth import OAuthClientProvider, TokenStorage

__all__ = [
    "DEFAULT_CALLBACK_PORT",
    "AuthorizationRequired",
    "BearerAuth",
    "FileTokenStore",
    "MemoryTokenStore",
    "oauth_provider",
]

DEFAULT_CALLBACK_PORT = 33418
"""The localhost port of the default redirect URI, http://127.0.0.1:33418/callback."""


class BearerAuth(httpx2.Auth):
    """Sends `Authorization: Bearer <token>` with every request (the token is not shown in its repr).

    Example:
        >>> BearerAuth("s3cret")
        BearerAuth(token='…')
    """

    def __init__(self, token: str) -> None:
        remember_secret(token)
        if not isinstance(token, str) or not token or not all("!" <= c <= "~" for c in token):
            raise ValueError(
                "a bearer token must be a non-empty string of printable ASCII characters without spaces"
            )
        self.token = token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(token='…')"


class AuthorizationRequired(Exception):
    """A person must authorize this client, and no one is there to do it (no redirect handler)."""


def _not_expected(record: logging.LogRecord) -> bool:
    """Keep the SDK's "OAuth flow error" traceback, unless the flow only stopped for want of a person:
    that is an expected condition, reported in the peer's join error."""
    return not (record.exc_info and isinstance(record.exc_info[1], AuthorizationRequired))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_not_expected)


class MemoryTokenStore:
    """Tokens and client registration of one server, kept in this process only (the SDK's `TokenStorage`)."""

    def __init__(self) -> None:
        self._tokens: dict[str, Any] | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return None if self._tokens is None else with_expires_in(self._tokens, time.time())

    async def set_tokens(self, tokens: OAuthToken) -> None:
        remember_token_secrets(tokens)
        self._tokens = expires_at(tokens, time.time())

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        remember_token_secrets(client=client_info)
        self._client = client_info


RedirectHandler = Callable[[str], Awaitable[None]]
"""Shows the authorization URL to the person (opens a browser, prints it, ...)."""
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]
"""Waits for the redirect back and returns its code and state."""


def oauth_provider(
    server_url: str,
    *,
    scopes: Sequence[str] | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    client_name: str = "mcpx-router",
    redirect_uri: str = f"http://127.0.0.1:{DEFAULT_CALLBACK_PORT}/callback",
    redirect_handler: RedirectHandler | None = None,
    callback_handler: CallbackHandler | None = None,
    store: TokenStorage | None = None,
) -> OAuthClientProvider:
    """The `mcp` SDK's OAuth client for the MCP server at `server_url`, to give `HttpPeer(auth=...)`.

    Example:
        ```python
        store = FileTokenStore("~/.config/mcpx-router/tokens.json", url)
        await router.join("notes", HttpPeer(url, auth=oauth_provider(url, store=store)))
        ```

    Args:
        server_url: The MCP endpoint (the same URL as the peer's).
        scopes: The scopes to ask for (default: what the server advertises).
        client_id: A client registered beforehand; without it the client registers itself
            (dynamic client registration) and keeps the registration in `store`.
        client_secret: The secret of that client, if it has one.
        client_name: The name shown to the person who authorizes.
        redirect_uri: Where the authorization server sends the browser back with the code.
        redirect_handler: Called with the authorization URL when a person must authorize.
            Without it (and `callback_handler`) the flow stops with `AuthorizationRequired`
            instead, and a peer that needs a new authorization cannot join.
        callback_handler: Waits for the redirect to `redirect_uri`; returns its code and state.
        store: Where tokens and the client registration live (default: `MemoryTokenStore()`).
    """
    metadata = OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(scopes) if scopes else None,
        token_endpoint_auth_method="client_secret_post" if client_secret else "none",
    )
    remember_secret(client_secret)
    storage: TokenStorage = store if store is not None else MemoryTokenStore()
    if client_id is not None:
        storage = _Preregistered(storage, metadata, client_id, client_secret)
    from ._oauth import OAuthProvider

    return OAuthProvider(
        server_url,
        metadata,
        storage,
        redirect_handler=redirect_handler or _no_person,
        callback_handler=callback_handler or _no_callback,
    )


async def _no_person(url: str) -> None:
    raise AuthorizationRequired(
        "the server needs an authorization by a person and this client has no redirect handler"
    )


async def _no_callback() -> AuthorizationCodeResult:
    raise AuthorizationRequired("no callback handler to receive the authorization code")


def token_file(auth: OAuthClientProvider) -> Path | None:
    """The file an OAuth provider of `oauth_provider` keeps its tokens in (None: not a file)."""
    storage: object = auth.context.storage
    if isinstance(storage, _Preregistered):
        storage = storage.inner
    return storage.path if isinstance(storage, FileTokenStore) else None


class _Preregistered:
    """A store that answers with a client registered beforehand when it holds none of its own."""

    def __init__(
        self, inner: TokenStorage, metadata: OAuthClientMetadata, client_id: str, client_secret: str | None
    ) -> None:
        self.inner = inner
        self._client = OAuthClientInformationFull(
            **metadata.model_dump(exclude_none=True), client_id=client_id, client_secret=client_secret
        )

    async def get_tokens(self) -> OAuthToken | None:
        return await self.inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self.inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        stored = await self.inner.get_client_info()
        return stored if stored is not None and stored.client_id == self._client.client_id else self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self.inner.set_client_info(client_info)
