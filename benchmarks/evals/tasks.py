"""Thirty labelled multi-step tasks over the servers of `world.py`, each with a check of the end state.

A task is a request in the user's words that takes 2 to 5 dependent calls across the peers
(`calls`: the fewest that do it; `peers`: those it needs). Its check reads the `World` after the
conversation: what was created, changed, sent or ordered, and that nothing it should keep was
lost. A task is solved when its check passes, whatever the model said.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .world import World

__all__ = ["TASKS", "Task"]


@dataclass(frozen=True)
class Task:
    id: str
    text: str
    peers: tuple[str, ...]
    calls: int
    check: Callable[[World], bool]


def _note(world: World, title: str) -> dict[str, Any] | None:
    found = [n for n in world.notes.values() if n["title"].strip().casefold() == title.casefold()]
    return found[-1] if found else None


def _note_has(world: World, title: str, *parts: str) -> bool:
    note = _note(world, title)
    return note is not None and all(p.casefold() in note["body"].casefold() for p in parts)


def _sent(world: World, to: str, subject: str | None = None, *parts: str) -> bool:
    for mail in world.sent:
        if mail["to"].strip().casefold() != to:
            continue
        if subject is not None and subject.casefold() not in mail["subject"].casefold():
            continue
        if all(p.casefold() in (mail["subject"] + " " + mail["body"]).casefold() for p in parts):
            return True
    return False


def _event(world: World, title: str, date: str) -> dict[str, Any] | None:
    found = [
        e for e in world.events.values() if title.casefold() in e["title"].casefold() and e["date"] == date
    ]
    return found[-1] if found else None


def _ordered(world: World, sku: str, quantity: int, supplier: str) -> bool:
    return [(o["sku"], o["quantity"], o["supplier"].strip().casefold()) for o in world.orders] == [
        (sku, quantity, supplier.casefold())
    ]


def _qty(world: World, sku: str) -> int:
    return int(world.items[sku]["qty"])


def _at(event: dict[str, Any] | None, start: str, end: str, *attendees: str) -> bool:
    return (
        event is not None
        and (event["start"], event["end"]) == (start, end)
        and set(attendees) <= {a.strip().casefold() for a in event["attendees"]}
    )


DANA, OMAR, LEE = "dana@example.com", "omar@example.com", "lee@example.com"

TASKS: tuple[Task, ...] = (
    Task(
        "mail-dana-budget",
        "Send Dana Whitfield an email with the subject 'Budget' telling her the budget review moved "
        "to Friday.",
        ("mail",),
        2,
        lambda w: _sent(w, DANA, "budget", "friday"),
    ),
    Task(
        "q3-file-to-note",
        "Save the contents of the file /reports/q3.txt as a new note titled 'Q3 report'.",
        ("drive", "notes"),
        2,
        lambda w: _note_has(w, "Q3 report", "1.2M", "Churn"),
    ),
    Task(
        "cables-received",
        "We received 25 more USB-C cables; add them to the stock.",
        ("stock",),
        2,
        lambda w: _qty(w, "USB-C-01") == 65,
    ),
    Task(
        "lamps-reorder",
        "Check the stock of desk lamps; if fewer than 10 are left, order 20 from the supplier that "
        "/ops/suppliers.csv lists for them.",
        ("stock", "drive"),
        3,
        lambda w: _ordered(w, "LAMP-07", 20, "Bolt Supply"),
    ),
    Task(
        "offsite-event",
        "Find Omar's email about the offsite and add an event 'Offsite' from 09:00 to 17:00 on the "
        "date it gives.",
        ("mail", "schedule"),
        3,
        lambda w: _at(_event(w, "offsite", "2026-12-10"), "09:00", "17:00"),
    ),
    Task(
        "mugs-order",
        "Read Dana's email about the mug shortage and place the purchase order it asks for, with "
        "supplier Acme Parts.",
        ("mail", "stock"),
        4,
        lambda w: _ordered(w, "MUG-11", 30, "Acme Parts"),
    ),
    Task(
        "q3-to-lee",
        "Lee Chen asked for the Q3 report. Email him the contents of /reports/q3.txt with the "
        "subject 'Q3 report'.",
        ("mail", "drive"),
        3,
        lambda w: _sent(w, LEE, "q3 report", "1.2M"),
    ),
    Task(
        "sync-with-lee",
        "Book a 30-minute meeting 'Sync with Lee' on 2026-12-03 at the first free time, inviting Lee Chen.",
        ("schedule", "mail"),
        3,
        lambda w: _at(_event(w, "sync with lee", "2026-12-03"), "10:00", "10:30", LEE),
    ),
    Task(
        "cancel-standup",
        "Cancel the team standup on 2026-12-01 and email its attendees that it is cancelled.",
        ("schedule", "mail"),
        3,
        lambda w: "e1" not in w.events and _sent(w, LEE, None, "cancel"),
    ),
    Task(
        "oncall-disk-alert",
        "Email whoever is on call this week (see /ops/oncall.txt) with the subject 'Disk alert' and "
        "the body 'Disk on db1 is at 91%.'",
        ("drive", "mail"),
        2,
        lambda w: _sent(w, OMAR, "disk alert", "db1"),
    ),
    Task(
        "archive-q4-draft",
        "Move /reports/q4-draft.txt to /archive/q4-draft.txt and add a note titled 'Archived' that "
        "says where it went.",
        ("drive", "notes"),
        2,
        lambda w: "/reports/q4-draft.txt" not in w.files
        and w.files.get("/archive/q4-draft.txt") == "Q4 draft: numbers to come."
        and _note_has(w, "Archived", "/archive/q4-draft.txt"),
    ),
    Task(
        "quote-from-bolt",
        "Look up Bolt Supply's email address in the note 'Vendor list' and email them the subject "
        "'Quote request' asking for a quote for 50 desk lamps.",
        ("notes", "mail"),
        3,
        lambda w: _sent(w, "sales@bolt.example", "quote request"),
    ),
    Task(
        "chair-value",
        "Compute the total value (quantity times unit price) of the office chairs in stock and save it "
        "as a note titled 'Chair value' whose body is that number.",
        ("stock", "notes"),
        2,
        lambda w: (n := _note(w, "Chair value")) is not None and "2160" in n["body"].replace(",", ""),
    ),
    Task(
        "review-attendees-note",
        "Make a note titled 'Design review attendees' listing the email addresses of the attendees "
        "of the design review on 2026-12-02.",
        ("schedule", "notes"),
        2,
        lambda w: _note_has(w, "Design review attendees", DANA, OMAR),
    ),
    Task(
        "standup-append",
        "Append the line 'Lee owns the release checklist.' to the note 'Standup notes'.",
        ("notes",),
        2,
        lambda w: w.notes["n1"]["body"].startswith("Ship the login fix.")
        and "lee owns the release checklist" in w.notes["n1"]["body"].casefold(),
    ),
    Task(
        "out-of-stock-file",
        "Write a file /reports/out-of-stock.txt listing the SKUs of the items with no units in stock.",
        ("stock", "drive"),
        2,
        lambda w: "MUG-11" in w.files.get("/reports/out-of-stock.txt", "")
        and not any(s in w.files["/reports/out-of-stock.txt"] for s in ("USB-C-01", "LAMP-07", "CHAIR-02")),
    ),
    Task(
        "lamps-to-50",
        "Order enough desk lamps from Bolt Supply to bring the stock up to 50.",
        ("stock",),
        2,
        lambda w: _ordered(w, "LAMP-07", 46, "Bolt Supply"),
    ),
    Task(
        "lee-mail-to-note",
        "Save Lee's email about the report as a note titled 'From Lee', with the email's body as the "
        "note's body.",
        ("mail", "notes"),
        3,
        lambda w: _note_has(w, "From Lee", "Q3 report text"),
    ),
    Task(
        "dentist-next-day",
        "Move my dentist appointment on 2026-12-03 to 2026-12-04, same time.",
        ("schedule",),
        3,
        lambda w: _event(w, "dentist", "2026-12-03") is None
        and _at(_event(w, "dentist", "2026-12-04"), "09:00", "10:00"),
    ),
    Task(
        "copy-oncall",
        "Copy /ops/oncall.txt to /archive/oncall-week48.txt, keeping the original.",
        ("drive",),
        2,
        lambda w: w.files.get("/archive/oncall-week48.txt") == w.files.get("/ops/oncall.txt") is not None,
    ),
    Task(
        "budget-review-invite",
        "Invite Dana Whitfield and Omar Haddad to a 'Budget review' on 2026-12-05 from 11:00 to 12:00.",
        ("mail", "schedule"),
        3,
        lambda w: _at(_event(w, "budget review", "2026-12-05"), "11:00", "12:00", DANA, OMAR),
    ),
    Task(
        "count-events",
        "Count the events on 2026-12-01, 2026-12-02 and 2026-12-03 and save a note titled "
        "'Event count' with the total as its body.",
        ("schedule", "notes"),
        4,
        lambda w: (n := _note(w, "Event count")) is not None
        and n["body"].strip().rstrip(".") in ("3", "three"),
    ),
    Task(
        "broken-cables",
        "Ten USB-C cables were found broken: take them out of the stock, then email Dana Whitfield "
        "the new count with the subject 'Cable stock'.",
        ("stock", "mail"),
        4,
        lambda w: _qty(w, "USB-C-01") == 30 and _sent(w, DANA, "cable stock", "30"),
    ),
    Task(
        "delete-groceries",
        "Delete the note titled 'Groceries'.",
        ("notes",),
        2,
        lambda w: _note(w, "Groceries") is None and {"n1", "n3"} <= w.notes.keys(),
    ),
    Task(
        "cables-from-supplier",
        "Order 15 USB-C cables from the supplier that /ops/suppliers.csv names for them.",
        ("drive", "stock"),
        3,
        lambda w: _ordered(w, "USB-C-01", 15, "Acme Parts"),
    ),
    Task(
        "mugs-back",
        "A delivery of 24 coffee mugs arrived: add them to the stock, and email Dana Whitfield "
        "(who reported the shortage) with the subject 'Mugs are back'.",
        ("stock", "mail"),
        4,
        lambda w: _qty(w, "MUG-11") == 24 and _sent(w, DANA, "mugs are back"),
    ),
    Task(
        "oncall-incident-review",
        "Invite whoever is on call (see /ops/oncall.txt) to an 'Incident review' on 2026-12-04 from "
        "15:00 to 16:00.",
        ("drive", "schedule"),
        2,
        lambda w: _at(_event(w, "incident review", "2026-12-04"), "15:00", "16:00", OMAR),
    ),
    Task(
        "reports-note",
        "Make a note titled 'Reports' listing the path of every file under /reports.",
        ("drive", "notes"),
        2,
        lambda w: _note_has(w, "Reports", "/reports/q3.txt", "/reports/q4-draft.txt"),
    ),
    Task(
        "offsite-note",
        "Read Omar's email about the offsite and add a note titled 'Offsite' with its date and place.",
        ("mail", "notes"),
        3,
        lambda w: _note_has(w, "Offsite", "2026-12-10", "lake house"),
    ),
    Task(
        "review-moved",
        "The design review on 2026-12-02 moves to 16:00-17:00 the same day: cancel it, create it again "
        "at the new time with the same attendees, and email Dana Whitfield the new time with the "
        "subject 'Design review moved'.",
        ("schedule", "mail"),
        5,
        lambda w: "e2" not in w.events
        and _at(_event(w, "design review", "2026-12-02"), "16:00", "17:00", DANA, OMAR)
        and _sent(w, DANA, "design review moved", "16:00"),
    ),
)
