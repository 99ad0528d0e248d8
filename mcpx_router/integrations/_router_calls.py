"""What the framework integrations share: a router's tools, one call on it from sync or async
code, and the images of an answer (no framework imported here)."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp.types as mt

from .._errors import UsageError
from ._loop_calls import LoopBlocked, call_in_loop

if TYPE_CHECKING:
    from .._catalogue import PublishedTool
    from .._dispatch import Outcome

__all__ = ["Image", "RouterCalls", "ShadowedToolWarning", "ToolRouter", "images_of"]

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class ShadowedToolWarning(UserWarning):
    """A tool of the agent's own has the name of one of the router's, which is then not offered
    (the agent's own tools come first; the model sees and calls the agent's)."""


class ToolRouter(Protocol):
    """What an integration reads of a router: `Router`, `OpenAIPeerToolAdapter`, or their
    blocking facades in `mcpx_router.sync` (whose `call` blocks instead of being awaited)."""

    @property
    def version(self) -> int: ...

    @property
    def tools(self) -> tuple[PublishedTool, ...]: ...

    def call(self, name: str, arguments: Mapping[str, Any] | None, /) -> Any: ...


class RouterCalls:
    """One tool call on a router, from the router's own event loop or from any other thread.

    A blocking facade (`mcpx_router.sync`) is called directly from sync code and through a worker
    thread from async code. An async router is awaited in its event loop; sync code in another
    thread reaches that loop through the token taken when this object was made there.
    """

    def __init__(self, router: ToolRouter) -> None:
        self.router = router
        self.awaited = inspect.iscoroutinefunction(router.call)
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread: int | None = None
        if self.awaited:
            try:
                self._token = anyio.lowlevel.current_token()
            except RuntimeError:
                pass  # made outside any event loop: only `acall` can be used
            else:
                self._loop_thread = threading.get_ident()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self  # a handle on a live router: copies of a program (DSPy's optimizers) share it

    def call(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        """Run the call and block until it is answered."""
        if not self.awaited:
            answered: Outcome = self.router.call(name, arguments)
            return answered
        if self._token is None or self._loop_thread is None or threading.get_ident() == self._loop_thread:
            raise UsageError(
                f"tool {name!r} was called synchronously, but its router is async: call it with "
                "`await` (ainvoke, acall), from a thread other than the router's event loop, or "
                "build the tools from a blocking router (mcpx_router.sync.Router)"
            )
        try:
            outcome: Outcome = call_in_loop(
                self._token, self._loop_thread, functools.partial(self.router.call, name, arguments)
            )
        except LoopBlocked:
            raise UsageError(
                f"tool {name!r} was called synchronously from a worker thread while its router's "
                "event loop thread waits for that very call (a synchronous `invoke` run on the "
                "loop's thread, e.g. inside `async def` or a notebook cell): that would deadlock. "
                "Call the agent with `await` (ainvoke, acall), run the synchronous call in another "
                "thread, or build the tools from a blocking router (mcpx_router.sync.Router)"
            ) from None
        return outcome

    async def acall(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        """Run the call; a blocking router's call runs in a worker thread."""
        if self.awaited:
            outcome: Outcome = await self.router.call(name, arguments)
            return outcome
        return await anyio.to_thread.run_sync(functools.partial(self.router.call, name, arguments))


@dataclass(frozen=True, slots=True)
class Image:
    """An image a tool answered with: its MIME type and base64 data."""

    mime_type: str
    data: str

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


def images_of(outcome: Outcome) -> list[Image]:
    """The images of a successful call's result: image content, and image blobs it embeds."""
    if outcome.is_error or outcome.result is None:
        return []
    found = []
    for block in outcome.result.content:
        if isinstance(block, mt.ImageContent):
            mime, data = block.mime_type, block.data
        elif isinstance(block, mt.EmbeddedResource) and isinstance(block.resource, mt.BlobResourceContents):
            mime, data = block.resource.mime_type or "", block.resource.blob
        else:
            continue
        if mime.lower() in _IMAGE_TYPES:
            found.append(Image(mime.lower(), data))
    return found
