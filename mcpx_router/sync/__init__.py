"""A blocking API for scripts, notebooks and threads: the async `Router` and adapter in a loop thread.

Example:
    ```python
    from mcpx_router import sync

    with sync.Router() as router:
        router.join("calc", calculator_server)
        messages += router.dispatch(message.tool_calls)
    ```
"""

import importlib

from ._portal import Backend
from ._router import BlockingEvents, OpenAIPeerToolAdapter, Router

__all__ = ["Backend", "BlockingEvents", "OpenAIPeerToolAdapter", "Router"]


def __getattr__(name: str) -> object:
    # `sync.loop` as the docs write it, after `from mcpx_router import sync`; `openai` loads with it.
    if name == "loop":
        return importlib.import_module(f"{__name__}.loop")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
