"""NameTable: public `peer__tool` names that are legal, unambiguous and stable."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from mcpx_router import NameTable, ToolKey, is_legal_name
from mcpx_router._naming import candidate_names

# Written out here rather than imported, so a change to the package's pattern cannot hide a bug.
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
HASHED = re.compile(r"_[0-9a-f]{8}$")


def legal(name: str | None) -> bool:
    return name is not None and OPENAI_NAME.fullmatch(name) is not None


# -- readable names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "tool", "expected"),
    [
        ("weather", "forecast", "weather__forecast"),
        ("my-peer", "get-thing", "my-peer__get-thing"),
        ("Peer1", "Tool_2", "Peer1__Tool_2"),
        ("fs", "read_file", "fs__read_file"),
        ("a", "b", "a__b"),
        ("p" * 30, "t" * 32, "p" * 30 + "__" + "t" * 32),  # exactly 64 characters
    ],
)
def test_readable_name_when_legal_and_free(peer: str, tool: str, expected: str) -> None:
    table = NameTable()
    assert table.assign(ToolKey(peer, tool)) == expected
    assert table.resolve(expected) == ToolKey(peer, tool)
    assert table.name_of(ToolKey(peer, tool)) == expected


def test_sixty_five_characters_is_not_readable() -> None:
    key = ToolKey("p" * 30, "t" * 33)
    name = NameTable().assign(key)
    assert legal(name)
    assert len(name) <= 64
    assert HASHED.search(name)


@pytest.mark.parametrize(
    ("peer", "tool", "prefix"),
    [
        ("fs", "read.file", "fs__read_file_"),
        ("fs", "a.b.c", "fs__a_b_c_"),
        ("my.peer", "tool", "my_peer__tool_"),
        ("peer", "do thing", "peer__do_thing_"),
        ("peer", "tool/sub", "peer__tool_sub_"),
        ("peer", "tool:v2", "peer__tool_v2_"),
        ("café", "résumé", "caf___r_sum__"),
    ],
)
def test_illegal_characters_are_replaced_and_hashed(peer: str, tool: str, prefix: str) -> None:
    name = NameTable().assign(ToolKey(peer, tool))
    assert legal(name)
    assert name.startswith(prefix)
    assert HASHED.search(name), name


ODD_PEERS = [
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\u200b",  # zero-width space: looks empty
    "\u00a0",
    "_",
    "__",
    "-",
    ".",
    "..",
    "my peer",
    "日本語",
    "ñandú",
    "emoji-🙂",
    "a" * 64,
    "a" * 300,
    "x" * 63 + "__",
    "__" * 40,
    "peer\x00nul",
]
ODD_TOOLS = [
    "t",
    "get.file",
    "a" * 128,
    "a.b-c_d" * 18,  # 126 characters
    "_",
    "__",
    "x" * 127 + ".",
    "ツール",
    "with space",
    "-leading-hyphen",
]


@pytest.mark.parametrize("peer", ODD_PEERS)
def test_odd_peer_ids_give_legal_names(peer: str) -> None:
    table = NameTable()
    names = [table.assign(ToolKey(peer, tool)) for tool in ODD_TOOLS]
    assert all(legal(name) for name in names), names
    assert len(set(names)) == len(names)
    for tool, name in zip(ODD_TOOLS, names, strict=True):
        assert table.resolve(name) == ToolKey(peer, tool)


def test_every_odd_pair_in_one_table() -> None:
    table = NameTable()
    keys = [ToolKey(peer, tool) for peer in ODD_PEERS for tool in ODD_TOOLS]
    names = [table.assign(key) for key in keys]
    assert all(legal(name) for name in names)
    assert len(set(names)) == len(keys) == len(table)
    assert [table.resolve(name) for name in names] == keys


def test_long_names_keep_some_of_both_parts() -> None:
    name = NameTable().assign(ToolKey("weather" + "w" * 100, "forecast" + "f" * 120))
    assert legal(name)
    peer_part, _, tool_part = name.partition("__")
    assert peer_part.startswith("weather")
    assert tool_part.startswith("forecast")


@pytest.mark.parametrize(
    ("peer", "tool"),
    [("p" * 200, "t"), ("p", "t" * 128), ("p" * 200, "t" * 128), ("", "t" * 128), ("p" * 10, "t" * 60)],
)
def test_long_names_are_exactly_bounded(peer: str, tool: str) -> None:
    name = NameTable().assign(ToolKey(peer, tool))
    assert legal(name)
    assert len(name) <= 64


def test_is_legal_name_matches_the_openai_pattern() -> None:
    for good in ["a", "A-b_c", "0", "x" * 64, "a__b"]:
        assert is_legal_name(good)
    for bad in ["", "x" * 65, "a.b", "a b", "a\n", "é", "a/b", "a:b"]:
        assert not is_legal_name(bad)


# -- ambiguity and collisions --------------------------------------------------------------


def test_ambiguous_split_first_comer_keeps_readable_name() -> None:
    table = NameTable()
    first = table.assign(ToolKey("a__b", "c"))
    second = table.assign(ToolKey("a", "b__c"))
    assert first == "a__b__c"
    assert second != first
    assert legal(second)
    assert HASHED.search(second)
    assert table.resolve(first) == ToolKey("a__b", "c")
    assert table.resolve(second) == ToolKey("a", "b__c")


def test_ambiguous_split_other_order() -> None:
    table = NameTable()
    first = table.assign(ToolKey("a", "b__c"))
    second = table.assign(ToolKey("a__b", "c"))
    assert first == "a__b__c"
    assert second != first and legal(second)
    assert table.resolve("a__b__c") == ToolKey("a", "b__c")
    assert table.resolve(second) == ToolKey("a__b", "c")


def test_three_way_split() -> None:
    keys = [ToolKey("a", "b__c__d"), ToolKey("a__b", "c__d"), ToolKey("a__b__c", "d")]
    table = NameTable()
    names = [table.assign(key) for key in keys]
    assert names[0] == "a__b__c__d"
    assert len(set(names)) == 3
    assert all(legal(n) for n in names)
    assert [table.resolve(n) for n in names] == keys


@pytest.mark.parametrize(
    ("legal_key", "sanitised_key"),
    [
        (ToolKey("x_y", "t"), ToolKey("x.y", "t")),
        (ToolKey("p", "x_y"), ToolKey("p", "x.y")),
        (ToolKey("p", "x_y"), ToolKey("p", "x y")),
        (ToolKey("p_q", "r_s"), ToolKey("p.q", "r.s")),
    ],
)
def test_sanitising_collisions(legal_key: ToolKey, sanitised_key: ToolKey) -> None:
    for order in ([legal_key, sanitised_key], [sanitised_key, legal_key]):
        table = NameTable()
        names = {key: table.assign(key) for key in order}
        assert names[legal_key] == f"{legal_key.peer}__{legal_key.tool}"
        assert names[sanitised_key] != names[legal_key]
        assert legal(names[sanitised_key])
        assert table.resolve(names[legal_key]) == legal_key
        assert table.resolve(names[sanitised_key]) == sanitised_key


def test_keys_that_sanitise_alike_get_different_names() -> None:
    keys = [ToolKey("p", t) for t in ["x.y", "x y", "x/y", "x:y", "x\ty", "xéy"]]
    table = NameTable()
    names = [table.assign(key) for key in keys]
    assert len(set(names)) == len(keys)
    assert all(n.startswith("p__x_y_") for n in names)


def test_a_readable_name_equal_to_another_keys_hashed_name() -> None:
    # A key whose readable form is exactly the hashed name another key would get.
    hashed_key = ToolKey("x.y", "t")
    hashed = next(iter(candidate_names(hashed_key)))
    peer, _, tool = hashed.partition("__")
    impostor = ToolKey(peer, tool)
    assert f"{impostor.peer}__{impostor.tool}" == hashed

    table = NameTable()
    assert table.assign(hashed_key) == hashed
    other = table.assign(impostor)
    assert other != hashed and legal(other)
    assert table.resolve(hashed) == hashed_key

    # The other way round: the impostor came first, so the hashed key moves on to its next candidate.
    table = NameTable()
    assert table.assign(impostor) == hashed
    moved = table.assign(hashed_key)
    assert moved != hashed and legal(moved) and HASHED.search(moved)
    assert table.resolve(moved) == hashed_key
    assert table.resolve(hashed) == impostor


def test_hashed_names_do_not_depend_on_other_keys() -> None:
    key = ToolKey("x.y", "t.u")
    alone = NameTable().assign(key)
    crowded = NameTable()
    for i in range(50):
        crowded.assign(ToolKey(f"peer{i}", f"tool.{i}"))
    assert crowded.assign(key) == alone


# -- stability -----------------------------------------------------------------------------


def test_existing_names_never_change_when_others_come_and_go() -> None:
    table = NameTable()
    incumbents = {key: table.assign(key) for key in [ToolKey("a__b", "c"), ToolKey("fs", "read.file")]}
    newcomer = ToolKey("a", "b__c")
    newcomer_name = table.assign(newcomer)
    assert HASHED.search(newcomer_name)

    for round_ in range(5):
        extra = [ToolKey(f"p{round_}", f"t{i}") for i in range(5)] + [ToolKey("a_b", f"c.{round_}")]
        for key in extra:
            table.assign(key)
        for key in extra[::2]:
            table.release(key)
        for key, name in incumbents.items():
            assert table.name_of(key) == name
            assert table.resolve(name) == key
        assert table.name_of(newcomer) == newcomer_name


def test_incumbent_is_not_renamed_when_the_ambiguous_twin_arrives() -> None:
    table = NameTable()
    table.assign(ToolKey("a", "b__c"))
    before = dict(table.items())
    table.assign(ToolKey("a__b", "c"))
    after = dict(table.items())
    for name, key in before.items():
        assert after[name] == key


def test_release_frees_the_readable_name() -> None:
    table = NameTable()
    first = ToolKey("a__b", "c")
    second = ToolKey("a", "b__c")
    assert table.assign(first) == "a__b__c"
    second_name = table.assign(second)
    assert table.release(first) == "a__b__c"
    assert table.resolve("a__b__c") is None
    assert table.name_of(first) is None
    # The newcomer keeps its hashed name even though the readable one is free now.
    assert table.name_of(second) == second_name
    # A returning key takes the free readable name again.
    assert table.assign(first) == "a__b__c"


def test_release_then_reassign_same_key() -> None:
    table = NameTable()
    key = ToolKey("weather", "forecast")
    name = table.assign(key)
    assert table.release(key) == name
    assert len(table) == 0
    assert name not in table
    assert table.assign(key) == name
    assert name in table


def test_release_unknown_key_returns_none() -> None:
    table = NameTable()
    table.assign(ToolKey("p", "t"))
    assert table.release(ToolKey("p", "other")) is None
    assert table.release(ToolKey("q", "t")) is None
    assert len(table) == 1


def test_release_peer() -> None:
    table = NameTable()
    for tool in ["a", "b", "c.d"]:
        table.assign(ToolKey("p", tool))
    kept = table.assign(ToolKey("q", "a"))
    released = table.release_peer("p")
    assert len(released) == 3
    assert all(table.resolve(n) is None for n in released)
    assert table.resolve(kept) == ToolKey("q", "a")
    assert list(table.items()) == [(kept, ToolKey("q", "a"))]
    assert table.release_peer("p") == []


def test_assign_is_idempotent() -> None:
    table = NameTable()
    key = ToolKey("fs", "read.file")
    assert table.assign(key) == table.assign(key) == table.name_of(key)
    assert len(table) == 1


def test_deterministic_across_fresh_tables() -> None:
    keys = [
        ToolKey("a__b", "c"),
        ToolKey("a", "b__c"),
        ToolKey("x.y", "t"),
        ToolKey("x_y", "t"),
        ToolKey("日本", "ツール"),
        ToolKey("p" * 100, "t" * 128),
        ToolKey("", ""),
    ]
    first = NameTable()
    second = NameTable()
    assert [first.assign(k) for k in keys] == [second.assign(k) for k in keys]


def test_items_in_registration_order() -> None:
    table = NameTable()
    keys = [ToolKey("p", "z"), ToolKey("p", "a"), ToolKey("q", "m")]
    names = [table.assign(k) for k in keys]
    assert list(table.items()) == list(zip(names, keys, strict=True))


# -- resolution ----------------------------------------------------------------------------


def test_resolution_is_by_lookup_never_by_splitting() -> None:
    table = NameTable()
    table.assign(ToolKey("a", "b__c"))
    # Splitting "a__b__c" at the first or last "__" would give ("a", "b__c") or ("a__b", "c");
    # only the table knows which one it is.
    assert table.resolve("a__b__c") == ToolKey("a", "b__c")
    assert table.resolve("a__b") is None
    assert table.resolve("b__c") is None
    assert table.resolve("") is None
    assert table.resolve("nope__nothing") is None


def test_resolve_hashed_name() -> None:
    table = NameTable()
    key = ToolKey("my peer", "get.file")
    name = table.assign(key)
    assert table.resolve(name) == key
    assert table.resolve(name.upper()) is None


# -- property tests ------------------------------------------------------------------------

ADVERSARIAL = st.sampled_from(list("ab_.-_ _Zé日\u200b/:0"))
SHORT_TEXT = st.text(ADVERSARIAL, max_size=8)
LONG_TEXT = st.text(ADVERSARIAL, min_size=40, max_size=140)
ANY_TEXT = st.one_of(SHORT_TEXT, SHORT_TEXT, LONG_TEXT, st.text(max_size=20))
KEYS = st.builds(ToolKey, ANY_TEXT, ANY_TEXT)


def colliders(key: ToolKey, assigned: str | None) -> list[ToolKey]:
    """Keys built to collide with `key`: other splits of its readable form, sanitised twins, and a
    key whose readable form is `key`'s current name."""
    out: list[ToolKey] = []
    readable = f"{key.peer}__{key.tool}"
    for match in re.finditer("(?=__)", readable):
        i = match.start()
        out.append(ToolKey(readable[:i], readable[i + 2 :]))
    out.append(ToolKey(re.sub(r"[^a-zA-Z0-9_-]", "_", key.peer), re.sub(r"[^a-zA-Z0-9_-]", "_", key.tool)))
    out.append(ToolKey(key.peer.replace("_", "."), key.tool.replace("_", ".")))
    if assigned is not None:
        peer, _, tool = assigned.partition("__")
        out.append(ToolKey(peer, tool))
    return out


class NameTableMachine(RuleBasedStateMachine):
    keys = Bundle("keys")

    def __init__(self) -> None:
        super().__init__()
        self.table = NameTable()
        self.model: dict[ToolKey, str] = {}

    @rule(target=keys, key=KEYS)
    def new_key(self, key: ToolKey) -> ToolKey:
        return key

    @rule(key=keys, data=st.data())
    def collide(self, key: ToolKey, data: st.DataObject) -> None:
        candidates = colliders(key, self.model.get(key))
        self._assign(data.draw(st.sampled_from(candidates)))

    @rule(key=keys)
    def assign(self, key: ToolKey) -> None:
        self._assign(key)

    @rule(key=consumes(keys))
    def release(self, key: ToolKey) -> None:
        expected = self.model.pop(key, None)
        assert self.table.release(key) == expected
        if expected is not None:
            assert self.table.resolve(expected) is None

    @rule(key=keys)
    def release_peer(self, key: ToolKey) -> None:
        expected = {k: n for k, n in self.model.items() if k.peer == key.peer}
        released = self.table.release_peer(key.peer)
        assert sorted(released) == sorted(expected.values())
        for k in expected:
            del self.model[k]

    def _assign(self, key: ToolKey) -> None:
        name = self.table.assign(key)
        if key in self.model:
            # A name never changes while its key stays assigned.
            assert name == self.model[key]
        else:
            assert name not in self.model.values()
            self.model[key] = name

    @invariant()
    def names_are_legal_injective_and_resolve(self) -> None:
        names = list(self.model.values())
        assert all(legal(n) for n in names)
        assert len(set(names)) == len(names) == len(self.table)
        for key, name in self.model.items():
            assert self.table.name_of(key) == name
            assert self.table.resolve(name) == key
        assert dict(self.table.items()) == {n: k for k, n in self.model.items()}


NameTableMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestNameTableStateful = NameTableMachine.TestCase


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), KEYS), max_size=40))
def test_sequences_are_deterministic_and_stable(ops: list[tuple[bool, ToolKey]]) -> None:
    """Replaying the same assign/release sequence on fresh tables gives the same names; every
    live name stays put from its assignment to its release."""
    tables = [NameTable(), NameTable()]
    history: list[list[str | None]] = [[], []]
    for table, log in zip(tables, history, strict=True):
        live: dict[ToolKey, str] = {}
        for is_assign, key in ops:
            if is_assign:
                name = table.assign(key)
                assert legal(name)
                assert live.setdefault(key, name) == name
                log.append(name)
            else:
                log.append(table.release(key))
                live.pop(key, None)
            for k, n in live.items():
                assert table.name_of(k) == n
                assert table.resolve(n) == k
    assert history[0] == history[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(KEYS, max_size=30))
def test_any_keys_get_legal_distinct_resolvable_names(keys: list[ToolKey]) -> None:
    table = NameTable()
    assigned = {key: table.assign(key) for key in keys}
    assert all(legal(n) for n in assigned.values())
    assert len(set(assigned.values())) == len(assigned)
    for key, name in assigned.items():
        assert table.resolve(name) == key
        if legal(f"{key.peer}__{key.tool}") and keys.index(key) == 0:
            assert name == f"{key.peer}__{key.tool}"


EVERY_CODE_POINT = st.text(st.characters(exclude_categories=()), max_size=12)
"""Lone surrogates, NUL and other controls, marks, emoji, unassigned code points."""
UNICODE_KEYS = st.builds(
    ToolKey,
    st.one_of(
        EVERY_CODE_POINT, SHORT_TEXT, st.text(st.characters(exclude_categories=()), min_size=60, max_size=200)
    ),
    st.one_of(
        EVERY_CODE_POINT, SHORT_TEXT, st.sampled_from(["\ud800", "\udfff", "\ud83d\ude00", "🙂", "a__b"])
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(UNICODE_KEYS, max_size=20))
def test_any_code_points_get_legal_injective_stable_names(keys: list[ToolKey]) -> None:
    """Every str is a possible peer id or tool name here; a lone surrogate is hashed as
    `surrogatepass` UTF-8, so `"\\ud83d\\ude00"` (two code points) and `"😀"` stay apart."""
    table, again = NameTable(), NameTable()
    names = {key: table.assign(key) for key in keys}
    assert [again.assign(key) for key in names] == list(names.values())
    assert all(legal(name) for name in names.values())
    assert len(set(names.values())) == len(names)
    for key, name in names.items():
        assert table.resolve(name) == key


def test_a_surrogate_pair_as_two_code_points_is_not_the_character() -> None:
    table = NameTable()
    pair, char = ToolKey("p", "\ud83d\ude00"), ToolKey("p", "\U0001f600")
    assert table.assign(pair) != table.assign(char)
    assert table.resolve(table.assign(pair)) == pair
