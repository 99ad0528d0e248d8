"""Properties of the pure parts of groups: names, the choice of a member, statistics arithmetic."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import MemberState, NameTable, ToolKey, UsageError
from mcpx_router._naming import candidate_names
from mcpx_router._published import PublishedTool
from mcpx_router.groups._caller import GroupCaller
from mcpx_router.groups._choosing import Chooser
from mcpx_router.groups._groups import Group
from mcpx_router.groups._reputation import ERROR_KINDS, Reputation, percentile
from mcpx_router.groups._spec import auto_group_name, check_group_name, member_keys

TEXT = st.text(min_size=0, max_size=70)
IDS = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40)
FAILURES = st.sampled_from([None, *ERROR_KINDS, "unknown_tool", "peer_error"])


@settings(max_examples=200)
@given(st.lists(st.tuples(IDS, TEXT), min_size=1, max_size=12), st.lists(TEXT, max_size=8))
def test_group_names_never_meet_peer_tool_names(pairs: list[tuple[str, str]], tools: list[str]) -> None:
    table = NameTable()
    published = {table.assign(ToolKey(peer, tool)) for peer, tool in pairs}
    for peer, tool in pairs:  # every name a pair could ever take, not only the one it got
        for _, name in zip(range(3), candidate_names(ToolKey(peer, tool)), strict=False):
            published.add(name)
    taken: set[str] = set()
    for tool in tools:
        name = auto_group_name(tool, taken)
        assert check_group_name(name) == name  # legal, and without `__`
        assert name not in taken
        taken.add(name)
    assert not taken & published
    assert all("__" in name for name in published)


@given(TEXT)
def test_a_group_name_is_accepted_only_without_a_double_underscore(name: str) -> None:
    try:
        check_group_name(name)
    except UsageError:
        assert (
            "__" in name
            or not (0 < len(name) <= 64)
            or any(not (c.isascii() and (c.isalnum() or c in "_-")) for c in name)
        )
    else:
        assert "__" not in name


@given(IDS, TEXT)
def test_a_member_string_names_the_peer_it_starts_with(peer: str, tool: str) -> None:
    keys = member_keys(f"{peer}/{tool}", [peer, "other"])
    assert (ToolKey(peer, tool) in keys) == bool(tool)


def member(index: int, *, calls: int = 0, failures: int = 0, **overrides: Any) -> MemberState:
    """A member with `calls` finished calls, the first `failures` of them failed, and `overrides`
    (consecutive_failures, bad, outstanding) set on its statistics."""
    reputation = Reputation()
    key = ToolKey(f"p{index}", "search")
    for record in reputation._records(key):
        for n in range(calls):
            record.add(0.01, "tool_error" if n < failures else None, "failed")
    stats = replace(reputation.tool(key), **overrides)
    return MemberState(key.peer, key.tool, f"{key.peer}__search", index, stats)


MEMBERS = st.lists(
    st.builds(
        lambda calls, failures, streak, bad, busy: (calls, min(failures, calls), streak, bad, busy),
        st.integers(0, 4),
        st.integers(0, 4),
        st.integers(0, 4),
        st.sampled_from([0.0, 1.0, 2.5]),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None)
@given(MEMBERS, st.sampled_from(["reputation", "round_robin", "random"]), st.integers(-1, 5))
def test_every_policy_tries_each_member_once_healthy_first(
    shapes: list[Any], policy: Any, preferred: int
) -> None:
    members = [
        member(i, calls=c, failures=f, consecutive_failures=s, bad=b, outstanding=o)
        for i, (c, f, s, b, o) in enumerate(shapes)
    ]
    chooser = Chooser(policy, seed=7)
    wanted = f"p{preferred}" if 0 <= preferred < len(members) else None
    order = chooser.order("g", members, wanted)
    assert sorted(m.position for m in order) == list(range(len(members)))
    health = [m.healthy for m in order]
    rest = health[1:] if wanted is not None and order[0].peer == wanted else health
    assert rest == sorted(rest, reverse=True)  # healthy ones before the others
    preferred_member = next((m for m in members if m.peer == wanted), None)
    if preferred_member is not None and preferred_member.healthy:
        assert order[0] is preferred_member
    if policy == "reputation":
        chosen = order[1:] if wanted is not None and order[0].peer == wanted else order
        scores = [(not m.healthy, -m.stats.score, m.stats.outstanding) for m in chosen]
        assert scores == sorted(scores)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4))
def test_round_robin_serves_healthy_members_in_turn(size: int, rounds: int) -> None:
    members = [member(i) for i in range(size)]
    chooser = Chooser("round_robin")
    firsts = Counter(chooser.order("g", members, None)[0].peer for _ in range(size * rounds))
    assert firsts == Counter({m.peer: rounds for m in members})


def test_a_policy_that_raises_falls_back_to_reputation(caplog: pytest.LogCaptureFixture) -> None:
    def broken(group: str, members: Any) -> Any:
        raise RuntimeError("no")

    members = [member(0, calls=2, failures=2), member(1)]
    assert [m.peer for m in Chooser(broken).order("g", members, None)] == ["p1", "p0"]
    assert "policy raised" in caplog.text
    assert [m.peer for m in Chooser(lambda g, ms: [ms[1]]).order("g", members, None)] == ["p1"]


CALLS = st.lists(st.tuples(st.floats(0, 10, allow_nan=False), FAILURES), min_size=0, max_size=60)


@settings(max_examples=60, deadline=None)
@given(CALLS, st.integers(1, 20))
def test_statistics_add_up_over_the_window(calls: list[tuple[float, Any]], window: int) -> None:
    reputation = Reputation(window)
    key = ToolKey("p", "t")
    for index, (seconds, failure) in enumerate(calls):
        reputation._records(key)[0].add(seconds, failure, f"failure {index}")
        reputation._records(key)[1].add(seconds, failure, f"failure {index}")
    report = reputation.report()
    if not calls:
        assert report.tools == {}
        return
    stats = report.tools[key]
    assert stats.calls == len(calls) == report.peers["p"].calls
    kinds = Counter(f if f in ERROR_KINDS else "tool_error" for _, f in calls if f is not None)
    assert dict(stats.errors) == {kind: kinds.get(kind, 0) for kind in ERROR_KINDS}
    recent = sorted(seconds for seconds, _ in calls[-window:])
    assert stats.p50 == recent[math.ceil(0.5 * len(recent)) - 1]
    assert stats.p95 == recent[math.ceil(0.95 * len(recent)) - 1]
    assert stats.p50 is not None and stats.p95 is not None and stats.p50 <= stats.p95
    failed = [i for i, (_, f) in enumerate(calls) if f is not None]
    assert (stats.last_failure is None) == (not failed)
    if failed:
        assert stats.last_failure is not None and stats.last_failure.message == f"failure {failed[-1]}"
    assert 0 <= stats.score <= 1


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30), st.floats(0.01, 1))
def test_percentile_is_a_value_with_enough_below(values: list[float], fraction: float) -> None:
    result = percentile(values, fraction)
    assert result in values
    assert sum(v <= result for v in values) >= fraction * len(values) - 1e-9
    assert sum(v < result for v in values) < max(1, math.ceil(fraction * len(values)))


@settings(max_examples=40, deadline=None)
@given(MEMBERS, st.integers(-1, 5))
def test_the_default_path_of_a_group_call_ranks_as_the_reputation_policy(
    shapes: list[Any], preferred: int
) -> None:
    """A group call ranks its members without building MemberStates: the member it tries first,
    and the order of the others after a failure, are the policy's."""
    reputation = Reputation()
    tools = [PublishedTool(f"p{i}__search", f"p{i}", "search", "", {}, {}) for i in range(len(shapes))]
    for tool, (calls, failures, streak, bad, busy) in zip(tools, shapes, strict=True):
        for record in reputation._records(tool.key):
            for n in range(calls):
                record.add(0.01, "tool_error" if n < failures else None, "failed")
            record.consecutive, record.bad, record.outstanding = streak, bad, busy
    caller = GroupCaller(
        None, {}, reputation, Chooser(), failover="safe", max_output_chars=None, progress=lambda t, c: None
    )  # type: ignore[arg-type]
    wanted = f"p{preferred}" if 0 <= preferred < len(tools) else None
    order = caller._order(Group("g", "host", tuple(tools)), wanted)
    states = [MemberState(t.peer, t.tool, t.name, i, reputation.tool(t.key)) for i, t in enumerate(tools)]
    expected = [tools[s.position] for s in Chooser().order("g", states, wanted)]
    assert order[0] is expected[0]
    assert sorted(order[1:], key=lambda m: reputation.standing(m.key)) == expected[1:]
