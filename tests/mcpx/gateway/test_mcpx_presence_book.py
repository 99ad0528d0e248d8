"""The presence batches of one topic (`RosterBook`), without sockets: any sequence of joins,
leaves and reconnects, batches sent at any points, and clients welcomed at any points; every
client's roster, read from its welcome and the batches after it, is the topic's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router.mcpx._envelope import parse_participant
from mcpx_router.mcpx._welcome import MCP_VERSION, compact_entry, participant_entry
from mcpx_router.mcpx.gateway._gateway_state import History
from mcpx_router.mcpx.gateway._presence import RosterBook, presence_mode

IDS = ["a", "b", "c", "d"]

ops = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["join", "leave", "replace"]), st.sampled_from(IDS)),
        st.just(("batch", "")),
        st.just(("welcome", "")),
    ),
    max_size=40,
)


class Client:
    """A batched client: the roster of its welcome, then each batch applied; reconnects seen."""

    def __init__(self, welcome: dict[str, Any]) -> None:
        self.present = {p["id"]: p["connection"] for p in welcome["payload"]["participants"]}
        self.version = welcome["payload"]["roster_version"]
        self.ended: set[str] = set()
        """Participants whose sessions it ended: they left, or came back on another connection."""

    def apply(self, batch: dict[str, Any]) -> None:
        payload = batch["payload"]
        assert payload["version"] == self.version + 1, "a batch was skipped or repeated"
        self.version = payload["version"]
        for entry in payload["left"]:
            self.present.pop(entry["id"], None)  # (maybe one its welcome showed and it never saw)
            self.ended.add(entry["id"])
        for entry in payload["joined"]:
            if self.present.get(entry["id"], entry["connection"]) != entry["connection"]:
                self.ended.add(entry["id"])  # a connection it did not know: a reconnect
            self.present[entry["id"]] = entry["connection"]


@settings(max_examples=300, deadline=None)
@given(ops)
def test_every_client_ends_with_the_topics_roster(steps: list[tuple[str, str]]) -> None:
    book = RosterBook()
    present: dict[str, str] = {}  # participant -> its connection
    clients: list[Client] = []
    reconnected: list[set[str]] = []  # per client: who reconnected while it knew them
    history = History(10)
    connections = 0

    def batch() -> None:
        text = book.batch()
        if text is not None:
            frame = json.loads(text)
            assert {e["id"] for e in frame["payload"]["joined"]}.isdisjoint(
                e["id"] for e in frame["payload"]["left"]
            ), "a participant is named once per batch"
            for client in clients:
                client.apply(frame)

    for op, pid in steps:
        if (op == "join" and pid not in present) or (op == "replace" and pid in present):
            connections += 1
            present[pid] = f"c{connections}"
            book.touch(pid, {**participant_entry(pid), "connection": present[pid]})
            for client, seen in zip(clients, reconnected, strict=True):
                if pid in client.present:
                    seen.add(pid)
        elif op == "leave" and pid in present:
            del present[pid]
            book.touch(pid, None)
        elif op == "batch":
            batch()
        elif op == "welcome":
            client = Client(json.loads(book.welcome("me", "room", history, "batched")))
            assert client.present == present, "the welcome lists the roster now"
            clients.append(client)
            reconnected.append(set())
    batch()
    for client, seen in zip(clients, reconnected, strict=True):
        assert client.present == present
        # A participant that reconnected while the client knew it: the client started over with it.
        assert seen <= client.ended


def test_the_welcome_roster_is_shared_until_the_roster_changes() -> None:
    book = RosterBook({"x": participant_entry("x")})
    history = History(10)
    history.add({"protocol": "mcp-x/v0", "id": "1", "from": "x", "kind": "mcp", "payload": {}})
    one, two = (json.loads(book.welcome(pid, "room", history, "batched")) for pid in ("p", "q"))
    assert one["payload"]["participants"] == two["payload"]["participants"] == [participant_entry("x")]
    assert one["payload"]["participant"]["id"] == "p" and two["to"] == ["q"]
    assert one["payload"]["history"][0]["id"] == "1" and one["payload"]["roster_version"] == 0
    assert (
        one["type"] == "welcome" and one["participant_id"] == "p" and one["payload"]["presence"] == "batched"
    )
    book.touch("p", participant_entry("p"))
    assert book.batch() is not None
    three = json.loads(book.welcome("r", "room", history, "batched"))
    assert [e["id"] for e in three["payload"]["participants"]] == ["x", "p"]
    assert three["payload"]["roster_version"] == 1 and three["payload"]["presence"] == "batched"
    # one that reads no presence is listed no one, whatever the topic's size
    quiet = json.loads(book.welcome("s", "room", history, "none"))
    assert quiet["payload"]["participants"] == [] and quiet["payload"]["presence"] == "none"
    assert quiet["payload"]["history"] == three["payload"]["history"]


def test_a_join_and_leave_within_one_batch_tell_nothing() -> None:
    book = RosterBook()
    book.touch("a", participant_entry("a"))
    book.touch("a", None)
    assert book.batch() is None and book.version == 0


def test_unknown_presence_modes_get_what_the_draft_sends() -> None:
    assert [presence_mode(v) for v in ("batched", "none", "each", None, "", "BATCHED", "x")] == [
        "batched",
        "none",
        "each",
        "each",
        "each",
        "each",
        "each",
    ]


@pytest.mark.parametrize(
    ("info", "entry"),
    [
        (participant_entry("a"), {"id": "a", "connection": "c"}),
        (participant_entry("a", "Alice"), {"id": "a", "connection": "c", "name": "Alice"}),
        (
            {"id": "a", "kind": "person", "mcp": {"version": "2024-11-05"}},
            {"id": "a", "connection": "c", "kind": "person", "mcp": {"version": "2024-11-05"}},
        ),
    ],
)
def test_batched_entries_leave_out_what_every_entry_says(info: dict[str, Any], entry: dict[str, Any]) -> None:
    assert compact_entry(info, "c") == entry
    parsed = parse_participant(entry)  # read back with what was left out
    assert parsed is not None and parsed.id == "a" and parsed.connection == "c"
    assert (parsed.name, parsed.kind, parsed.mcp_version) == (
        info.get("name", "a"),
        info.get("kind", "agent"),
        info.get("mcp", {}).get("version", MCP_VERSION),
    )
