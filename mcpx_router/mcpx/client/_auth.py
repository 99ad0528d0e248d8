"""Token providers and gateway URL helpers.

A token provider is any `async () -> str`. A topic client calls it to connect, keeps the token
for its reconnects, and calls it again when the gateway refuses that token (expired, or the
gateway restarted and forgot it): a provider should return a fresh token each time it is called.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx2

from ..._errors import remember_secret
from .._errors import MCPxAuthError, MCPxConnectionError

TokenProvider = Callable[[], Awaitable[str]]

logger = logging.getLogger("mcpx_router.mcpx")


class TokenHolder:
    """The token a client connects with: asked of `provider` when there is none, kept while the
    gateway accepts it, and asked for anew at once when the gateway refuses it (it expired, or a
    restarted gateway forgot it)."""

    def __init__(self, provider: TokenProvider) -> None:
        self.provider = provider
        self.token: str | None = None

    async def connect(self, attempt: Callable[[str], Awaitable[None]]) -> None:
        """Run `attempt(token)` (which calls `accepted` once the gateway took it)."""
        held = self.token
        if held is not None:
            try:
                return await attempt(held)
            except MCPxAuthError as exc:
                logger.info("our token was refused (%s); asking for a new one", exc)
                self.token = None
        token = await self.provider()
        remember_secret(token)  # no message shows it (see `_errors.redact`)
        await attempt(token)

    def accepted(self, token: str) -> None:
        self.token = token


def http_base(gateway_url: str) -> str:
    """`http(s)://host:port[/prefix]` for a gateway given as http(s):// or ws(s)://, no trailing slash."""
    parts = urlsplit(gateway_url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not a gateway URL: {gateway_url!r}")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def websocket_url(gateway_url: str, topic: str, *, presence: str | None = None) -> str:
    """The WebSocket URL of `topic`; `presence` asks our gateway for a presence form (`batched`,
    `none`; None asks nothing: one frame per join and leave, as the draft says)."""
    parts = urlsplit(http_base(gateway_url))
    scheme = "wss" if parts.scheme == "https" else "ws"
    query = f"topic={quote(topic, safe='')}" + (f"&presence={quote(presence, safe='')}" if presence else "")
    return urlunsplit((scheme, parts.netloc, f"{parts.path}/v0/ws", query, ""))


def static_token(token: str) -> TokenProvider:
    """A provider that always returns the same pre-shared token."""
    remember_secret(token)

    async def provide() -> str:
        return token

    return provide


def dev_token_provider(
    gateway_url: str, participant_id: str, topic: str, *, timeout: float = 10.0
) -> TokenProvider:
    """Fetch a token from a development gateway: `POST /v0/auth/token {"participantId", "topic"}`."""
    return token_endpoint(f"{http_base(gateway_url)}/v0/auth/token", participant_id, topic, timeout=timeout)


def token_endpoint(
    endpoint: str,
    participant_id: str,
    topic: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> TokenProvider:
    """Fetch a token from a token service: `POST endpoint {"participantId", "topic"}` answered
    `{"token": ...}` (the development gateway's shape); `headers` e.g. authenticate us to it."""

    async def provide() -> str:
        try:
            async with httpx2.AsyncClient(timeout=timeout, headers=headers) as client:
                response = await client.post(endpoint, json={"participantId": participant_id, "topic": topic})
        except httpx2.HTTPError as exc:
            raise MCPxConnectionError(f"token request to {endpoint} failed: {exc}") from None
        if response.status_code in (401, 403):
            raise MCPxAuthError(
                f"token request refused with HTTP {response.status_code}: {response.text[:200]}"
            )
        if response.status_code >= 400:
            raise MCPxConnectionError(
                f"token request failed with HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise MCPxConnectionError(f"token endpoint {endpoint} returned no token")
        return token

    return provide
