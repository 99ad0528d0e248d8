"""Joining the servers of a command, with a status line while it waits, on a terminal only.

On a terminal, standard error shows one line that is redrawn while the command waits
(`⠹ connecting to time, everything (1.2 s)`, `⠹ time__slow: 3/5 compiling (4.0 s)`) and erased
when it is done; in a pipe or a file nothing of it is written. Each peer that cannot join is
said in one line (`mcpx-router: could not connect to peer 'x': ...`), with its traceback at -vv.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

from .._console import PREFIX
from .._errors import RouterError, redact
from ..peers import PeerSpec
from ..peers._router import Router
from ._render import write

__all__ = ["Status", "join_peers", "status_line"]

logger = logging.getLogger("mcpx_router.cli")

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_TICK = 0.1


def _live(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class Status:
    """The status line of a command (see the module docstring); inert when not on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = _live(stream)
        self.text = ""
        self._started = time.monotonic()
        self._frame = 0
        self._drawn = False

    def set(self, text: str) -> None:
        """Say what the command waits for now."""
        self.text = text
        self._started = time.monotonic()
        self.draw()

    def say(self, message: str) -> None:
        """Print `mcpx-router: message` on a line of its own (above the status line)."""
        self.clear()
        write(self.stream, PREFIX + redact(message))
        self.draw()

    def draw(self) -> None:
        if not self.live or not self.text:
            return
        width = max(20, shutil.get_terminal_size().columns - 1)
        elapsed = time.monotonic() - self._started
        line = f"{_FRAMES[self._frame % len(_FRAMES)]} {self.text} ({elapsed:.1f} s)"
        self.stream.write("\r\x1b[K" + line[:width])
        self.stream.flush()
        self._frame += 1
        self._drawn = True

    def idle(self) -> None:
        """Erase the status line: the command waits for nothing now."""
        self.text = ""
        self.clear()

    def clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    async def spin(self) -> None:
        while True:
            await anyio.sleep(_TICK)
            self.draw()


@asynccontextmanager
async def status_line(stream: TextIO | None = None) -> AsyncIterator[Status]:
    """A `Status` on standard error for the block, redrawn every 0.1 s on a terminal, erased after."""
    status = Status(stream or sys.stderr)
    if not status.live:
        yield status
        return
    async with anyio.create_task_group() as tg:
        tg.start_soon(status.spin)
        try:
            yield status
        finally:
            tg.cancel_scope.cancel()
            status.clear()


async def join_peers(router: Router, peers: Mapping[str, PeerSpec], status: Status) -> dict[str, str]:
    """Join the peers concurrently; say each that cannot join, and return why each could not, by id."""
    failed: dict[str, str] = {}
    waiting = list(peers)

    def show() -> None:
        status.set(f"connecting to {', '.join(waiting)}" if waiting else "")

    async def one(peer: str, spec: PeerSpec) -> None:
        try:
            await router.join(peer, spec)
        except RouterError as exc:
            failed[peer] = str(exc)
            logger.debug("peer %r could not join", peer, exc_info=exc)
            status.say(str(exc))
        finally:
            waiting.remove(peer)
            show()

    show()
    async with anyio.create_task_group() as tg:
        for peer, spec in peers.items():
            tg.start_soon(one, peer, spec)
    return failed
