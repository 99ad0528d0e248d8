"""The `mcp` SDK's OAuth client provider, as `oauth_provider` makes it (loaded with the first one)."""

from __future__ import annotations

from mcp.client.auth import OAuthClientProvider

__all__ = ["OAuthProvider"]


class OAuthProvider(OAuthClientProvider):
    """The SDK's provider, which also knows when a token loaded from the store expires.

    The SDK keeps an expiry time only for tokens it obtained in this process; a stored token
    would be sent until the server refuses it, and a refusal starts a new authorization instead
    of a refresh. Stores here hand back `expires_in` as the seconds left, which is turned back
    into the expiry time on loading, so an expired stored token is refreshed first.
    """

    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            self.context.update_token_expiry(tokens)
