"""Serving an inspector on this machine's loopback interface, with Hypercorn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._adapter import OpenAIPeerToolAdapter
from .._errors import UsageError
from ..peers._router import Router
from ..peers._topic_peers import TopicMembership
from ._app import Inspector

__all__ = ["serve"]


@asynccontextmanager
async def serve(
    target: Router | OpenAIPeerToolAdapter,
    *,
    port: int = 0,
    read_only: bool = False,
    topic: TopicMembership | None = None,
    **options: Any,
) -> AsyncIterator[tuple[Inspector, str]]:
    """Serve an inspector of `target` on 127.0.0.1 (port 0: any free one) for the block; yield it
    and the URL to open (with its token).

    Example:
        ```python
        async with Router() as router, serve(router) as (inspector, url):
            print("open", url)
            await anyio.sleep_forever()
        ```
    """
    from ..mcpx.gateway._serve import serve_asgi  # Hypercorn: loaded only to serve, not to mount

    if not 0 <= port <= 65535:
        raise UsageError(f"port must be 0 to 65535, not {port!r}")
    inspector = Inspector(target, read_only=read_only, topic=topic, **options)
    async with serve_asgi(inspector, host="127.0.0.1", port=port) as base:
        yield inspector, inspector.url(base)
