"""A blocking API for scripts, notebooks and threads: the async `Router` and adapter in a loop thread.

Example:
    ```python
    from mcpx_router import sync

    with sync.Router() as router:
        router.join("calc", calculator_server)
        messages += router.dispatch(message.tool_calls)
    ```
"""

from ._portal import Backend
from ._router import BlockingEvents, OpenAIPeerToolAdapter, Router

__all__ = ["Backend", "BlockingEvents", "OpenAIPeerToolAdapter", "Router"]
