"""The shared roster of the NATS mode: whatever order frames and heartbeats arrive in, it ends
as the truth, and it never announces a leave of someone it did not have."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router.mcpx.gateway.cluster._cluster_state import (
    HeartbeatParts,
    Placement,
    SharedRoster,
    decode_token,
    encode_token,
    heartbeat_messages,
)

GATEWAYS = ("g1", "g2", "g3")
PIDS = ("a", "b", "c")
TOPIC = "room"


def info(pid: str) -> Mapping[str, Any]:
    return {"id": pid}


@given(st.text(min_size=1, max_size=40))
def test_subject_tokens_round_trip_and_hold_no_subject_syntax(text: str) -> None:
    token = encode_token(text)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", token)
    assert decode_token(token) == text


# A timeline of what really happens on the other gateways, and the messages it produces: presence
# frames (in one order: they go through one stream) and heartbeats (each gateway's in its order,
# but at any point relative to the frames and to other gateways' heartbeats).
actions = st.lists(
    st.tuples(
        st.sampled_from(["connect", "disconnect", "beat"]), st.sampled_from(PIDS), st.sampled_from(GATEWAYS)
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(actions, st.randoms(use_true_random=False))
def test_the_roster_converges_on_the_truth_in_any_order(
    timeline: list[tuple[str, str, str]], rng: random.Random
) -> None:
    truth: dict[str, tuple[str, str]] = {}  # pid -> (gateway, conn)
    frames: list[tuple[str, str, str, str]] = []  # (event, pid, gateway, conn)
    beats: dict[str, list[tuple[str, list[Any]]]] = {g: [] for g in GATEWAYS}
    serial = 0
    for action, pid, gateway in timeline:
        if action == "connect":
            serial += 1
            conn = f"{serial:06d}"
            truth[pid] = (gateway, conn)  # a connection elsewhere is replaced: no leave for it
            frames.append(("join", pid, gateway, conn))
        elif action == "disconnect" and pid in truth:
            held_by, conn = truth.pop(pid)
            frames.append(("leave", pid, held_by, conn))
        elif action == "beat":
            members = [(TOPIC, p, c, info(p)) for p, (g, c) in truth.items() if g == gateway]
            beats[gateway].append((f"{serial:06d}z", members))  # after every connection made so far
    # one interleaving: frames in order, each gateway's heartbeats in order, otherwise at random
    queues: list[list[Any]] = [[("frame", f) for f in frames]] + [
        [("beat", g, *b) for b in beats[g]] for g in GATEWAYS
    ]
    roster = SharedRoster("me", expiry=10.0, local_conn=lambda topic, pid: None)
    present: set[str] = set()
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        message = queue.pop(0)
        if message[0] == "frame":
            event, pid, gateway, conn = message[1]
            change = (
                roster.joined(TOPIC, pid, Placement(gateway, conn, info(pid)), 0.0)
                if event == "join"
                else roster.left(TOPIC, pid, conn, 0.0)
            )
            changes = [] if change is None else [change]
        else:
            changes = roster.heartbeat(message[1], message[3], 0.0, message[2])
        for change in changes:
            if change.event == "leave":
                assert change.participant_id in present, "a leave of someone not announced"
                present.discard(change.participant_id)
            else:
                present.add(change.participant_id)
    # one more heartbeat from every gateway, after everything: the truth
    for gateway in GATEWAYS:
        members = [(TOPIC, p, c, info(p)) for p, (g, c) in truth.items() if g == gateway]
        for change in roster.heartbeat(gateway, members, 0.0, f"{serial:06d}z"):
            (present.add if change.event == "join" else present.discard)(change.participant_id)
    expected = dict(truth)
    assert {pid: (p.gateway, p.conn) for pid, p in roster.remote(TOPIC).items()} == expected
    assert present == set(expected)


def test_a_silent_gateway_expires_and_takes_its_participants_along() -> None:
    roster = SharedRoster("me", expiry=3.0, local_conn=lambda topic, pid: None)
    roster.heartbeat("g1", [(TOPIC, "a", "001", info("a")), ("other", "b", "002", info("b"))], 0.0, "009")
    roster.heartbeat("g2", [(TOPIC, "c", "003", info("c"))], 0.0, "009")
    assert roster.expire(now=2.0) == []
    roster.heartbeat("g2", [(TOPIC, "c", "003", info("c"))], 2.0, "010")
    gone = roster.expire(now=3.5)
    assert sorted((c.topic, c.participant_id, c.event) for c in gone) == [
        ("other", "b", "leave"),
        (TOPIC, "a", "leave"),
    ]
    assert set(roster.remote(TOPIC)) == {"c"} and roster.gateways() == {"g2"}
    # our own link was down: nobody is judged on the silence
    roster.restart_clocks(now=100.0)
    assert roster.expire(now=101.0) == []


def test_a_newer_connection_elsewhere_replaces_ours_and_an_older_one_does_not() -> None:
    local = {(TOPIC, "x"): "000005-aa"}
    roster = SharedRoster("me", expiry=3.0, local_conn=lambda topic, pid: local.get((topic, pid)))
    assert roster.joined(TOPIC, "x", Placement("g1", "000003-bb", info("x")), 0.0) is None  # stale
    change = roster.joined(TOPIC, "x", Placement("g1", "000007-cc", info("x")), 0.0)
    assert change is not None and change.replaces_local and change.event == "join"
    # it comes back to us: the entry elsewhere is over, and its heartbeats do not revive it
    local[(TOPIC, "x")] = "000009-dd"
    roster.taken_over(TOPIC, "x", 0.0)
    assert roster.heartbeat("g1", [(TOPIC, "x", "000007-cc", info("x"))], 0.0, "000008") == []
    assert dict(roster.remote(TOPIC)) == {}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=20)), max_size=80),
    st.integers(min_value=64, max_value=4096),
    st.randoms(use_true_random=False),
)
def test_a_heartbeat_too_big_for_one_message_goes_in_parts_and_comes_back_whole(
    entries: list[tuple[str, str]], limit: int, rng: random.Random
) -> None:
    members = [(topic, pid, f"{n:06d}", info(pid)) for n, (topic, pid) in enumerate(entries)]
    messages = heartbeat_messages("g1", "000100", members, limit)
    longest = max((len(json.dumps([t, p, c, dict(i)])) for t, p, c, i in members), default=0)
    assert all(len(m) <= limit + longest + 200 for m in messages)
    rng.shuffle(messages)
    parts = HeartbeatParts()
    put_together = [parts.add(json.loads(m)) for m in messages]
    assert put_together[:-1] == [None] * (len(messages) - 1)
    assert put_together[-1] == ("g1", "000100", members)
    # a part of an older heartbeat that never completed is dropped once a newer one arrives
    if len(messages) > 1:
        assert parts.add(json.loads(messages[0]) | {"sent": "000099"}) is None
        assert parts.add(json.loads(heartbeat_messages("g1", "000200", members[:1], limit)[0]))
        assert not parts._pending
