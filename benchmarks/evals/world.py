"""Five small MCP servers with state (notes, a schedule, a drive, stock, mail) for multi-step tasks.

Each task of `tasks.py` starts from a fresh `World`; the servers (built with the `mcp` SDK's
`MCPServer`, served in-process) read and change it, and the task's check reads the end state.
Nothing here knows about the model or the mode the task runs in. A call the world refuses (no
such note, not an email address) raises the SDK's `ToolError`, whose text reaches the model as
the tool's error, as a real server's would; any other exception would be a crash, answered with
no reason and logged with its traceback. The world keeps each refusal's text (`World.refusals`),
so that a replay of a recorded conversation (`replay.py`) can tell what it was refused.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["PEERS", "World", "servers"]

PEERS = ("notes", "schedule", "drive", "stock", "mail")

_NOTES = {
    "n1": {"title": "Standup notes", "body": "Ship the login fix. Lee owns the audit log.", "tags": ["team"]},
    "n2": {"title": "Groceries", "body": "milk, eggs, coffee", "tags": ["home"]},
    "n3": {
        "title": "Vendor list",
        "body": "Acme Parts: orders@acme.example\nBolt Supply: sales@bolt.example",
        "tags": ["ops"],
    },
}
_EVENTS = {
    "e1": {
        "title": "Team standup",
        "date": "2026-12-01",
        "start": "09:00",
        "end": "09:15",
        "attendees": ["lee@example.com"],
    },
    "e2": {
        "title": "Design review",
        "date": "2026-12-02",
        "start": "14:00",
        "end": "15:00",
        "attendees": ["dana@example.com", "omar@example.com"],
    },
    "e3": {"title": "Dentist", "date": "2026-12-03", "start": "09:00", "end": "10:00", "attendees": []},
}
_FILES = {
    "/reports/q3.txt": "Q3 revenue: 1.2M. Churn: 3%.",
    "/reports/q4-draft.txt": "Q4 draft: numbers to come.",
    "/ops/oncall.txt": "On call this week: omar@example.com",
    "/ops/suppliers.csv": "sku,supplier\nUSB-C-01,Acme Parts\nLAMP-07,Bolt Supply\nMUG-11,Acme Parts\n",
}
_ITEMS = {
    "USB-C-01": {"name": "USB-C cable", "qty": 40, "price": 9.5, "location": "A1"},
    "LAMP-07": {"name": "Desk lamp", "qty": 4, "price": 32.0, "location": "B2"},
    "CHAIR-02": {"name": "Office chair", "qty": 12, "price": 180.0, "location": "C3"},
    "MUG-11": {"name": "Coffee mug", "qty": 0, "price": 6.0, "location": "A4"},
}
_CONTACTS = {
    "Dana Whitfield": "dana@example.com",
    "Omar Haddad": "omar@example.com",
    "Lee Chen": "lee@example.com",
}
_INBOX = [
    {
        "id": "m1",
        "from": "omar@example.com",
        "subject": "Offsite",
        "body": "The offsite is on 2026-12-10 at the lake house.",
    },
    {
        "id": "m2",
        "from": "dana@example.com",
        "subject": "Mug shortage",
        "body": "We are out of coffee mugs; please order 30.",
    },
    {
        "id": "m3",
        "from": "lee@example.com",
        "subject": "Report",
        "body": "Can you send me the Q3 report text?",
    },
]


@dataclass
class World:
    """The servers' state: what a task starts from and what its check reads."""

    notes: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(_NOTES))
    events: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(_EVENTS))
    files: dict[str, str] = field(default_factory=lambda: dict(_FILES))
    items: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(_ITEMS))
    orders: list[dict[str, Any]] = field(default_factory=list)
    contacts: dict[str, str] = field(default_factory=lambda: dict(_CONTACTS))
    inbox: list[dict[str, str]] = field(default_factory=lambda: copy.deepcopy(_INBOX))
    sent: list[dict[str, str]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    """What the servers refused, in order (not state a task's check reads)."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(100))

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def refuse(self, reason: str) -> ToolError:
        """The error a server raises to refuse a call, kept in `refusals`."""
        self.refusals.append(reason)
        return ToolError(reason)


def _minutes(hhmm: str) -> int:
    hours, _, minutes = hhmm.partition(":")
    return int(hours) * 60 + int(minutes)


def _notes(world: World) -> MCPServer:
    server = MCPServer("notes")

    @server.tool()
    def search_notes(query: str) -> dict[str, Any]:
        """Find notes whose title or body contains the query (case-insensitive); empty: all notes."""
        q = query.casefold()
        found = [
            {"id": k, "title": n["title"]}
            for k, n in world.notes.items()
            if q in n["title"].casefold() or q in n["body"].casefold()
        ]
        return {"notes": found}

    @server.tool()
    def get_note(note_id: str) -> dict[str, Any]:
        """Read one note: its title, body and tags."""
        if note_id not in world.notes:
            raise world.refuse(f"no note {note_id!r}")
        return {"id": note_id, **world.notes[note_id]}

    @server.tool()
    def create_note(title: str, body: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Create a note; returns its id."""
        note_id = world.new_id("n")
        world.notes[note_id] = {"title": title, "body": body, "tags": list(tags or [])}
        return {"id": note_id}

    @server.tool()
    def append_to_note(note_id: str, text: str) -> dict[str, Any]:
        """Append a line of text to a note's body."""
        if note_id not in world.notes:
            raise world.refuse(f"no note {note_id!r}")
        world.notes[note_id]["body"] += "\n" + text
        return {"id": note_id, "body": world.notes[note_id]["body"]}

    @server.tool()
    def delete_note(note_id: str) -> dict[str, Any]:
        """Delete a note for good."""
        if world.notes.pop(note_id, None) is None:
            raise world.refuse(f"no note {note_id!r}")
        return {"deleted": note_id}

    return server


def _schedule(world: World) -> MCPServer:
    server = MCPServer("schedule")

    @server.tool()
    def list_events(date: str) -> dict[str, Any]:
        """The calendar's events on a date (YYYY-MM-DD), with their ids, times and attendees."""
        return {"events": [{"id": k, **e} for k, e in world.events.items() if e["date"] == date]}

    @server.tool()
    def create_event(
        title: str, date: str, start: str, end: str, attendees: list[str] | None = None
    ) -> dict[str, Any]:
        """Add an event: date YYYY-MM-DD, start and end HH:MM, attendees as email addresses."""
        if _minutes(end) <= _minutes(start):
            raise world.refuse("end must be after start")
        event_id = world.new_id("e")
        world.events[event_id] = {
            "title": title,
            "date": date,
            "start": start,
            "end": end,
            "attendees": list(attendees or []),
        }
        return {"id": event_id}

    @server.tool()
    def cancel_event(event_id: str) -> dict[str, Any]:
        """Cancel (remove) an event by its id."""
        if world.events.pop(event_id, None) is None:
            raise world.refuse(f"no event {event_id!r}")
        return {"cancelled": event_id}

    @server.tool()
    def free_slots(date: str, duration_minutes: int) -> dict[str, Any]:
        """Start times (HH:MM, on the half hour, 09:00-17:00) when a meeting of that length fits."""
        busy = [
            (_minutes(e["start"]), _minutes(e["end"])) for e in world.events.values() if e["date"] == date
        ]
        slots = []
        for start in range(9 * 60, 17 * 60 - duration_minutes + 1, 30):
            end = start + duration_minutes
            if all(end <= b or start >= e for b, e in busy):
                slots.append(f"{start // 60:02d}:{start % 60:02d}")
        return {"slots": slots}

    return server


def _drive(world: World) -> MCPServer:
    server = MCPServer("drive")

    @server.tool()
    def list_files(directory: str) -> dict[str, Any]:
        """The paths of the files under a directory (e.g. /reports)."""
        prefix = directory.rstrip("/") + "/"
        return {"files": sorted(p for p in world.files if p.startswith(prefix))}

    @server.tool()
    def read_file(path: str) -> dict[str, Any]:
        """A text file's content."""
        if path not in world.files:
            raise world.refuse(f"no file {path!r}")
        return {"path": path, "content": world.files[path]}

    @server.tool()
    def write_file(path: str, content: str) -> dict[str, Any]:
        """Create or overwrite a text file."""
        world.files[path] = content
        return {"path": path, "size": len(content)}

    @server.tool()
    def move_file(source: str, destination: str) -> dict[str, Any]:
        """Move (rename) a file."""
        if source not in world.files:
            raise world.refuse(f"no file {source!r}")
        world.files[destination] = world.files.pop(source)
        return {"path": destination}

    return server


def _stock(world: World) -> MCPServer:
    server = MCPServer("stock")

    @server.tool()
    def find_items(query: str) -> dict[str, Any]:
        """Stock items whose name contains the query (case-insensitive; empty: all): sku, name, qty."""
        q = query.casefold()
        found = [
            {"sku": sku, "name": i["name"], "qty": i["qty"]}
            for sku, i in world.items.items()
            if q in i["name"].casefold()
        ]
        return {"items": found}

    @server.tool()
    def get_item(sku: str) -> dict[str, Any]:
        """One stock item: name, quantity in stock, unit price, location."""
        if sku not in world.items:
            raise world.refuse(f"no item {sku!r}")
        return {"sku": sku, **world.items[sku]}

    @server.tool()
    def adjust_stock(sku: str, delta: int) -> dict[str, Any]:
        """Add (positive delta) or remove (negative) units of an item; returns the new quantity."""
        if sku not in world.items:
            raise world.refuse(f"no item {sku!r}")
        if world.items[sku]["qty"] + delta < 0:
            raise world.refuse(f"only {world.items[sku]['qty']} in stock")
        world.items[sku]["qty"] += delta
        return {"sku": sku, "qty": world.items[sku]["qty"]}

    @server.tool()
    def create_purchase_order(sku: str, quantity: int, supplier: str) -> dict[str, Any]:
        """Order units of an item from a supplier; returns the order's id."""
        if sku not in world.items:
            raise world.refuse(f"no item {sku!r}")
        order_id = world.new_id("po")
        world.orders.append({"id": order_id, "sku": sku, "quantity": quantity, "supplier": supplier})
        return {"order_id": order_id}

    return server


def _mail(world: World) -> MCPServer:
    server = MCPServer("mail")

    @server.tool()
    def find_contact(name: str) -> dict[str, Any]:
        """A contact's email address, by (part of) their name."""
        for full, email in world.contacts.items():
            if name.casefold() in full.casefold():
                return {"name": full, "email": email}
        raise world.refuse(f"no contact matches {name!r}")

    @server.tool()
    def search_mail(query: str) -> dict[str, Any]:
        """Messages in the inbox whose sender, subject or body contains the query: id, from, subject."""
        q = query.casefold()
        return {
            "messages": [
                {"id": m["id"], "from": m["from"], "subject": m["subject"]}
                for m in world.inbox
                if any(q in m[k].casefold() for k in ("from", "subject", "body"))
            ]
        }

    @server.tool()
    def read_mail(message_id: str) -> dict[str, Any]:
        """One message of the inbox in full."""
        for message in world.inbox:
            if message["id"] == message_id:
                return dict(message)
        raise world.refuse(f"no message {message_id!r}")

    @server.tool()
    def send_mail(to: str, subject: str, body: str) -> dict[str, Any]:
        """Send an email to one address."""
        if "@" not in to:
            raise world.refuse(f"{to!r} is not an email address")
        world.sent.append({"to": to, "subject": subject, "body": body})
        return {"sent": True, "to": to}

    return server


def servers(world: World) -> dict[str, MCPServer]:
    """The five servers over `world`, by peer id."""
    return {
        "notes": _notes(world),
        "schedule": _schedule(world),
        "drive": _drive(world),
        "stock": _stock(world),
        "mail": _mail(world),
    }
