"""The stdio transport of the Router's peers: the `mcp` SDK's process handling, our own reading.

The server is started, stopped and drained as the SDK's `stdio_client` does (its own helpers,
so the shutdown order of the MCP specification is kept), and messages reach the SDK's
`ClientSession` through a pair of memory object streams, as from any transport. What differs is
how lines are read: bytes are split at newlines as they arrive (time linear in a line's size,
where the SDK's reader joins its whole buffer with every chunk), a line of more than a mebibyte
is parsed in steps of a few milliseconds with the loop taking turns between them
(`_lines.parse_stepwise`; a tool result's content blocks past the last `MAX_BLOCKS` are dropped
as they are read), a line of more than 2 MiB whose middle lies inside one string keeps only that
string's first and last mebibyte (`_Line`), and every line is checked by
an `Exchange` before the session sees it, so that an answer the SDK would drop is answered at
once and one unreadable entry of a listing costs only that entry.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import anyio.lowlevel
import mcp
import mcp_types as mt
from mcp.client import stdio as _sdk
from mcp.shared.message import SessionMessage

from ._answers import MAX_BLOCKS, Exchange
from ._lines import SMALL, parse, parse_stepwise

__all__ = ["message_of", "stdio_transport"]


@asynccontextmanager
async def stdio_transport(server: mcp.StdioServerParameters, exchange: Exchange) -> AsyncIterator[Any]:
    """Start `server` and yield its (read, write) streams; stop it on exit as the SDK does."""
    command = await _sdk._get_executable_command(server.command)
    process = await _sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=_sdk.get_default_environment() | (server.env or {}),
        errlog=sys.__stderr__ or sys.stderr,  # the process's own, as the SDK's default is
        cwd=server.cwd,
    )
    # No awaits until the task group is entered, or a cancellation in the gap would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()
    reader_done = anyio.Event()

    async def read() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                try:
                    await _read_lines(process.stdout, read_writer, exchange)
                finally:
                    await _sdk._drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                _sdk.logger.debug("reading from a stdio server's stdout failed", exc_info=True)
        finally:
            reader_done.set()

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    exchange.outgoing(message)
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading (it exited, or closed its stdin). What it wrote before
            # still reaches the session (a line that is not JSON-RPC says why the handshake
            # failed), however late the session reads; then the session sees the connection end.
            with anyio.move_on_after(DRAIN_AFTER_WRITE_FAILS):
                await reader_done.wait()
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await _sdk._stop_server_process(process)
        await _sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _read_lines(stdout: Any, out: Any, exchange: Exchange) -> None:
    """Split what `stdout` gives at newlines, hand each line's message on; until end of stream."""
    pending = _Line()
    async for chunk in stdout:
        if b"\n" not in chunk:
            pending.add(chunk)
            continue
        lines = chunk.split(b"\n")
        pending.add(lines[0])
        lines[0] = pending.whole()
        rest = lines.pop()
        pending = _Line()
        if rest:
            pending.add(rest)
        for line in lines:
            item = await message_of(line, exchange)
            if item is not None:
                await out.send(item)


DRAIN_AFTER_WRITE_FAILS: Final = 2.0
"""Seconds a server that stopped reading its stdin may go on writing before its connection ends."""
HEAD: Final = 1 << 20
TAIL: Final = 1 << 20
"""Bytes kept of each end of a line whose middle lies inside one string literal."""


_HIGH_SURROGATE: Final = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def _escaped_at(data: bytes, index: int) -> bool:
    """Whether the backslash at `index` is itself escaped (an odd run of backslashes before it)."""
    run = 0
    while index - run - 1 >= 0 and data[index - run - 1] == 0x5C:
        run += 1
    return run % 2 == 1


class _Line:
    """The chunks of the line being read. Past `HEAD` + `TAIL` bytes the middle is set apart, and
    left out when the line is complete if it holds no quote and no backslash: it lies inside one
    string, which then keeps its first and last bytes around a note of how much was left out."""

    def __init__(self) -> None:
        self._head: list[bytes] = []
        self._head_size = 0
        self._middle: list[bytes] = []
        self._middle_size = 0
        self._plain = True
        self._tail: deque[bytes] = deque()
        self._tail_size = 0

    def add(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._head_size < HEAD:
            self._head.append(chunk)
            self._head_size += len(chunk)
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= TAIL:
            first = self._tail.popleft()
            self._tail_size -= len(first)
            self._plain = self._plain and b'"' not in first and b"\\" not in first
            self._middle.append(first)
            self._middle_size += len(first)

    def whole(self) -> bytes:
        if not self._middle or not self._plain:
            return b"".join([*self._head, *self._middle, *self._tail])
        head, tail = b"".join(self._head), b"".join(self._tail)
        cut = len(head)
        near = head.find(b"\\", max(0, cut - 12))
        if near >= 0:  # not inside an escape sequence (nor between a pair of them)
            cut = near
            while cut > 0 and head[cut - 1] == 0x5C:
                cut -= 1
        if _HIGH_SURROGATE.fullmatch(head, max(0, cut - 6), cut) and not _escaped_at(head, cut - 6):
            cut -= 6  # the first of a surrogate pair stays with the second
        following = head[cut] if cut < len(head) else self._middle[0][0]
        while cut > 0 and 0x80 <= following < 0xC0:  # not inside a UTF-8 sequence
            cut -= 1
            following = head[cut]
        start = 0
        while start < len(tail) and 0x80 <= tail[start] < 0xC0:
            start += 1
        left_out = len(head) - cut + self._middle_size + start
        note = f" [… {left_out:,} bytes of this text were left out as it was read …] ".encode()
        return head[:cut] + note + tail[start:]


async def message_of(line: bytes, exchange: Exchange) -> SessionMessage | Exception | None:
    """What one line hands on: a message, an error before the handshake (the join fails at once
    with it), or None for a line that answers nothing."""
    left_out = 0
    try:
        if len(line) <= SMALL:
            value, cut = parse(line)
        else:
            keep = MAX_BLOCKS if exchange.awaits(line, "tools/call") else None
            value, cut, left_out = await parse_stepwise(line, keep)
    except (ValueError, RecursionError) as exc:
        if not exchange.answered:
            return _sdk_error(line)
        return exchange.unreadable(line, exc)
    if not exchange.answered:
        try:
            mt.jsonrpc_message_adapter.validate_python(value, by_name=False)
        except ValueError:
            return _sdk_error(line)
    return exchange.incoming(value, cut, line, left_out)


def _sdk_error(line: bytes) -> Exception:
    """The error the SDK's reader gives for a line that is not JSON-RPC (its message names the line)."""
    try:
        mt.jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False)
    except ValueError as exc:
        return exc
    return ValueError("not a JSON-RPC message")
