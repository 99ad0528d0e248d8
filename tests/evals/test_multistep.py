"""The multi-step harness end to end against a scripted endpoint: code mode and function calling
over the task servers padded with decoys, a task solved and one failed by its end state, what each
mode sends, and its token counts. These test the harness, never a model's quality."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from openai import AsyncOpenAI

from benchmarks.evals import cli
from benchmarks.evals.catalogue import decoy_tools
from benchmarks.evals.multistep import (
    TaskOutcome,
    TaskSettings,
    chosen_tasks,
    comparison,
    run_tasks,
    task_table,
)
from benchmarks.evals.tasks import TASKS
from benchmarks.evals.world import PEERS

from ..support._openai_replay import CHAT, chat_completion, replay_openai, tool_call

pytestmark = pytest.mark.subprocess  # code mode's sandbox workers

CABLES = next(t for t in TASKS if t.id == "cables-received")
LAMPS = next(t for t in TASKS if t.id == "lamps-to-50")

PROGRAMS = {
    # Solves it: the sku found, then 25 added.
    CABLES.text: 'sku = stock.find_items(query="USB-C")["items"][0]["sku"]\n'
    "stock.adjust_stock(sku=sku, delta=25)",
    # Runs without an error, but orders 50 where 46 bring the stock to 50: the end state is wrong.
    LAMPS.text: 'stock.create_purchase_order(sku="LAMP-07", quantity=50, supplier="Bolt Supply")',
}
PLANS = {
    CABLES.text: [
        ("stock__find_items", {"query": "USB-C"}),
        ("stock__adjust_stock", {"sku": "USB-C-01", "delta": 25}),
    ],
    LAMPS.text: [
        ("stock__create_purchase_order", {"sku": "LAMP-07", "quantity": 50, "supplier": "Bolt Supply"})
    ],
}


def brain(*, usage: bool = True) -> Any:
    """A scripted Chat model: offered run_python, one program per task; else the planned calls one
    per turn; then an answer."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        offered = [tool["function"]["name"] for tool in body.get("tools", [])]
        answered = sum(m["role"] == "tool" for m in messages)
        if "run_python" in offered:
            steps = [("run_python", {"code": PROGRAMS[user]})]
        else:
            steps = PLANS[user]
        if answered >= len(steps):
            out = chat_completion({"content": "Done."})
        else:
            name, arguments = steps[answered]
            out = chat_completion(
                {"content": None, "tool_calls": [tool_call(f"c{answered}", name, json.dumps(arguments))]}
            )
        if not usage:
            del out["usage"]
        return out

    return reply


def test_the_cli_runs_both_modes_and_scores_each_task_by_its_end_state(tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    with replay_openai([brain()] * 20) as replay:
        code = cli.main(
            [
                *("--code-mode", "--base-url", replay.base_url, "--model", "m", "--api-key", "k"),
                *("--sizes", "100", "--tasks", f"{CABLES.id},{LAMPS.id}", "--quiet", "--out", str(out)),
            ]
        )
    assert code == 0
    document = json.loads(out.read_text())
    assert document["complete"] and len(document["load_average"]) == 3
    got = {(o["mode"], o["task"]): o for o in document["outcomes"]}
    assert list(got) == [("code", CABLES.id), ("code", LAMPS.id), ("calls", CABLES.id), ("calls", LAMPS.id)]
    assert {key: o["solved"] for key, o in got.items()} == {
        ("code", CABLES.id): True,
        ("code", LAMPS.id): False,
        ("calls", CABLES.id): True,
        ("calls", LAMPS.id): False,
    }
    # The failed tasks were answered without an error: only the end state tells them apart.
    assert all(o["answered"] and o["error"] is None for o in got.values())
    # One program and its answer in code mode; a turn per call and one to answer in function calling.
    assert [got["code", t.id]["turns"] for t in (CABLES, LAMPS)] == [2, 2]
    assert [got["calls", t.id]["turns"] for t in (CABLES, LAMPS)] == [3, 2]
    # Prompt tokens from the endpoint's usage (1 a request here).
    assert all(o["tokens_counted"] and o["prompt_tokens"] == o["turns"] for o in got.values())
    assert got["code", CABLES.id]["calls"][0]["name"] == "run_python"
    sent = [[t["function"]["name"] for t in body["tools"]] for body in replay.bodies(CHAT)]
    assert sent[0] == ["run_python", "find_tools"]
    assert {len(names) for names in sent[4:]} == {100}  # function calling at 100 tools: all of them
    assert "stock__adjust_stock" in sent[4]


def test_the_table_of_task_files_compares_the_modes_on_the_tasks_both_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def outcome(
        mode: str, task: str, tokens: int, solved: bool = False, calls: tuple[str, ...] = ()
    ) -> dict[str, object]:
        done = TaskOutcome(mode, 1000, task, solved, True, 2, tokens, True, 1.0, [{"name": c} for c in calls])
        return vars(done)

    decoys = decoy_tools(1000 - 21, seed=7)
    decoy = next(f"{peer}__{tools[0].name}" for peer, tools in decoys.items() if peer not in PEERS)
    code_calls = (
        "run_python",
        "find_tools",
        "stock.adjust_stock",
        "stock__adjust_stock",
        "read_dana",
        "run_python",
    )
    files = {
        "code.json": [
            outcome("code", "a", 1_000, True, code_calls),
            outcome("code", "b", 3_000, calls=(decoy, decoy.replace("__", "."), "mail.send")),
            outcome("code", "c", 50),
        ],
        "calls.json": [
            outcome("calls", "a", 8_000, calls=("stock__find_items", decoy, "nope")),
            outcome("calls", "b", 8_000, True),
        ],
    }
    for name, outcomes in files.items():
        (tmp_path / name).write_text(json.dumps({"outcomes": outcomes}))
    assert cli.main(["--code-mode", "--table", *(str(tmp_path / name) for name in files)]) == 0
    out = capsys.readouterr().out
    assert "| code | 1,000 | 3 | 33 |" in out and "| calls | 1,000 | 2 | 50 |" in out
    # Task c ran in code mode only: the comparison leaves it out (2,000 against 8,000 a task).
    assert "| 1,000 | 2 | 1 / 1 | 2.00 / 2.00 | 2,000 / 8,000 | 0.250 | 1 / 1 |" in out
    assert comparison([]).count("\n") == 1  # the header only
    # The calls by the kind of name written, over the catalogue the run offered (rebuilt): in
    # order run_python, find_tools, a public name (world, decoy), a program name (world, decoy),
    # no function.
    assert "| code | 1,000 | 9 | 2 | 1 | 1 | 1 | 1 | 1 | 2 |" in out
    assert "| calls | 1,000 | 3 | 0 | 0 | 1 | 1 | 0 | 0 | 1 |" in out


def test_resume_goes_on_with_the_tasks_a_run_cut_short_left(tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    args = [
        *("--code-mode", "--model", "m", "--api-key", "k", "--modes", "code"),
        *("--sizes", "100", "--tasks", f"{CABLES.id},{LAMPS.id}", "--quiet", "--out", str(out)),
    ]
    with replay_openai([brain()] * 20) as replay:
        assert cli.main(["--base-url", replay.base_url, *args]) == 0
    first = json.loads(out.read_text())
    # Written before `direct_calls` was a setting: it is off, so the file still resumes.
    older = {k: v for k, v in first["settings"].items() if k != "direct_calls"}
    out.write_text(
        json.dumps(first | {"complete": False, "outcomes": first["outcomes"][:1], "settings": older})
    )
    with replay_openai([brain()] * 20) as replay:
        assert cli.main(["--base-url", replay.base_url, *args, "--resume"]) == 0
        sent = len(replay.bodies(CHAT))
    document = json.loads(out.read_text())
    assert [o["task"] for o in document["outcomes"]] == [CABLES.id, LAMPS.id]
    assert document["complete"] and sent == first["outcomes"][1]["turns"]  # the second task only
    with replay_openai([brain()] * 20) as replay:
        assert cli.main(["--base-url", replay.base_url, *args, "--resume", "--max-turns", "3"]) == 2
        assert replay.bodies(CHAT) == []


@pytest.mark.anyio
async def test_direct_calls_run_a_tool_called_by_its_program_name_only_when_set() -> None:
    def direct(body: dict[str, Any]) -> dict[str, Any]:
        """Offered run_python, calls the tools by their names in a program instead."""
        answered = sum(m["role"] == "tool" for m in body["messages"])
        steps = [
            ("stock.find_items", {"query": "USB-C"}),
            ("stock.adjust_stock", {"sku": "USB-C-01", "delta": 25}),
        ]
        if answered >= len(steps):
            return chat_completion({"content": "Done."})
        name, arguments = steps[answered]
        return chat_completion(
            {"content": None, "tool_calls": [tool_call(f"c{answered}", name, json.dumps(arguments))]}
        )

    solved = {}
    for direct_calls in (False, True):
        settings = TaskSettings(
            model="m", sizes=(100,), modes=("code",), tasks=(CABLES.id,), direct_calls=direct_calls
        )
        with replay_openai([direct] * 3) as replay:
            async with AsyncOpenAI(base_url=replay.base_url, api_key="k", max_retries=0) as client:
                with anyio.fail_after(120):
                    [outcome] = await run_tasks(client, settings)
        solved[direct_calls] = outcome.solved
        assert outcome.turns == 3 and [c["name"] for c in outcome.calls] == [
            "stock.find_items",
            "stock.adjust_stock",
        ]
    assert solved == {False: False, True: True}


@pytest.mark.anyio
async def test_at_a_thousand_tools_without_usage_the_tokens_are_estimated() -> None:
    settings = TaskSettings(model="m", sizes=(1000,), tasks=(CABLES.id,))
    with replay_openai([brain(usage=False)] * 6) as replay:
        async with AsyncOpenAI(base_url=replay.base_url, api_key="k", max_retries=0) as client:
            with anyio.fail_after(120):
                outcomes = await run_tasks(client, settings)
    code, calls = outcomes
    assert (code.mode, calls.mode) == ("code", "calls")
    assert code.solved and calls.solved
    assert not code.tokens_counted and not calls.tokens_counted
    sent = [len(body["tools"]) for body in replay.bodies(CHAT)]
    assert sent == [2, 2, 128, 128, 128]  # function calling: the adapter's budget of 128 tools
    # The estimate follows what was sent: two functions against 128 tools a request.
    assert 0 < code.prompt_tokens * 4 < calls.prompt_tokens
    table = task_table(outcomes)
    assert "| code | 1,000 | 1 | 100 |" in table and "(est.)" in table


def test_a_sample_is_spread_over_the_tasks_and_unknown_ids_are_refused() -> None:
    sample = chosen_tasks(TaskSettings(model="m", limit=10))
    assert len({t.id for t in sample}) == 10 and sample[0] is TASKS[0] and sample[-1] is not TASKS[-1]
    assert chosen_tasks(TaskSettings(model="m", limit=100)) == list(TASKS)
    with pytest.raises(ValueError, match="unknown task id"):
        chosen_tasks(TaskSettings(model="m", tasks=("no-such-task",)))
