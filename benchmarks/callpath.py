"""Where one call's work goes: Python bytecodes executed per call, by function, against the group.

`python -m benchmarks.callpath [--calls N]`: the dispatch benchmark's in-process server and
client (`dispatch.py`), five ways of making one call (the group without and with a 60 s bound,
`dispatch`, `call`, `call` without a bound), each warmed up, then N calls
traced with opcode events (`sys.settrace`, `frame.f_trace_opcodes`) in the calling thread. The
counts are exact and repeatable, unlike timings on a shared machine; what runs in C (pydantic's
validators, the JSON scanner) and in the server's worker thread is not counted, and is the same
for every variant. Printed: bytecodes per call of each variant, then, per function, what each
variant executes beyond `ClientSessionGroup.call_tool` (no time bound), largest first.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import anyio
import mcp
import mcp_types as mt
from mcp.client.session_group import ClientSessionGroup

from mcpx_router import OpenAIPeerToolAdapter

from .dispatch import ARGUMENTS, PEER, chat_call, echo_server

WARM_UP = 50


_PREFIXES = [
    re.compile(p) for p in (r"^.*/site-packages/", r"^.*/lib/python3\.\d+/", r"^.*/(?=mcpx_router/)")
]


def _where(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename
    for prefix in _PREFIXES:
        short = prefix.sub("", path, count=1)
        if short != path:
            path = short
            break
    return f"{path}:{code.co_name}"


async def count(fn: Callable[[], Awaitable[object]], calls: int) -> dict[str, float]:
    """Bytecodes per call of `fn`, by function."""
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[_where(frame)] += 1
        return tracer

    for _ in range(WARM_UP):
        await fn()
    sys.settrace(tracer)
    try:
        for _ in range(calls):
            await fn()
    finally:
        sys.settrace(None)
    return {name: n / calls for name, n in counts.items()}


async def main(calls: int) -> None:
    async with mcp.Client(echo_server()) as client, OpenAIPeerToolAdapter() as adapter:
        (public,) = await adapter.add_peer(PEER, client)
        group = ClientSessionGroup()
        await group.connect_with_session(mt.Implementation(name=PEER, version="1"), client.session)
        one = [chat_call("call_0", public)]
        variants: dict[str, Callable[[], Awaitable[object]]] = {
            "group": lambda: group.call_tool("echo", ARGUMENTS),
            "group, 60 s bound": lambda: group.call_tool("echo", ARGUMENTS, read_timeout_seconds=60),
            "adapter.dispatch([1 call])": lambda: adapter.dispatch(one),
            "adapter.call(name, dict)": lambda: adapter.call(public, ARGUMENTS),
            "the same, call_timeout=None": lambda: adapter.call(public, ARGUMENTS, call_timeout=None),
        }
        counted = {name: await count(fn, calls) for name, fn in variants.items()}
    base = counted["group"]
    total = sum(base.values())
    for name, found in counted.items():
        extra = sum(found.values()) - total
        print(f"{name:28s} {sum(found.values()):8.0f} bytecodes a call  {extra:+7.0f} ({extra / total:+.1%})")
    for name, found in list(counted.items())[1:]:
        print(f"\n{name}, beyond the group's, by function:")
        diff = sorted(((found.get(k, 0) - base.get(k, 0), k) for k in set(found) | set(base)), reverse=True)
        for extra, where in diff:
            if abs(extra) >= 3:
                print(f"  {extra:+7.1f}  {where}")


def cli(argv: list[str] | None = None) -> int:
    """`python -m benchmarks callpath [--calls N]` (or `python -m benchmarks.callpath`)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks callpath", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--calls", type=int, default=20, help="traced calls per variant (default 20)")
    anyio.run(main, parser.parse_args(argv).calls)
    return 0


if __name__ == "__main__":
    cli()
