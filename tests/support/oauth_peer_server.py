"""An MCPServer behind OAuth over streamable HTTP on 127.0.0.1, run as a subprocess by the auth tests.

    python tests/support/oauth_peer_server.py PORT [--code-token-ttl SECONDS] [--static-token TOKEN]
        [--client ID SECRET REDIRECT_URI] [--clock-file PATH]

The server is its own authorization server (the `mcp` SDK's auth routes): dynamic client
registration, the authorization-code grant with PKCE and refresh tokens, all in memory. Its
`/authorize` approves at once: it redirects straight to the client's redirect URI with a code,
so a test plays the browser by fetching the authorization URL and following the redirect.

Access tokens from an authorization code expire after `--code-token-ttl` seconds (3600 by
default); refreshed ones after an hour. `--static-token` is a bearer token accepted as it is;
`--client` registers a confidential client beforehand (`client_secret_post`). With `--clock-file`,
the server's clock runs ahead of the wall clock by the seconds written in that file (read at each
use), so a test expires tokens by moving the clock, without waiting.
Tools: ``echo(text)`` and ``counts()``, how many registrations, authorizations, code exchanges
and refreshes the server has seen (JSON). It exits when its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPE = "tools"
REFRESHED_TTL = 3600


@dataclass
class MemoryAuthorizationServer:
    """An `OAuthAuthorizationServerProvider` that keeps everything in dicts and approves every request."""

    code_token_ttl: int = 3600
    static_token: str | None = None
    clock_file: str | None = None
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: {"registrations": 0, "authorizations": 0, "exchanges": 0, "refreshes": 0}
    )

    def now(self) -> float:
        """The wall clock, moved ahead by the seconds in `clock_file` (if any)."""
        offset = 0.0
        if self.clock_file is not None and os.path.exists(self.clock_file):
            with open(self.clock_file) as file:
                offset = float(file.read().strip() or 0)
        return time.time() + offset

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=self.now() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.counts["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.counts["exchanges"] += 1
        return self._issue(
            client, authorization_code.scopes, authorization_code.resource, self.code_token_ttl
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.token not in self.refresh:
            raise TokenError(error="invalid_grant", error_description="refresh token already used")
        del self.refresh[refresh_token.token]
        self.counts["refreshes"] += 1
        return self._issue(client, scopes or refresh_token.scopes, refresh_token.resource, REFRESHED_TTL)

    async def load_access_token(self, token: str) -> AccessToken | None:
        if self.static_token is not None and secrets.compare_digest(token, self.static_token):
            return AccessToken(token=token, client_id="static", scopes=[SCOPE])
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < self.now()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None, ttl: int
    ) -> OAuthToken:
        assert client.client_id is not None
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        expires_at = int(self.now()) + ttl
        self.access[access] = AccessToken(
            token=access, client_id=client.client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client.client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(access_token=access, expires_in=ttl, scope=" ".join(scopes), refresh_token=refresh)


def build(port: int, provider: MemoryAuthorizationServer) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "oauth-peer",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=False,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def counts() -> str:
        """What the authorization server has done so far."""
        return json.dumps(provider.counts, sort_keys=True)

    return server


def _exit_with_parent() -> None:
    """Stop when stdin closes: the test that started us is gone, even if it could not stop us."""
    sys.stdin.buffer.read()
    os._exit(0)


def main() -> None:
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--code-token-ttl", type=int, default=3600)
    parser.add_argument("--static-token", default=None)
    parser.add_argument("--client", nargs=3, metavar=("ID", "SECRET", "REDIRECT_URI"), default=None)
    parser.add_argument("--sse", action="store_true", help="the legacy SSE transport at /sse")
    parser.add_argument("--clock-file", default=None, help="seconds the server's clock runs ahead")
    options = parser.parse_args()
    provider = MemoryAuthorizationServer(
        options.code_token_ttl, options.static_token, clock_file=options.clock_file
    )
    if options.client:
        client_id, secret, redirect_uri = options.client
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=[redirect_uri],
            token_endpoint_auth_method="client_secret_post",
            scope=SCOPE,
        )
    server = build(options.port, provider)
    app = server.sse_app() if options.sse else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
