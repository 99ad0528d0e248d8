"""The blocking `Router` and `OpenAIPeerToolAdapter`: the async ones, run in an event loop thread."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, Unpack

from .._adapter import DEFAULT_CALL_TIMEOUT
from .._adapter import OpenAIPeerToolAdapter as AsyncAdapter
from .._answering import UNSET
from .._backoff import Reconnect
from .._dispatch import CallProgress
from .._errors import AdapterClosedError, UsageError
from .._naming import ToolKey
from ..groups._grouping import GroupOptions
from ..groups._groups import GroupInfo
from ..groups._reputation import StatsReport
from ..peers._callbacks import PeerCallbacks
from ..peers._events import EventStream, RouterEvent
from ..peers._router import PeerStatus
from ..peers._router import Router as AsyncRouter
from ..peers._specs import PeerSpec, SessionPeer, as_peer_spec
from ..peers.content._content import RouterPrompt, RouterResource, RouterResourceTemplate
from ._calls import BlockingCalls
from ._portal import Backend, LoopThread

if TYPE_CHECKING:
    import mcp_types as mt

__all__ = ["BlockingEvents", "OpenAIPeerToolAdapter", "Router"]


class _Blocking(BlockingCalls):
    """What both facades share: the loop thread's lifetime, peers, content, events."""

    def __init__(
        self, make: Callable[[], Any], backend: Backend, backend_options: dict[str, Any] | None
    ) -> None:
        what = f"this {type(self).__name__}"
        self._loop = LoopThread(make, backend=backend, backend_options=backend_options, what=what)
        self._loop.close_on_collection(self)

    def close(self) -> None:
        """Disconnect every peer (their processes end), then stop the event loop thread.

        Calls still running are answered that their peer left. Closing twice is fine; any other
        method raises AdapterClosedError afterwards.
        """
        self._loop.close()

    @property
    def closed(self) -> bool:
        return self._loop.closed

    def __enter__(self) -> Self:
        if self._loop.closed:
            self._loop.call(lambda: None)  # raises AdapterClosedError
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def peers(self) -> tuple[str, ...]:
        """The ids of the peers joined (healthy or being reconnected)."""
        return self._loop.call(lambda: self._loop.value.peers)

    def status(self, peer_id: str) -> PeerStatus:
        """Where one peer stands; raise UnknownPeerError if it was not joined here."""
        return self._loop.call(self._loop.value.status, peer_id)

    def stats(self) -> StatsReport:
        """Calls, failures, latency and feedback per peer and per tool (see `Router.stats`)."""
        return self._loop.call(lambda: self._loop.value.stats())

    def feedback(self, call_id: str, ok: bool, weight: float = 1.0) -> ToolKey:
        """Judge the answer to a tool call (see `Router.feedback`)."""
        return self._loop.call(lambda: self._loop.value.feedback(call_id, ok, weight))

    def groups(self) -> tuple[GroupInfo, ...]:
        """Every group of equivalent tools now (see `Router.groups`)."""
        return self._loop.call(lambda: self._loop.value.groups())

    def set_aliases(self, aliases: Mapping[str, Any], *, auto_groups: bool | None = None) -> None:
        """Add or replace groups of equivalent tools (see `Router.set_aliases`)."""
        self._loop.call(lambda: self._loop.value.set_aliases(aliases, auto_groups=auto_groups))

    def events(self, *, max_buffer: int = 1024) -> BlockingEvents:
        """A blocking iterator of the events emitted while it is open (`with router.events() as events:`)."""
        return BlockingEvents(self._loop, self._loop.call(self._loop.value.events, max_buffer=max_buffer))

    def resources(self, peer: str | None = None) -> tuple[RouterResource, ...]:
        """Every peer's resources (or one peer's), under public names."""
        return self._loop.call(self._loop.value.resources, peer)

    def resource_templates(self, peer: str | None = None) -> tuple[RouterResourceTemplate, ...]:
        """Every peer's resource templates (or one peer's)."""
        return self._loop.call(self._loop.value.resource_templates, peer)

    def prompts(self, peer: str | None = None) -> tuple[RouterPrompt, ...]:
        """Every peer's prompts (or one peer's), under public names."""
        return self._loop.call(self._loop.value.prompts, peer)

    def read_resource(self, name_or_peer: str, uri: str | None = None) -> mt.ReadResourceResult:
        """Read a resource by public name, or by peer and URI (see `Router.read_resource`)."""
        return self._loop.call(self._loop.value.read_resource, name_or_peer, uri)

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> mt.GetPromptResult:
        """Get a prompt by public name (see `Router.get_prompt`)."""
        return self._loop.call(self._loop.value.get_prompt, name, arguments)


class Router(_Blocking):
    """A blocking `Router`: the same peers, tools and calls, for scripts, notebooks and threads.

    The async Router runs in an event loop thread of its own (anyio's blocking portal); every
    method blocks its caller until done, from any thread, also one that runs an event loop of
    its own (a notebook's). `on_event` and peer callbacks run in that loop thread and must not
    call the Router's blocking methods.

    Example:
        ```python
        from mcpx_router import StdioPeer, sync

        with sync.Router() as router:
            router.join("time", StdioPeer("uvx", ["mcp-server-time"]))
            response = client.chat.completions.create(
                model=model, messages=messages, tools=router.get_openai_tools()
            )
            messages += router.dispatch(response.choices[0].message.tool_calls)
        ```

    Args:
        backend: The event loop the Router runs on: "asyncio" or "trio".
        backend_options: Passed to `anyio.run` (e.g. `{"use_uvloop": True}`).
        The others: as `mcpx_router.Router`.
    """

    def __init__(
        self,
        *,
        backend: Backend = "asyncio",
        backend_options: dict[str, Any] | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        reconnect: Reconnect | None = None,
        connect_timeout: float = 30.0,
        refresh_debounce: float = 0.05,
        health_interval: float | None = 30.0,
        health_timeout: float = 10.0,
        on_event: Callable[[RouterEvent], object] | None = None,
        callbacks: PeerCallbacks | None = None,
        resource_tools: bool = False,
        **groups: Unpack[GroupOptions],
    ) -> None:
        options: dict[str, Any] = {
            **groups,
            "call_timeout": call_timeout,
            "reconnect": reconnect,
            "connect_timeout": connect_timeout,
            "refresh_debounce": refresh_debounce,
            "health_interval": health_interval,
            "health_timeout": health_timeout,
            "on_event": on_event,
            "callbacks": callbacks,
            "resource_tools": resource_tools,
        }
        super().__init__(lambda: AsyncRouter(**options), backend, backend_options)

    def join(
        self,
        peer_id: str,
        peer: PeerSpec | object,
        *,
        include_tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] | None = None,
    ) -> tuple[str, ...]:
        """Connect to a peer and publish its tools; return their public names (see `Router.join`).

        An `MCPServer` (or `InProcessPeer`) runs in the Router's event loop thread.
        """
        router = self._loop.value
        spec = _openable(peer_id, peer)
        return self._loop.call(
            router.join, peer_id, spec, include_tools=include_tools, exclude_tools=exclude_tools
        )

    def join_all(self, peers: Mapping[str, PeerSpec | object]) -> dict[str, tuple[str, ...]]:
        """Join several peers concurrently, all or nothing; return the public names of each."""
        return self._loop.call(self._loop.value.join_all, {k: _openable(k, v) for k, v in peers.items()})

    def join_config(self, path: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
        """Join every enabled server of an `mcpServers` JSON file, all or nothing."""
        return self._loop.call(self._loop.value.join_config, path)

    def leave(self, peer_id: str) -> None:
        """Close the peer's connection and withdraw its tools; returns once it is gone."""
        self._loop.call(self._loop.value.leave, peer_id)

    def refresh(self, peer_id: str | None = None) -> bool:
        """List one peer's tools again (or every peer's); return whether any changed."""
        return self._loop.call(self._loop.value.refresh, peer_id)


class OpenAIPeerToolAdapter(_Blocking):
    """A blocking `OpenAIPeerToolAdapter` that opens and keeps its peers' sessions itself.

    Its `add_peer` takes what `Router.join` takes (a `StdioPeer`, a URL, an `MCPServer`, ...)
    with the async adapter's per-peer options; the session lives in the adapter's event loop
    thread, and a lost connection is reconnected as a Router would.

    Example:
        ```python
        adapter = sync.OpenAIPeerToolAdapter(call_timeout=20)
        adapter.add_peer("calc", calculator_server, max_concurrency=4)
        messages += adapter.dispatch(message.tool_calls)
        adapter.close()
        ```

    Args:
        backend: "asyncio" or "trio".
        backend_options: Passed to `anyio.run`.
        connect_timeout: Seconds a handshake with its tool listing may take.
        The others: as `mcpx_router.OpenAIPeerToolAdapter`.
    """

    def __init__(
        self,
        *,
        backend: Backend = "asyncio",
        backend_options: dict[str, Any] | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_tools: int | None = 128,
        description_limit: int | None = 1024,
        max_output_chars: int | None = 100_000,
        media: Literal["describe", "attach"] = "describe",
        on_progress: Callable[[CallProgress], object] | None = None,
        strict: bool | None = False,
        json_string_params: bool = False,
        stemmer: str | None = "english",
        connect_timeout: float = 30.0,
        **groups: Unpack[GroupOptions],
    ) -> None:
        options: dict[str, Any] = {
            **groups,
            "call_timeout": call_timeout,
            "max_tools": max_tools,
            "description_limit": description_limit,
            "max_output_chars": max_output_chars,
            "media": media,
            "on_progress": on_progress,
            "strict": strict,
            "json_string_params": json_string_params,
            "stemmer": stemmer,
        }
        super().__init__(lambda: _adapter_router(options, connect_timeout), backend, backend_options)

    def add_peer(
        self,
        peer_id: str,
        peer: PeerSpec | object,
        *,
        call_timeout: float | None = UNSET,
        max_concurrency: int | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        tool_timeouts: Mapping[str, float | None] | None = None,
        strict: bool | None = UNSET,
    ) -> tuple[str, ...]:
        """Connect to a peer and publish its tools as `peer_id__tool`; return their public names.

        Args: as `OpenAIPeerToolAdapter.add_peer`, with `peer` a spec, URL or server (not a session).
        """
        spec = _openable(peer_id, peer)
        given: dict[str, Any] = {
            "max_concurrency": max_concurrency,
            "include_tools": include,
            "exclude_tools": exclude,
        }
        if call_timeout is not UNSET:
            given["call_timeout"] = call_timeout
        if strict is not UNSET:
            given["strict"] = strict
        if tool_timeouts is not None:
            given["tool_timeouts"] = dict(tool_timeouts)
        spec = dataclasses.replace(
            spec, **{k: v for k, v in given.items() if v is not None or k == "call_timeout"}
        )
        return self._loop.call(self._loop.value.join, peer_id, spec)

    def remove_peer(self, peer_id: str) -> None:
        """Disconnect the peer and withdraw its tools."""
        self._loop.call(self._loop.value.leave, peer_id)

    def refresh_peer(self, peer_id: str) -> bool:
        """List the peer's tools again and publish what changed; return whether anything did."""
        return self._loop.call(self._loop.value.refresh, peer_id)


def _openable(peer_id: str, peer: object) -> PeerSpec:
    """The spec of a peer the facade opens in its own loop; a session opened elsewhere is refused."""
    spec = as_peer_spec(peer)
    if isinstance(spec, SessionPeer):
        raise UsageError(
            f"peer {peer_id!r}: a connected session belongs to the event loop it was opened in and "
            "cannot be used from the blocking facade's; give a spec (StdioPeer, HttpPeer, a URL, an "
            "MCPServer) and the facade opens the session in its own loop"
        )
    return spec


@asynccontextmanager
async def _adapter_router(options: dict[str, Any], connect_timeout: float) -> AsyncIterator[AsyncRouter]:
    async with (
        AsyncAdapter(**options) as adapter,
        AsyncRouter(adapter=adapter, connect_timeout=connect_timeout) as router,
    ):
        yield router


class BlockingEvents:
    """A blocking iterator over a Router's events; the iteration ends when it is closed or the Router is."""

    def __init__(self, loop: LoopThread[AsyncRouter], stream: EventStream) -> None:
        self._loop = loop
        self._stream = stream

    @property
    def dropped(self) -> int:
        """Events dropped because more than `max_buffer` were unread."""
        return self._stream.dropped

    def __enter__(self) -> Self:
        self._loop.call(self._stream.__enter__)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._loop.closed:
            self._loop.call(self._stream.__exit__, None, None, None)

    def __iter__(self) -> Iterator[RouterEvent]:
        return self

    def __next__(self) -> RouterEvent:
        try:
            event = self._loop.call(_next_event, self._stream)
        except AdapterClosedError:
            event = None  # the Router was closed: so was this stream
        if event is None:
            raise StopIteration
        return event


async def _next_event(stream: EventStream) -> RouterEvent | None:
    try:
        return await stream.__anext__()
    except StopAsyncIteration:
        return None
