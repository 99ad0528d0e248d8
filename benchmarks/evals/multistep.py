"""Multi-step tasks: code mode against function calling, scored by the servers' end state.

    python -m benchmarks evals --code-mode --base-url http://127.0.0.1:8080/v1 --model local \\
        --sizes 100,1000 --modes code,calls --limit 10 --out tasks.json

Each task of `tasks.py` is one conversation, run by `mcpx_router.loop.run_chat` against the five
servers of `world.py` (fresh state per task) and decoy peers (`catalogue.decoy_tools`, every call
answered with a success and changing nothing), so that the catalogue holds `size` tools:

- code: `run_chat(..., code_mode=CodeMode(adapter))`: the model is offered `run_python` and
  `find_tools`, and the decoys are functions of the sandbox like the real tools;
- calls: function calling, the adapter's own selection (`max_tools`, 128: every tool at 100, the
  128 most relevant by BM25 at 1,000).

Per task: solved (the task's check of the end state passes), turns (requests sent to the model),
prompt tokens (their sum, from the endpoint's `usage`; where it gives none, estimated as 1 token
per 4 characters of the JSON of the messages and tools sent, and marked so), wall seconds of the
conversation (the sandbox and in-process calls included; setting up the peers not).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from collections.abc import Collection, Sequence
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp
from openai import AsyncOpenAI

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.loop import LoopResult, run_chat

from .._common import revision
from .catalogue import decoy_tools, served
from .harness import Metered, model_calls, resume
from .tasks import TASKS, Task
from .world import PEERS, World, servers

if TYPE_CHECKING:
    from mcpx_router.codemode import CodeMode

__all__ = [
    "MODES",
    "TaskOutcome",
    "TaskSettings",
    "comparison",
    "run_tasks",
    "task_code_mode",
    "task_peers",
    "task_table",
]

MODES = ("code", "calls")
REAL_TOOLS = 21
"""The tools of the five servers of `world.py`."""
SYSTEM = (
    "You are an assistant with tools. Do what the user asks by calling the tools; when it is done, "
    "answer in one short sentence saying what you did."
)


@dataclass
class TaskSettings:
    model: str
    sizes: tuple[int, ...] = (100, 1000)
    modes: tuple[str, ...] = MODES
    max_turns: int = 8
    max_tokens: int = 512
    temperature: float | None = 0.0
    max_tools: int = 128
    tasks: tuple[str, ...] = ()
    """Only these task ids; empty: all (or `limit` of them, spread over the set)."""
    limit: int | None = None
    seed: int = 7
    text_calls: bool = False
    """Recover calls the model writes as text (in code mode, a fenced python block too)."""
    direct_calls: bool = False
    """Code mode: run a call of a tool by its own name as the program calling it (`CodeMode`)."""


@dataclass
class TaskOutcome:
    mode: str
    size: int
    task: str
    solved: bool
    answered: bool
    turns: int
    prompt_tokens: int
    tokens_counted: bool
    seconds: float
    calls: list[dict[str, Any]] = field(default_factory=list)
    """The functions the model called, with their arguments (programs included)."""
    error: str | None = None
    answer: str | None = None


def chosen_tasks(settings: TaskSettings, tasks: Sequence[Task] = TASKS) -> list[Task]:
    if settings.tasks:
        unknown = set(settings.tasks) - {t.id for t in tasks}
        if unknown:
            raise ValueError(f"unknown task id(s): {sorted(unknown)}")
        return [t for t in tasks if t.id in settings.tasks]
    count = settings.limit
    if count is None or count >= len(tasks):
        return list(tasks)
    step = len(tasks) / count  # every k-th, as the single-call evaluation spreads its requests
    return [tasks[int(i * step)] for i in range(count)]


async def task_peers(
    stack: AsyncExitStack, world: World, size: int, seed: int, max_tools: int
) -> OpenAIPeerToolAdapter:
    """An adapter, entered on `stack`, with the five servers of `world` and decoys up to `size`
    tools in all."""
    if size < REAL_TOOLS:
        raise ValueError(f"a catalogue holds at least the {REAL_TOOLS} real tools, not {size}")
    decoy_calls: list[tuple[str, str, dict[str, Any]]] = []
    adapter = await stack.enter_async_context(OpenAIPeerToolAdapter(max_tools=max_tools))
    for peer, server in servers(world).items():
        await adapter.add_peer(peer, await stack.enter_async_context(mcp.Client(server)))
    for peer, tools in decoy_tools(size - REAL_TOOLS, seed=seed).items():
        # Decoy systems named as a real peer (a second `calendar`...) join under another id.
        peer_id = peer if peer not in PEERS else f"{peer}_legacy"
        client_ = await stack.enter_async_context(mcp.Client(served(peer_id, tools, decoy_calls)))
        await adapter.add_peer(peer_id, client_)
    return adapter


async def task_code_mode(
    stack: AsyncExitStack, adapter: OpenAIPeerToolAdapter, mode: str, direct_calls: bool = False
) -> CodeMode | None:
    """In code mode, a `CodeMode` over `adapter`, entered on `stack`; None in function calling."""
    from mcpx_router.codemode import CodeMode

    if mode != "code":
        return None
    return await stack.enter_async_context(CodeMode(adapter, direct_calls=direct_calls))


async def run_task(
    client: AsyncOpenAI, task: Task, mode: str, size: int, settings: TaskSettings
) -> TaskOutcome:
    """One task in one mode at one catalogue size, from a fresh world."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    world = World()
    async with AsyncExitStack() as stack:
        adapter = await task_peers(stack, world, size, settings.seed, settings.max_tools)
        code = await task_code_mode(stack, adapter, mode, settings.direct_calls)
        metered = Metered(client, max_tokens=settings.max_tokens, temperature=settings.temperature)
        opening: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.text}]
        result: LoopResult | None = None
        error = None
        started = time.perf_counter()
        try:
            result = await run_chat(
                cast("AsyncOpenAI", metered),
                adapter,
                model=settings.model,
                messages=opening,
                max_turns=settings.max_turns,
                code_mode=code,
                text_calls=settings.text_calls,
            )
        except Exception as exc:  # an endpoint's failure is recorded, and the run goes on
            error = f"{type(exc).__name__}: {exc}"[:500]
        seconds = time.perf_counter() - started
    turns = metered.turns
    try:
        solved = bool(task.check(world))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a state the check cannot read
        solved, error = False, error or f"check: {type(exc).__name__}: {exc}"
    return TaskOutcome(
        mode=mode,
        size=size,
        task=task.id,
        solved=solved,
        answered=result is not None and result.stopped == "answer" and bool((result.text or "").strip()),
        turns=len(turns),
        prompt_tokens=sum(t.prompt_tokens for t in turns),
        tokens_counted=all(t.counted for t in turns),
        seconds=seconds,
        calls=[asdict(c) for c in model_calls(result.messages)] if result is not None else [],
        error=error,
        answer=None if result is None or result.text is None else result.text[:300],
    )


async def run_tasks(
    client: AsyncOpenAI,
    settings: TaskSettings,
    tasks: Sequence[Task] = TASKS,
    progress: Any = None,
    done: Collection[tuple[str, int, str]] = (),
) -> list[TaskOutcome]:
    """Every (size, mode) of `settings` over the chosen tasks; the outcomes in run order. The
    (mode, size, task id) in `done` are not run again (`--resume`)."""
    outcomes = []
    for size in settings.sizes:
        for mode in settings.modes:
            for task in chosen_tasks(settings, tasks):
                if (mode, size, task.id) in done:
                    continue
                outcome = await run_task(client, task, mode, size, settings)
                outcomes.append(outcome)
                if progress:
                    progress(outcome)
    return outcomes


def task_table(outcomes: Sequence[TaskOutcome]) -> str:
    """Per (mode, size): tasks, solved %, turns, prompt tokens and seconds per task."""
    lines = [
        "| mode | tools | tasks | solved % | turns / task | prompt tokens / task | s / task |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, size in dict.fromkeys((o.mode, o.size) for o in outcomes):
        group = [o for o in outcomes if (o.mode, o.size) == (mode, size)]
        n = len(group)
        tokens = f"{sum(o.prompt_tokens for o in group) / n:,.0f}"
        tokens += "" if all(o.tokens_counted for o in group) else " (est.)"
        errors = sum(o.error is not None for o in group)
        lines.append(
            f"| {mode} | {size:,} | {n}{f' ({errors} failed)' if errors else ''} "
            f"| {100 * sum(o.solved for o in group) / n:.0f} | {sum(o.turns for o in group) / n:.2f} "
            f"| {tokens} | {sum(o.seconds for o in group) / n:.1f} |"
        )
    return "\n".join(lines)


def comparison(outcomes: Sequence[TaskOutcome]) -> str:
    """Per size, code mode against function calling on the tasks both ran: solved, turns, prompt
    tokens and seconds per task, and code mode's prompt tokens as a share of function calling's
    (the issue's target: at most 0.25 at 1,000 tools)."""
    lines = [
        "| tools | tasks in both | solved (code / calls) | turns | prompt tokens / task "
        "| code / calls tokens | s / task |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in dict.fromkeys(o.size for o in outcomes):
        by_mode = {mode: {o.task: o for o in outcomes if (o.mode, o.size) == (mode, size)} for mode in MODES}
        common = [task for task in by_mode["code"] if task in by_mode["calls"]]
        if not common:
            continue
        code = [by_mode["code"][t] for t in common]
        calls = [by_mode["calls"][t] for t in common]

        def mean(group: list[TaskOutcome], key: str) -> float:
            return float(sum(getattr(o, key) for o in group)) / len(group)

        lines.append(
            f"| {size:,} | {len(common)} | {sum(o.solved for o in code)} / {sum(o.solved for o in calls)} "
            f"| {mean(code, 'turns'):.2f} / {mean(calls, 'turns'):.2f} "
            f"| {mean(code, 'prompt_tokens'):,.0f} / {mean(calls, 'prompt_tokens'):,.0f} "
            f"| {mean(code, 'prompt_tokens') / max(mean(calls, 'prompt_tokens'), 1):.3f} "
            f"| {mean(code, 'seconds'):.0f} / {mean(calls, 'seconds'):.0f} |"
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """`python -m benchmarks evals --code-mode ...` (the arguments parsed by cli.py)."""
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    if not modes or set(modes) - set(MODES):
        print(f"--modes takes {', '.join(MODES)}, not {args.modes!r}")
        return 2
    settings = TaskSettings(
        model=args.model,
        sizes=args.sizes,
        modes=modes,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        max_tools=args.max_tools,
        tasks=args.tasks,
        limit=args.limit,
        seed=args.seed,
        text_calls=args.text_calls,
        direct_calls=args.direct_calls,
    )
    chosen_tasks(settings)  # unknown ids are refused before anything runs
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    started = datetime.datetime.now(datetime.UTC)
    commit = revision()  # of the code that runs, not of a later save
    done: list[TaskOutcome] = []
    if args.resume and args.out and args.out.exists():
        kept = resume(args.out, asdict(settings), commit, "tasks")
        if kept is None:
            return 2
        done += [TaskOutcome(**o) for o in kept.outcomes]
        started, commit = kept.started, kept.commit

    def save(complete: bool) -> None:
        if args.out:
            document = {
                "date": started.isoformat(timespec="seconds"),
                "commit": commit,
                "complete": complete,
                "python": platform.python_version(),
                "load_average": list(os.getloadavg()),
                "base_url": args.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
                "settings": asdict(settings),
                "outcomes": [asdict(o) for o in done],
            }
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    def show(outcome: TaskOutcome) -> None:
        done.append(outcome)
        save(complete=False)  # a run cut short keeps what it measured
        if not args.quiet:
            print(
                f"{outcome.mode:>5} {outcome.size:>5} {outcome.task:<24} "
                f"{'solved' if outcome.solved else 'failed':<6} turns={outcome.turns} "
                f"tokens={outcome.prompt_tokens} {outcome.seconds:.1f}s"
                + (f" ERROR {outcome.error}" if outcome.error else ""),
                flush=True,
            )

    async def go() -> None:
        async with AsyncOpenAI(base_url=args.base_url, api_key=api_key, max_retries=1, timeout=600) as client:
            await run_tasks(client, settings, progress=show, done={(o.mode, o.size, o.task) for o in done})

    anyio.run(go)
    save(complete=True)
    print(task_table(done))
    return 0


def load(paths: Sequence[Path]) -> list[TaskOutcome]:
    """The outcomes in files written by `--out`."""
    out: list[TaskOutcome] = []
    for path in paths:
        out += [TaskOutcome(**o) for o in json.loads(path.read_text(encoding="utf-8"))["outcomes"]]
    return out
