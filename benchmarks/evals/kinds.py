"""What the model called in a multi-step run, by the kind of name it wrote.

    python -m benchmarks evals --code-mode --table docs/evals/local-tasks-full-*.json

A name is `run_python` or `find_tools` (code mode's two functions), a tool's public name
(`drive__move_file`), a tool's name in a program (`drive.move_file`), or no function at all; a
tool's calls are split between the five servers of `world.py` and the decoys. The catalogue of
each size is rebuilt as the run built it (same seed, same decoys), with no model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio

from .multistep import TaskOutcome, task_peers
from .world import PEERS, World

__all__ = ["KINDS", "Names", "call_kinds", "kinds_table"]

KINDS = (
    "run_python",
    "find_tools",
    "public name: world",
    "public name: decoy",
    "program name: world",
    "program name: decoy",
    "no function",
)


@dataclass(frozen=True)
class Names:
    """The names of one catalogue: public name and program name of each tool, by its peer."""

    public: dict[str, str]
    """Public name -> peer id."""
    program: dict[str, str]
    """`namespace.function` -> peer id."""

    def kind(self, name: str) -> str:
        if name in ("run_python", "find_tools"):
            return name
        for table, said in ((self.public, "public name"), (self.program, "program name")):
            peer = table.get(name)
            if peer is not None:
                return f"{said}: {'world' if peer in PEERS else 'decoy'}"
        return "no function"


async def catalogue_names(size: int, seed: int = 7, max_tools: int = 128) -> Names:
    """The names of the catalogue a run of `size` tools offered (its tools and its sandbox API)."""
    from mcpx_router.codemode._api import SandboxApi

    async with AsyncExitStack() as stack:
        adapter = await task_peers(stack, World(), size, seed, max_tools)
        peers = {tool.name: tool.peer for tool in adapter.tools}
        api = SandboxApi(adapter)
        program = {
            function.qualified: peers[function.public_name]
            for functions in api.namespaces().values()
            for function in functions.values()
            if function.public_name in peers
        }
        return Names(peers, program)


def call_kinds(
    outcomes: Sequence[TaskOutcome], seed: int = 7, max_tools: int = 128
) -> dict[tuple[str, int], Counter[str]]:
    """Per (mode, size), how many calls of each kind the model made."""
    sizes = sorted({o.size for o in outcomes})
    names = {size: anyio.run(catalogue_names, size, seed, max_tools) for size in sizes}
    counts: dict[tuple[str, int], Counter[str]] = {}
    for o in outcomes:
        counted = counts.setdefault((o.mode, o.size), Counter())
        counted.update(names[o.size].kind(str(call.get("name", ""))) for call in o.calls)
    return counts


def kinds_table(counts: dict[tuple[str, int], Counter[str]]) -> str:
    """One row per (mode, size): the calls, then each kind's count."""
    lines = [
        "| mode | tools | calls | " + " | ".join(f"`{k}`" if "_" in k else k for k in KINDS) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in KINDS) + " |",
    ]
    for (mode, size), counted in counts.items():
        lines.append(
            f"| {mode} | {size:,} | {sum(counted.values())} | "
            + " | ".join(str(counted[k]) for k in KINDS)
            + " |"
        )
    return "\n".join(lines)
