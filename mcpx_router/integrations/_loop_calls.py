"""A call into an async router's event loop from another thread that cannot deadlock unnoticed.

A framework's synchronous entry point (LangGraph's `agent.invoke`, a Runnable's `batch`) run on
the router's own event-loop thread blocks that thread while it waits for the tools it runs in
worker threads; a worker that then waits for the event loop would wait forever. `call_in_loop`
submits the call without blocking, and while it waits it asks whether the loop's thread is
blocked waiting, through `concurrent.futures` (the executors LangChain and LangGraph run tools
in) or `Thread.join`, on the calling thread: then the call is withdrawn before it runs (or
cancelled where it started) and `LoopBlocked` is raised at once. A loop that is merely busy is
waited for, however long: only a wait that can never end is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import thread as futures_thread
from types import FrameType
from typing import Any, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["LoopBlocked", "call_in_loop"]

T = TypeVar("T")

_FIRST_LOOK, _LONGEST_LOOK = 0.05, 0.5
"""Seconds between two looks at the loop's thread while a call waits (doubling up to the longest)."""


class LoopBlocked(Exception):
    """The event loop's thread is blocked waiting on the thread that wants to call into it."""


def call_in_loop(
    token: anyio.lowlevel.EventLoopToken, loop_thread: int, call: Callable[[], Awaitable[T]]
) -> T:
    """Run `call()` in the event loop of `token` (whose thread is `loop_thread`) and return its
    result; raise `LoopBlocked`, with the call withdrawn, when that thread waits on this one."""
    if _waits_on_me(loop_thread):
        raise LoopBlocked
    future, cancel = _submit(token, call)
    pause = _FIRST_LOOK
    while True:
        try:
            return future.result(timeout=pause)
        except TimeoutError:
            if future.done():  # the call's own TimeoutError, or it ended as the wait did
                return future.result()
        if _waits_on_me(loop_thread):
            cancel()
            raise LoopBlocked
        pause = min(pause * 2, _LONGEST_LOOK)


def _submit(
    token: anyio.lowlevel.EventLoopToken, call: Callable[[], Awaitable[T]]
) -> tuple[concurrent.futures.Future[T], Callable[[], None]]:
    """Start `call()` in the token's loop without waiting: its future, and how to withdraw it."""
    native = token.native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        if native.is_closed():
            raise anyio.RunFinishedError

        async def run() -> T:
            return await call()

        future = asyncio.run_coroutine_threadsafe(run(), native)

        def cancel() -> None:
            future.cancel()  # the task, before it starts or where it awaits

        return future, cancel
    return _submit_trio(native, call)


def _submit_trio(
    trio_token: Any, call: Callable[[], Awaitable[T]]
) -> tuple[concurrent.futures.Future[T], Callable[[], None]]:
    import trio

    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    scope = trio.CancelScope()
    context = contextvars.copy_context()

    async def run() -> None:
        if not future.set_running_or_notify_cancel():
            return  # withdrawn before it started
        try:
            with scope:
                future.set_result(await call())
        except Exception as error:
            future.set_exception(error)
        finally:
            if not future.done():
                future.set_exception(concurrent.futures.CancelledError())

    def cancel() -> None:
        if not future.cancel():
            try:
                trio_token.run_sync_soon(scope.cancel)
            except trio.RunFinishedError:
                pass  # the loop ended: nothing is left to cancel

    try:
        trio_token.run_sync_soon(lambda: trio.lowlevel.spawn_system_task(run, context=context))
    except trio.RunFinishedError:
        raise anyio.RunFinishedError from None
    return future, cancel


# -- who waits on whom ------------------------------------------------------------------------

_RESULT = concurrent.futures.Future.result.__code__
_WAIT = concurrent.futures.wait.__code__
_AS_COMPLETED = concurrent.futures.as_completed.__code__
_JOIN = threading.Thread.join.__code__
_WORK_ITEM = futures_thread._WorkItem.run.__code__
_THREADING = threading.__file__


def _waits_on_me(waiter: int) -> bool:
    """Whether thread `waiter` is blocked waiting, directly or through other threads, on this one."""
    me = threading.get_ident()
    frames = sys._current_frames()
    running: dict[int, int] | None = None  # id(future) -> the thread running it, read when needed
    seen: set[int] = set()
    todo = [waiter]
    while todo:
        ident = todo.pop()
        if ident == me:
            return True
        if ident in seen or ident not in frames:
            continue
        seen.add(ident)
        for awaited in _awaited(frames[ident]):
            if isinstance(awaited, threading.Thread):
                if awaited.ident is not None:
                    todo.append(awaited.ident)
                continue
            if running is None:
                running = dict(_work_items(frames))
            if id(awaited) in running:
                todo.append(running[id(awaited)])
    return False


def _work_items(frames: dict[int, FrameType]) -> Iterator[tuple[int, int]]:
    """(id of the future, thread) for each executor work item a thread is running."""
    for ident, frame in frames.items():
        found: FrameType | None = frame
        while found is not None:
            if found.f_code is _WORK_ITEM:
                item = found.f_locals.get("self")
                if item is not None:
                    yield id(item.future), ident
            found = found.f_back


def _awaited(top: FrameType) -> list[Any]:
    """What a thread is blocked on: the futures of a `Future.result`, `wait` or `as_completed`,
    or the thread of a `Thread.join`, when its innermost frames are that wait (nothing otherwise)."""
    frame: FrameType | None = top
    while frame is not None:
        code = frame.f_code
        if code is _JOIN:
            return [frame.f_locals.get("self")]
        if code is _RESULT:
            return [frame.f_locals.get("self")]
        if code is _WAIT or code is _AS_COMPLETED:
            return list(frame.f_locals.get("fs") or ())
        if code.co_filename != _THREADING:
            return []  # running, or blocked on something else
        frame = frame.f_back
    return []
