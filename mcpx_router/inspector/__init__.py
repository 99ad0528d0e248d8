"""A live view of a Router in the browser: its peers, what the model is sent, calls and events.

Not loaded by `import mcpx_router`: it brings Starlette's app side and, to serve it, Hypercorn.
`mcpx-router inspect` serves one for the servers it connects; a host mounts `Inspector(router)`
in its own ASGI app. See docs/inspector.md.

Example:
    ```python
    from mcpx_router.inspector import serve

    async with Router(stats=True) as router, serve(router) as (inspector, url):
        await router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
        print("open", url)   # http://127.0.0.1:PORT/?token=...
        await anyio.sleep_forever()
    ```
"""

from __future__ import annotations

from typing import Any

from .._adapter import OpenAIPeerToolAdapter
from ..peers._router import Router
from ._app import Inspector
from ._guard import LOOPBACK_HOSTS, AuthHook
from ._serve import serve
from ._snapshot import CHARS_PER_TOKEN

__all__ = ["CHARS_PER_TOKEN", "LOOPBACK_HOSTS", "AuthHook", "Inspector", "app", "serve"]


def app(target: Router | OpenAIPeerToolAdapter, **options: Any) -> Inspector:
    """`Inspector(target, **options)`: the ASGI app to mount over a live Router or adapter."""
    return Inspector(target, **options)
