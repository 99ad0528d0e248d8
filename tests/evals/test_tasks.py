"""The multi-step tasks and their servers: each check fails on the untouched world and passes after a
reference sequence of calls through the router's dispatch (so every task can be solved with the
tools offered, and none is solved by doing nothing); a wrong end state fails it."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

import mcp
import pytest

from benchmarks.evals.tasks import TASKS
from benchmarks.evals.world import PEERS, World, servers
from mcpx_router import OpenAIPeerToolAdapter

pytestmark = pytest.mark.anyio

Calls = list[tuple[str, dict[str, Any]]]

REFERENCE: dict[str, Calls] = {
    "mail-dana-budget": [
        ("mail__find_contact", {"name": "Dana"}),
        (
            "mail__send_mail",
            {"to": "dana@example.com", "subject": "Budget", "body": "The review moved to Friday."},
        ),
    ],
    "q3-file-to-note": [
        ("drive__read_file", {"path": "/reports/q3.txt"}),
        ("notes__create_note", {"title": "Q3 report", "body": "Q3 revenue: 1.2M. Churn: 3%."}),
    ],
    "cables-received": [
        ("stock__find_items", {"query": "USB-C"}),
        ("stock__adjust_stock", {"sku": "USB-C-01", "delta": 25}),
    ],
    "lamps-reorder": [
        ("stock__find_items", {"query": "lamp"}),
        ("drive__read_file", {"path": "/ops/suppliers.csv"}),
        ("stock__create_purchase_order", {"sku": "LAMP-07", "quantity": 20, "supplier": "Bolt Supply"}),
    ],
    "offsite-event": [
        ("mail__search_mail", {"query": "offsite"}),
        ("mail__read_mail", {"message_id": "m1"}),
        (
            "schedule__create_event",
            {"title": "Offsite", "date": "2026-12-10", "start": "09:00", "end": "17:00"},
        ),
    ],
    "mugs-order": [
        ("mail__search_mail", {"query": "mug"}),
        ("mail__read_mail", {"message_id": "m2"}),
        ("stock__find_items", {"query": "mug"}),
        ("stock__create_purchase_order", {"sku": "MUG-11", "quantity": 30, "supplier": "Acme Parts"}),
    ],
    "q3-to-lee": [
        ("mail__find_contact", {"name": "Lee Chen"}),
        ("drive__read_file", {"path": "/reports/q3.txt"}),
        ("mail__send_mail", {"to": "lee@example.com", "subject": "Q3 report", "body": "Q3 revenue: 1.2M."}),
    ],
    "sync-with-lee": [
        ("schedule__free_slots", {"date": "2026-12-03", "duration_minutes": 30}),
        ("mail__find_contact", {"name": "Lee"}),
        (
            "schedule__create_event",
            {
                "title": "Sync with Lee",
                "date": "2026-12-03",
                "start": "10:00",
                "end": "10:30",
                "attendees": ["lee@example.com"],
            },
        ),
    ],
    "cancel-standup": [
        ("schedule__list_events", {"date": "2026-12-01"}),
        ("schedule__cancel_event", {"event_id": "e1"}),
        ("mail__send_mail", {"to": "lee@example.com", "subject": "Standup cancelled", "body": "Cancelled."}),
    ],
    "oncall-disk-alert": [
        ("drive__read_file", {"path": "/ops/oncall.txt"}),
        (
            "mail__send_mail",
            {"to": "omar@example.com", "subject": "Disk alert", "body": "Disk on db1 is at 91%."},
        ),
    ],
    "archive-q4-draft": [
        ("drive__move_file", {"source": "/reports/q4-draft.txt", "destination": "/archive/q4-draft.txt"}),
        ("notes__create_note", {"title": "Archived", "body": "Moved to /archive/q4-draft.txt"}),
    ],
    "quote-from-bolt": [
        ("notes__search_notes", {"query": "Vendor list"}),
        ("notes__get_note", {"note_id": "n3"}),
        (
            "mail__send_mail",
            {"to": "sales@bolt.example", "subject": "Quote request", "body": "50 desk lamps?"},
        ),
    ],
    "chair-value": [
        ("stock__get_item", {"sku": "CHAIR-02"}),
        ("notes__create_note", {"title": "Chair value", "body": "2160"}),
    ],
    "review-attendees-note": [
        ("schedule__list_events", {"date": "2026-12-02"}),
        (
            "notes__create_note",
            {"title": "Design review attendees", "body": "dana@example.com, omar@example.com"},
        ),
    ],
    "standup-append": [
        ("notes__search_notes", {"query": "Standup notes"}),
        ("notes__append_to_note", {"note_id": "n1", "text": "Lee owns the release checklist."}),
    ],
    "out-of-stock-file": [
        ("stock__find_items", {"query": ""}),
        ("drive__write_file", {"path": "/reports/out-of-stock.txt", "content": "MUG-11\n"}),
    ],
    "lamps-to-50": [
        ("stock__find_items", {"query": "desk lamp"}),
        ("stock__create_purchase_order", {"sku": "LAMP-07", "quantity": 46, "supplier": "Bolt Supply"}),
    ],
    "lee-mail-to-note": [
        ("mail__search_mail", {"query": "report"}),
        ("mail__read_mail", {"message_id": "m3"}),
        ("notes__create_note", {"title": "From Lee", "body": "Can you send me the Q3 report text?"}),
    ],
    "dentist-next-day": [
        ("schedule__list_events", {"date": "2026-12-03"}),
        ("schedule__cancel_event", {"event_id": "e3"}),
        (
            "schedule__create_event",
            {"title": "Dentist", "date": "2026-12-04", "start": "09:00", "end": "10:00"},
        ),
    ],
    "copy-oncall": [
        ("drive__read_file", {"path": "/ops/oncall.txt"}),
        (
            "drive__write_file",
            {"path": "/archive/oncall-week48.txt", "content": "On call this week: omar@example.com"},
        ),
    ],
    "budget-review-invite": [
        ("mail__find_contact", {"name": "Dana Whitfield"}),
        ("mail__find_contact", {"name": "Omar Haddad"}),
        (
            "schedule__create_event",
            {
                "title": "Budget review",
                "date": "2026-12-05",
                "start": "11:00",
                "end": "12:00",
                "attendees": ["dana@example.com", "omar@example.com"],
            },
        ),
    ],
    "count-events": [
        ("schedule__list_events", {"date": "2026-12-01"}),
        ("schedule__list_events", {"date": "2026-12-02"}),
        ("schedule__list_events", {"date": "2026-12-03"}),
        ("notes__create_note", {"title": "Event count", "body": "3"}),
    ],
    "broken-cables": [
        ("stock__find_items", {"query": "USB-C"}),
        ("stock__adjust_stock", {"sku": "USB-C-01", "delta": -10}),
        ("mail__find_contact", {"name": "Dana"}),
        ("mail__send_mail", {"to": "dana@example.com", "subject": "Cable stock", "body": "30 left."}),
    ],
    "delete-groceries": [
        ("notes__search_notes", {"query": "Groceries"}),
        ("notes__delete_note", {"note_id": "n2"}),
    ],
    "cables-from-supplier": [
        ("drive__read_file", {"path": "/ops/suppliers.csv"}),
        ("stock__find_items", {"query": "USB-C"}),
        ("stock__create_purchase_order", {"sku": "USB-C-01", "quantity": 15, "supplier": "Acme Parts"}),
    ],
    "mugs-back": [
        ("stock__find_items", {"query": "mug"}),
        ("stock__adjust_stock", {"sku": "MUG-11", "delta": 24}),
        ("mail__find_contact", {"name": "Dana"}),
        ("mail__send_mail", {"to": "dana@example.com", "subject": "Mugs are back", "body": "24 arrived."}),
    ],
    "oncall-incident-review": [
        ("drive__read_file", {"path": "/ops/oncall.txt"}),
        (
            "schedule__create_event",
            {
                "title": "Incident review",
                "date": "2026-12-04",
                "start": "15:00",
                "end": "16:00",
                "attendees": ["omar@example.com"],
            },
        ),
    ],
    "reports-note": [
        ("drive__list_files", {"directory": "/reports"}),
        ("notes__create_note", {"title": "Reports", "body": "/reports/q3.txt\n/reports/q4-draft.txt"}),
    ],
    "offsite-note": [
        ("mail__search_mail", {"query": "offsite"}),
        ("mail__read_mail", {"message_id": "m1"}),
        ("notes__create_note", {"title": "Offsite", "body": "2026-12-10 at the lake house"}),
    ],
    "review-moved": [
        ("schedule__list_events", {"date": "2026-12-02"}),
        ("schedule__cancel_event", {"event_id": "e2"}),
        (
            "schedule__create_event",
            {
                "title": "Design review",
                "date": "2026-12-02",
                "start": "16:00",
                "end": "17:00",
                "attendees": ["dana@example.com", "omar@example.com"],
            },
        ),
        ("mail__find_contact", {"name": "Dana"}),
        (
            "mail__send_mail",
            {"to": "dana@example.com", "subject": "Design review moved", "body": "Now 16:00."},
        ),
    ],
}


async def _play(calls: Calls) -> World:
    world = World()
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        for peer, server in servers(world).items():
            await adapter.add_peer(peer, await stack.enter_async_context(mcp.Client(server)))
        for name, arguments in calls:
            outcome = await adapter.call(name, arguments)
            assert not outcome.is_error, (name, outcome.text)
    return world


def test_thirty_labelled_tasks_of_two_to_five_calls_across_the_peers() -> None:
    assert len(TASKS) >= 30
    assert len({t.id for t in TASKS}) == len(TASKS)
    assert set(REFERENCE) == {t.id for t in TASKS}
    for task in TASKS:
        assert 2 <= task.calls <= 5 and len(REFERENCE[task.id]) == task.calls, task.id
        used = {name.split("__")[0] for name, _ in REFERENCE[task.id]}
        assert used == set(task.peers) and used <= set(PEERS), task.id
    assert sum(len(t.peers) > 1 for t in TASKS) >= 20


def test_no_task_is_solved_by_the_untouched_world() -> None:
    assert [t.id for t in TASKS if t.check(World())] == []


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
async def test_each_task_is_solved_by_its_reference_calls_and_not_by_half_of_them(task: Any) -> None:
    calls = REFERENCE[task.id]
    assert task.check(await _play(calls))
    # Without its last call (the one that changes what the check reads), the task is not done.
    assert not task.check(await _play(calls[:-1]))


async def test_a_refused_call_tells_the_model_why_and_logs_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    async with AsyncExitStack() as stack:
        adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
        for peer, server in servers(world).items():
            await adapter.add_peer(peer, await stack.enter_async_context(mcp.Client(server)))
        with caplog.at_level(logging.INFO):
            outcome = await adapter.call(
                "mail__send_mail", {"to": "/ops/oncall.txt", "subject": "disk", "body": "full"}
            )
    assert outcome.is_error
    assert "'/ops/oncall.txt' is not an email address" in outcome.text
    assert not [r for r in caplog.records if r.exc_info], "an expected refusal logged a traceback"
