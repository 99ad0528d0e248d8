"""The background event loop of a blocking facade: one thread, one anyio blocking portal, one object.

The async object (a `Router`) is entered and left in one task of the portal's loop (anyio's
`wrap_async_context_manager`), so its task group opens and closes in the same task; every call
from any thread runs as a task of that loop and blocks its caller until it is done.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from functools import partial
from typing import Any, Generic, Literal, TypeVar, overload

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .._errors import AdapterClosedError, UsageError
from .._tracing import attached, current_context

__all__ = ["Backend", "LoopThread"]

logger = logging.getLogger("mcpx_router")

Backend = Literal["asyncio", "trio"]
T = TypeVar("T")
R = TypeVar("R")


class LoopThread(Generic[T]):
    """Runs `make()`'s async context manager in an event loop thread until `close()`.

    Args:
        make: Called in the loop thread; what it returns is entered there and held open.
        backend: "asyncio" or "trio".
        backend_options: Passed to `anyio.run` (e.g. `{"use_uvloop": True}`).
        what: How errors name the facade ("this Router").
    """

    def __init__(
        self,
        make: Callable[[], AbstractAsyncContextManager[T]],
        *,
        backend: Backend,
        backend_options: dict[str, Any] | None,
        what: str,
    ) -> None:
        if backend not in ("asyncio", "trio"):
            raise UsageError(f"backend must be 'asyncio' or 'trio', not {backend!r}")
        self._what = what
        self._lock = threading.Lock()
        self._closed = False
        self._trio = backend == "trio"
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal(
            backend, backend_options, name=f"mcpx_router-{backend}"
        )
        self._portal = self._away_from_trio(self._portal_cm.__enter__)
        try:
            self._loop_thread = self._away_from_trio(partial(self._portal.call, threading.get_ident))
            held = self._away_from_trio(partial(self._portal.call, make))
            self._held = self._portal.wrap_async_context_manager(held)
            self.value: T = self._away_from_trio(self._held.__enter__)
        except BaseException as exc:
            self._away_from_trio(partial(self._portal_cm.__exit__, type(exc), exc, exc.__traceback__))
            raise

    @property
    def closed(self) -> bool:
        return self._closed

    @overload
    def call(self, fn: Callable[..., Awaitable[R]], *args: Any, **kwargs: Any) -> R: ...
    @overload
    def call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R: ...
    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` in the loop (a coroutine function is awaited) and return its result.

        The caller's OpenTelemetry context goes with the call, so spans started in the loop
        are children of the caller's current span (the portal copies the calling thread's
        context; a Trio caller's call goes through a helper thread, so it is carried explicitly).
        """
        self._check_usable()
        try:
            run = partial(self._portal.call, _in_context, current_context(), partial(fn, *args, **kwargs))
            return self._away_from_trio(run)
        except RuntimeError as exc:
            if self._closed:  # closed by another thread while this call was on its way
                raise AdapterClosedError(f"{self._what} was closed; create a new one") from exc
            raise

    def close(self) -> None:
        """Leave the held object (its peers disconnect, their processes end), then stop the loop thread."""
        with self._lock:
            if self._closed:
                return
            if threading.get_ident() == self._loop_thread:
                raise UsageError(
                    f"{self._what} cannot be closed from its own event loop thread "
                    "(an on_event callback, say); close it from another thread"
                )
            self._closed = True
            try:
                self._away_from_trio(partial(self._held.__exit__, None, None, None))
            finally:
                self._away_from_trio(partial(self._portal_cm.__exit__, None, None, None))

    def _away_from_trio(self, fn: Callable[[], R]) -> R:
        """`fn()`, from a helper thread when this thread runs Trio and so does the portal.

        Trio refuses to be entered from a thread that runs Trio itself, even another run (it
        would deadlock its own); any other caller calls the portal directly.
        """
        if not (self._trio and _runs_trio()):
            return fn()
        outcome: list[tuple[bool, Any]] = []

        def run() -> None:
            try:
                outcome.append((True, fn()))
            except BaseException as exc:
                outcome.append((False, exc))

        helper = threading.Thread(target=run, name="mcpx_router-caller", daemon=True)
        helper.start()
        helper.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        result: R = value
        return result

    def close_on_collection(self, owner: object) -> None:
        """Close when `owner` is garbage collected, or at interpreter exit, if nobody closed it first."""
        weakref.finalize(owner, _close_quietly, self)

    def _check_usable(self) -> None:
        if threading.get_ident() == self._loop_thread:
            raise UsageError(
                f"{self._what}'s blocking methods cannot be called from its own event loop thread "
                "(an on_event callback, say): they would wait for that thread forever"
            )
        if self._closed:
            raise AdapterClosedError(f"{self._what} was closed; create a new one")


def _runs_trio() -> bool:
    import trio  # the portal runs on Trio, so it is loaded

    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        return False
    return True


def _close_quietly(loop: LoopThread[Any]) -> None:
    if loop.closed:
        return
    if threading.get_ident() == loop._loop_thread:
        # Collected inside its own loop: close from a helper thread rather than deadlock.
        threading.Thread(target=_close_quietly, args=(loop,), daemon=True).start()
        return
    try:
        loop.close()
    except Exception:
        logger.exception("closing an unclosed blocking facade failed")


async def _in_context(context: object, fn: Callable[[], Awaitable[R] | R]) -> R:
    with attached(context):
        result = fn()
        if isinstance(result, Awaitable):
            return await result
        return result
