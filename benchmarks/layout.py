"""The layout's figures: modules at the top of the package, floors of the import graph, a tool call's route.

`python -m benchmarks.layout` prints them. The imports are read as tests/core/test_layout.py
reads them (those under TYPE_CHECKING and inside functions included); the floors are the
modules on the longest import path. The route is recorded with `sys.setprofile` while the
adapter answers one Chat tool call on an in-process peer: every function of the package that
starts or ends (a coroutine's waits left out), folded into the sequence of modules the call is
in; a climb is a return into the calling module. `steps` records the same call as the steps from
one module to another (a call, or a return to the caller), so that each call can be held against
the import graph (`below`), and the modules entered again by a call after the path left them
(`reentries`) counted.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from types import CodeType, FrameType

import anyio
import mcp

from mcpx_router import OpenAIPeerToolAdapter
from tests.core.test_layout import MODULES, PACKAGE, edges

from .dispatch import chat_call, echo_server

__all__ = ["Step", "below", "floors", "main", "reentries", "route", "steps", "top_level"]

Step = tuple[str, str, str, str]
"""("call" or "return", from module, to module, the function called or returned from)."""


def top_level() -> list[str]:
    """The modules directly in mcpx_router/ (the package's own __init__ counted)."""
    return sorted(name for name, path in MODULES.items() if path.parent == PACKAGE and name.count(".") <= 1)


def floors() -> list[str]:
    """The longest import path, from the module that imports to the one imported last."""

    @functools.cache
    def longest(name: str) -> tuple[str, ...]:
        deepest: tuple[str, ...] = ()
        for target in edges()[name]:
            if target != name and len(below := longest(target)) > len(deepest):
                deepest = below
        return (name, *deepest)

    deepest: tuple[str, ...] = ()
    for name in MODULES:
        if len(path := longest(name)) > len(deepest):
            deepest = path
    return list(deepest)


@functools.cache
def below(name: str) -> frozenset[str]:
    """The modules `name` imports, directly or through others."""
    found: set[str] = set()
    for target in edges()[name]:
        if target != name:
            found |= {target, *below(target)}
    return frozenset(found)


def _module(code: CodeType) -> str | None:
    path = code.co_filename
    root = str(PACKAGE)
    if not path.startswith(root):
        return None
    relative = path[len(root) + 1 :].removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return "mcpx_router" if relative == "__init__" else f"mcpx_router.{relative}"


def route() -> tuple[list[str], int]:
    """The modules one tool call passes through from `dispatch` to its answer, and its climbs."""
    events: list[tuple[str, FrameType, str]] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        module = _module(frame.f_code)
        if module is None:
            return
        if event == "call":
            events.append(("call", frame, module))
            return
        caller = frame.f_back
        while caller is not None and _module(caller.f_code) is None:
            caller = caller.f_back
        if caller is not None:
            events.append(("return", frame, _module(caller.f_code) or ""))

    _profiled_dispatch(profile)
    # A coroutine that waits returns and is called again: only its first call and last return count.
    first = {id(frame): i for i, (way, frame, _) in reversed(list(enumerate(events))) if way == "call"}
    last = {id(frame): i for i, (way, frame, _) in enumerate(events) if way == "return"}
    path: list[str] = []
    climbs = 0
    for i, (way, frame, module) in enumerate(events):
        if (way == "call" and first[id(frame)] != i) or (way == "return" and last[id(frame)] != i):
            continue
        if path and path[-1] == module:
            continue
        if way == "return":
            climbs += 1
        path.append(module)
    return path, climbs


def _record(events: list[tuple[str, FrameType, str, str]]) -> None:
    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return") or (module := _module(frame.f_code)) is None:
            return
        caller = frame.f_back
        while caller is not None and _module(caller.f_code) is None:
            caller = caller.f_back
        if caller is not None:
            events.append((event, frame, module, _module(caller.f_code) or ""))

    _profiled_dispatch(profile)


def _profiled_dispatch(profile: Callable[[FrameType, str, object], None]) -> None:
    """One Chat tool call to an in-process echo peer, dispatched under `profile` (after a first,
    unprofiled call that loads what is loaded lazily and fills the caches)."""

    async def main() -> None:
        async with mcp.Client(echo_server()) as client, OpenAIPeerToolAdapter() as adapter:
            (public,) = await adapter.add_peer("echo", client)
            call = [chat_call("call_0", public)]
            await adapter.dispatch(call)  # warm: lazy imports and caches
            sys.setprofile(profile)
            try:
                await adapter.dispatch(call)
            finally:
                sys.setprofile(None)

    anyio.run(main)


def steps() -> list[Step]:
    """One Chat tool call's steps between modules, from `dispatch` to the peer session and back:
    each call into another module, and each return to the calling module (a coroutine that
    waits counts once: its first call, its last return)."""
    events: list[tuple[str, FrameType, str, str]] = []
    _record(events)
    first = {id(frame): i for i, (way, frame, _, _) in reversed(list(enumerate(events))) if way == "call"}
    last = {id(frame): i for i, (way, frame, _, _) in enumerate(events) if way == "return"}
    found: list[Step] = []
    for i, (way, frame, module, caller) in enumerate(events):
        if module == caller or (first if way == "call" else last)[id(frame)] != i:
            continue
        function = frame.f_code.co_qualname
        found.append((way, caller, module, function) if way == "call" else (way, module, caller, function))
    return found


def reentries(path: list[Step]) -> list[Step]:
    """The calls into a module that the path had left before (by a call below it or a return)."""
    left: set[str] = set()
    again: list[Step] = []
    for step in path:
        way, source, target, _ = step
        if way == "call" and target in left:
            again.append(step)
        left.add(source)
    return again


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks layout` (or `python -m benchmarks.layout`): print the figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks layout", description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    top = top_level()
    print(f"modules at the top of mcpx_router/: {len(top)}")
    print("  " + " ".join(name.removeprefix("mcpx_router.") for name in top))
    longest = floors()
    print(f"floors (modules on the longest import path): {len(longest)}")
    print("  " + " -> ".join(name.removeprefix("mcpx_router.") for name in longest))
    path, climbs = route()
    short = [name.removeprefix("mcpx_router.") for name in path]
    print(f"a tool call's route: {len(set(path))} modules entered, {len(path)} steps, {climbs} climbs")
    print("  " + " -> ".join(short))
    path_steps = steps()
    calls = [step for step in path_steps if step[0] == "call"]
    upward = [step for step in calls if step[2] not in below(step[1])]
    again = reentries(path_steps)
    print(f"its calls between modules: {len(calls)}, up the import graph: {len(upward)}, ", end="")
    print(f"re-entries: {len(again)}")
    for way, source, target, function in path_steps:
        mark = " (re-entry)" if (way, source, target, function) in again else ""
        ends = (source, target) if way == "call" else (target, source)
        arrow = "->" if way == "call" else "<-"
        names = f"{ends[0].removeprefix('mcpx_router.')} {arrow} {ends[1].removeprefix('mcpx_router.')}"
        print(f"  {names}  {function if way == 'call' else ''}{mark}")
    return 0


if __name__ == "__main__":
    main()
