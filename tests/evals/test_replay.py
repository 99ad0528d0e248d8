"""Replaying a recorded task (`--replay`): its calls run again on a fresh world through the same peers,
in function calling and in code mode; what the world refused is told apart from what the router
answered (an unknown function), and the replayed end state is checked as the conversation's was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.evals import cli
from benchmarks.evals.multistep import REAL_TOOLS, TaskOutcome
from benchmarks.evals.replay import replay

pytestmark = pytest.mark.subprocess  # code mode's sandbox workers


def recorded(mode: str, task: str, calls: list[tuple[str, Any]], size: int = REAL_TOOLS) -> TaskOutcome:
    return TaskOutcome(
        mode=mode,
        size=size,
        task=task,
        solved=False,
        answered=False,
        turns=len(calls),
        prompt_tokens=0,
        tokens_counted=True,
        seconds=0.0,
        calls=[{"name": name, "arguments": json.dumps(arguments)} for name, arguments in calls],
    )


@pytest.mark.anyio
async def test_function_calls_replayed_with_the_refusals_and_the_end_state() -> None:
    outcome = recorded(
        "calls",
        "mail-dana-budget",
        [
            ("mail__send_mail", {"to": "/ops/oncall.txt", "subject": "Budget", "body": "moved"}),
            ("send_dana_whitfield_email", {"subject": "Budget"}),  # no such function: not the world's
            ("mail__find_contact", {"name": "Dana"}),
            ("mail__send_mail", {"to": "dana@example.com", "subject": "Budget", "body": "Moved to Friday."}),
        ],
    )
    done = await replay(outcome)
    assert done.refusals == ["'/ops/oncall.txt' is not an email address"]
    assert len(done.answers) == 4
    assert "is not an email address" in done.answers[0]
    assert "send_dana_whitfield_email" in done.answers[1]
    assert "dana@example.com" in done.answers[2]
    assert done.solved  # the last two calls do the task


@pytest.mark.anyio
async def test_a_program_replayed_in_code_mode_at_the_size_it_ran() -> None:
    program = (
        "try:\n"
        '    stock.adjust_stock(sku="NOPE-1", delta=1)\n'
        "except Exception as e:\n"
        "    print(e)\n"
        'stock.adjust_stock(sku="USB-C-01", delta=25)'
    )
    calls = [("find_tools", {"query": "stock"}), ("run_python", {"code": program})]
    outcome = recorded("code", "cables-received", calls, 100)
    done = await replay(outcome)
    assert done.refusals == ["no item 'NOPE-1'"]
    assert "stock." in done.answers[0]
    assert "no item 'NOPE-1'" in done.answers[1] and "ok" in done.answers[1]
    assert done.solved


@pytest.mark.anyio
async def test_a_conversation_without_calls_replays_to_the_untouched_world() -> None:
    done = await replay(recorded("calls", "cables-received", []))
    assert (done.answers, done.refusals, done.solved) == ([], [], False)


@pytest.mark.anyio
async def test_an_unknown_task_is_refused() -> None:
    with pytest.raises(ValueError, match="no task 'no-such-task'"):
        await replay(recorded("calls", "no-such-task", []))


def test_the_command_reads_each_file_and_names_the_tasks_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    append = ("notes__append_to_note", {"note_id": "12345", "text": "x"})
    refused = recorded("calls", "standup-append", [append])
    clean = recorded("calls", "cables-received", [("stock__find_items", {"query": "USB"})])
    path = tmp_path / "run.json"
    document = {"settings": {"seed": 7, "max_tools": 128}, "outcomes": [vars(refused), vars(clean)]}
    path.write_text(json.dumps(document), encoding="utf-8")
    assert cli.main(["--replay", str(path), "--answers"]) == 0
    out = capsys.readouterr().out
    assert "standup-append" in out and "refused=1" in out and "no note '12345'" in out
    assert "cables-received" in out and "refused=0" in out
    assert "1 of 2 tasks met a refusal: calls:21:standup-append" in out
    assert "-> " in out  # --answers: each call's answer
