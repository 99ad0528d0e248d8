"""Replay a recorded multi-step task: its calls, in order, on a fresh world; what the world refused.

    python -m benchmarks evals --replay docs/evals/local-tasks-full-calls-1000.json

A task outcome (`multistep.TaskOutcome`, as `--out` writes it) keeps the calls the model made, not
what they were answered. Replaying them through the same peers (the five servers of `world.py` and
the same decoys, with code mode's `run_python` and `find_tools` where the task ran in code mode)
tells what the model read and what it changed, with no model:

- which calls the world refused, and why (a note that does not exist, a path given as an email
  address): a conversation that met no refusal read the same answers whatever the servers say
  when they refuse, so a change to that wording leaves it as it was;
- whether the replayed end state passes the task's check, beside the recorded `solved`.

The answers are those of the library and servers checked out now: where the run was at another
commit (its file's `commit` field), they can differ from what the model read. Calls are replayed
one at a time, in the order made. The loop answers the calls of one turn
together, and once each where a turn repeats a call; a replay cannot see turns, so such repeats
run again here, and the end state can differ from the conversation's where they change the world.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .multistep import TaskOutcome, load, task_code_mode, task_peers
from .tasks import TASKS
from .world import World

__all__ = ["Replayed", "main", "replay"]

ANSWER_CHARS = 300


@dataclass
class Replayed:
    outcome: TaskOutcome
    answers: list[str] = field(default_factory=list)
    """What each call was answered, in call order (the first `ANSWER_CHARS` characters)."""
    refusals: list[str] = field(default_factory=list)
    """What the world's servers refused, in order."""
    solved: bool = False
    """Whether the replayed end state passes the task's check."""


async def replay(
    outcome: TaskOutcome,
    *,
    seed: int = 7,
    max_tools: int = 128,
    direct_calls: bool = False,
    call_timeout: float = 60.0,
) -> Replayed:
    """`outcome`'s calls on a fresh world, in the mode and at the size it ran."""
    task = next((t for t in TASKS if t.id == outcome.task), None)
    if task is None:
        raise ValueError(f"no task {outcome.task!r} in tasks.py")
    world = World()
    answers: list[str] = []
    async with AsyncExitStack() as stack:
        adapter = await task_peers(stack, world, outcome.size, seed, max_tools)
        code = await task_code_mode(stack, adapter, outcome.mode, direct_calls)
        dispatch = adapter.dispatch if code is None else code.dispatch
        for index, call in enumerate(outcome.calls):
            message = {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": call["name"], "arguments": call.get("arguments") or ""},
            }
            with anyio.move_on_after(call_timeout) as scope:
                [answer] = await dispatch([message])
            answers.append("(timed out)" if scope.cancelled_caught else _text(answer)[:ANSWER_CHARS])
    return Replayed(outcome, answers, list(world.refusals), bool(task.check(world)))


def _text(answer: Any) -> str:
    content = answer.get("content") if isinstance(answer, dict) else None
    if isinstance(content, str):
        return content
    return json.dumps(content if content is not None else answer, default=str)


def main(paths: Sequence[Path], *, answers: bool = False) -> int:
    """`--replay FILE...`: one line per task (calls, refusals, solved as recorded and replayed),
    with `answers` each call and its answer, then the tasks that met a refusal. Each file's own
    settings (`seed`, `max_tools`, `direct_calls`) rebuild its catalogue and code mode."""
    # The servers log each refused call at INFO; this command says what they refused itself.
    logging.getLogger("mcp.server.mcpserver.server").setLevel(logging.WARNING)
    runs = []
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        settings = document.get("settings") or {}
        runs += [
            (o, settings.get("seed", 7), settings.get("max_tools", 128), bool(settings.get("direct_calls")))
            for o in load([path])
        ]

    async def go() -> None:
        refused = []
        for outcome, seed, max_tools, direct_calls in runs:
            done = await replay(outcome, seed=seed, max_tools=max_tools, direct_calls=direct_calls)
            _show(done, answers)
            if done.refusals:
                refused.append(f"{outcome.mode}:{outcome.size}:{outcome.task}")
        which = f": {', '.join(refused)}" if refused else ""
        print(f"{len(refused)} of {len(runs)} tasks met a refusal{which}")

    anyio.run(go)
    return 0


def _show(done: Replayed, answers: bool) -> None:
    o = done.outcome
    print(
        f"{o.mode:>5} {o.size:>5} {o.task:<24} calls={len(o.calls):<3} refused={len(done.refusals)} "
        f"solved={o.solved}/{done.solved}" + (f"  {'; '.join(done.refusals[:3])}" if done.refusals else ""),
        flush=True,
    )
    if answers:
        for call, answer in zip(o.calls, done.answers, strict=True):
            print(f"    {call['name']}({(call.get('arguments') or '')[:120]})\n      -> {answer[:200]!r}")
