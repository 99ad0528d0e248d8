"""Run a command's main coroutine until it finishes or SIGINT/SIGTERM asks it to stop."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def until_signalled(main: Callable[[], Awaitable[T]], *, on_signal: T) -> T:
    """`await main()`, unless SIGINT or SIGTERM arrives first: then cancel it (its cleanup runs)
    and return `on_signal`. An exception of `main` is raised as is."""
    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    outcome.append(on_signal)
                    tg.cancel_scope.cancel()
                    return

        async def run() -> None:
            try:
                outcome.append(await main())
            except Exception as exc:  # re-raised below, outside the task group's exception group
                failure.append(exc)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tg.start_soon(run)
    if failure:
        raise failure[0]
    return outcome[0]
