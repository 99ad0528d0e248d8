"""The gateways a topic client may use: one URL, or several serving the same topics (NATS mode).

A client connects to the first of them that answers, and after losing a connection starts with
the next one, so a dead gateway costs one refused attempt. The welcome of the gateway it reaches
reconciles the roster as after any reconnect.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from .._errors import MCPxAuthError, MCPxConnectionError
from ._auth import TokenProvider, dev_token_provider, http_base

__all__ = ["GatewayList", "gateway_urls"]

logger = logging.getLogger("mcpx_router.mcpx")


def gateway_urls(value: str | Sequence[str]) -> tuple[str, ...]:
    """One URL, or a list of them (a comma-separated string too), checked and without repeats."""
    items = [value] if isinstance(value, str) else list(value)
    urls = [u.strip() for item in items for u in str(item).split(",") if u.strip()]
    if not urls:
        raise ValueError("give at least one gateway URL")
    for url in urls:
        http_base(url)  # raises ValueError for what is not a gateway URL
    return tuple(dict.fromkeys(urls))


class GatewayList:
    """The gateway URLs of a topic client and which one it uses now."""

    def __init__(self, urls: str | Sequence[str]) -> None:
        self.urls = gateway_urls(urls)
        self._index = 0

    @property
    def current(self) -> str:
        return self.urls[self._index]

    def dev_tokens(self, participant_id: str, topic: str) -> TokenProvider:
        """Development tokens from whichever gateway we are connecting to."""

        async def provide() -> str:
            return await dev_token_provider(self.current, participant_id, topic)()

        return provide

    def lost(self) -> None:
        """The connection to the current gateway was lost: start with the next one."""
        self._index = (self._index + 1) % len(self.urls)

    async def connect(self, attempt: Callable[[str], Awaitable[None]]) -> None:
        """Run `attempt(url)` on each gateway in turn, from the current one, until one connects.

        An authentication refusal ends the search (every gateway shares the credentials); when
        no gateway can be reached the error names each one's failure.
        """
        failures: list[str] = []
        for _ in range(len(self.urls)):
            url = self.current
            try:
                await attempt(url)
                return
            except MCPxAuthError:
                raise
            except MCPxConnectionError as exc:
                if len(self.urls) == 1:
                    raise
                failures.append(f"{url}: {exc}")
                logger.info("gateway %s cannot be reached (%s); trying the next one", url, exc)
                self.lost()
        tried = "; ".join(failures)
        raise MCPxConnectionError(f"none of the {len(self.urls)} gateways could be reached: {tried}")
