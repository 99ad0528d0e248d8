"""Suggestions for a name that is not published: what they are, and that they stay cheap."""

from __future__ import annotations

import difflib
import random

import mcp_types as mt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks.names import WORDS, misspell
from mcpx_router._catalogue import Catalogue
from mcpx_router.model._search_hints import meaningful
from mcpx_router.model._suggest import MOST, NameSuggester, _Keys

TOOLS = [
    ("docs", "search"),
    ("docs", "status"),
    ("web", "search"),
    ("web", "fetch"),
    ("git", "git_log"),
    ("git", "git_commit"),
    ("weather", "forecast"),
]
CATALOGUE = NameSuggester((f"{peer}__{tool}", tool) for peer, tool in TOOLS)


@pytest.mark.parametrize(
    ("called", "expected"),
    [
        pytest.param("docs__serch", ["docs__search"], id="typo-in-tool"),
        pytest.param("docs__saerch", ["docs__search"], id="letters-swapped"),
        pytest.param("doc__search", ["docs__search"], id="typo-in-peer"),
        pytest.param("docs_search", ["docs__search"], id="single-underscore"),
        pytest.param("Docs__Search", ["docs__search"], id="case"),
        pytest.param("docs-search", ["docs__search"], id="dash"),
        pytest.param("functions.docs__search", ["docs__search"], id="namespace-prefix"),
        pytest.param("search", ["docs__search", "web__search"], id="bare-tool"),
        pytest.param("Git_Log", ["git__git_log"], id="bare-tool-case"),
        pytest.param("browser__fetch", ["web__fetch"], id="wrong-peer"),
        pytest.param("serch", ["docs__search", "web__search"], id="bare-tool-typo"),
        pytest.param("weather__forcats", ["weather__forecast"], id="two-edits"),
        pytest.param("zzzzzzzz", [], id="nothing-alike"),
        pytest.param("", [], id="empty"),
        pytest.param("x" * 10_000, [], id="very-long"),
        pytest.param("docs__search\ud800", ["docs__search"], id="lone-surrogate"),
    ],
)
def test_realistic_mistakes(called: str, expected: list[str]) -> None:
    assert CATALOGUE.suggest(called) == expected


def test_an_empty_catalogue_suggests_nothing() -> None:
    assert NameSuggester([]).suggest("docs__search") == []


# -- properties over generated catalogues -------------------------------------------------

LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789_-"
parts = st.text(alphabet=LETTERS, min_size=1, max_size=12)
catalogues = st.lists(st.tuples(parts, parts), min_size=1, max_size=40, unique=True)


@st.composite
def one_edit(draw: st.DrawFn, name: str) -> str:
    """`name` with one letter added, dropped, changed, or two adjacent letters swapped."""
    i = draw(st.integers(0, len(name) - 1))
    letter = draw(st.sampled_from(LETTERS + "ABCZ"))
    kind = draw(st.sampled_from(["add", "drop", "change", "swap"]))
    if kind == "add":
        return name[:i] + letter + name[i:]
    if kind == "drop" and len(name) > 1:
        return name[:i] + name[i + 1 :]
    if kind == "swap" and i + 1 < len(name):
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return name[:i] + letter + name[i + 1 :]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), tools=catalogues)
def test_a_name_one_edit_from_a_published_one_suggests_it(
    data: st.DataObject, tools: list[tuple[str, str]]
) -> None:
    names = [f"{peer}__{tool}" for peer, tool in tools]
    target = data.draw(st.sampled_from(names))
    called = data.draw(one_edit(target))
    if called in names:
        return  # the edit made another published name: nothing to suggest
    suggested = NameSuggester(zip(names, [tool for _, tool in tools], strict=True)).suggest(called)
    assert target in suggested or len(suggested) == MOST


@settings(max_examples=300, deadline=None)
@given(data=st.data(), tools=catalogues)
def test_a_bare_tool_name_suggests_every_peer_that_has_it(
    data: st.DataObject, tools: list[tuple[str, str]]
) -> None:
    names = [f"{peer}__{tool}" for peer, tool in tools]
    _, tool = data.draw(st.sampled_from(tools))
    if tool in names:
        return
    having = [f"{p}__{t}" for p, t in tools if t == tool]
    suggested = NameSuggester(zip(names, [t for _, t in tools], strict=True)).suggest(tool)
    assert set(having) <= set(suggested) or len(suggested) == MOST


# -- as good as difflib, and much cheaper ----------------------------------------------------

PEERS = ["github", "slack", "jira", "notion", "drive", "mail", "calendar", "weather", "db", "search"]


def realistic_catalogue(rng: random.Random, peers: int, tools_per_peer: int) -> list[tuple[str, str]]:
    """`peers` peers with `tools_per_peer` tools each, named from a small vocabulary (so many names
    share words, as real catalogues do)."""
    tools: list[tuple[str, str]] = []
    for p in range(peers):
        peer = f"{rng.choice(PEERS)}{p}"
        own: set[str] = set()
        while len(own) < tools_per_peer:
            own.add("_".join(rng.sample(WORDS, rng.choice([2, 3]))))
        tools += [(f"{peer}__{tool}", tool) for tool in sorted(own)]
    return tools


def test_suggestions_are_at_least_as_good_as_difflibs() -> None:
    rng = random.Random(7)
    tools = realistic_catalogue(rng, peers=20, tools_per_peer=25)
    names = [name for name, _ in tools]
    suggester = NameSuggester(tools)
    ours = theirs = tried = 0
    for _ in range(300):
        name, tool = rng.choice(tools)
        called = misspell(rng, name, tool)
        if called in names:
            continue
        tried += 1
        ours += name in suggester.suggest(called)
        theirs += name in difflib.get_close_matches(called, names, n=3)
    assert ours >= theirs
    assert ours >= 0.95 * tried, (ours, theirs, tried)


def osa_distance(a: str, b: str) -> int:
    """Edit distance with adjacent swaps, computed the plain way (the oracle for the index)."""
    rows = [[max(i, j) if min(i, j) == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[-1][-1]


short = st.text(alphabet="abc_", max_size=7)


@settings(max_examples=400, deadline=None)
@given(keys=st.lists(short, max_size=30), query=short)
def test_the_trigram_index_finds_exactly_the_strings_one_edit_away(keys: list[str], query: str) -> None:
    # A three-letter alphabet and short strings: many neighbours, many shared and missing trigrams.
    expected = [i for i, key in enumerate(keys) if osa_distance(query, key) == 1]
    assert _Keys(keys).near(query) == expected


def test_the_texts_quoted_in_the_docs() -> None:
    catalogue = Catalogue()
    for peer, tools in {"docs": ["search", "status"], "web": ["search", "fetch"]}.items():
        catalogue.set_peer(peer, [mt.Tool(name=t, input_schema={"type": "object"}) for t in tools])
    assert [f"Error: {catalogue.why_unknown(name)}" for name in ("docs__serch", "search")] == [
        "Error: there is no tool named 'docs__serch'. Did you mean 'docs__search'? "
        "Call only the functions offered in this conversation.",
        "Error: there is no tool named 'search'. Did you mean 'docs__search' or 'web__search'? "
        "Call only the functions offered in this conversation.",
    ]


def test_the_index_follows_the_catalogue_and_is_kept_while_only_definitions_change() -> None:
    catalogue = Catalogue()
    catalogue.set_peer("docs", [mt.Tool(name="search", input_schema={"type": "object"})])
    assert "Did you mean 'docs__search'?" in catalogue.why_unknown("docs__serch")
    index = catalogue._unknown._suggester
    assert index is not None
    indexed = dict(index._entries)
    described = mt.Tool(name="search", description="Search the docs.", input_schema={"type": "object"})
    assert catalogue.set_peer("docs", [described])
    assert "Did you mean 'docs__search'?" in catalogue.why_unknown("docs__serch")
    assert catalogue._unknown._suggester is index and index._entries == indexed  # nothing re-indexed
    catalogue.set_peer("docs", [described, mt.Tool(name="serve", input_schema={"type": "object"})])
    assert "Did you mean 'docs__serve'?" in catalogue.why_unknown("docs__serv")
    catalogue.remove_peer("docs")
    assert catalogue.why_unknown("docs__serve") == (
        "'docs__serve' is not available now: peer 'docs' left. Call only the functions offered now."
    )
    assert "Did you mean" not in catalogue.why_unknown("docs__serc")


# -- kept per peer: after any history, the suggestions of a suggester made afresh -----------

HISTORY_PEERS = ["docs", "web", "git"]
HISTORY_TOOLS = ["search", "serch", "status", "fetch", "git_log", "Search", "log", "stat"]
CALLED = st.sampled_from(
    [
        "docs__serch",
        "search",
        "web_fetch",
        "git__log",
        "stat",
        "zzz",
        "Docs__Status",
        "gitt__git_log",
        "seach",
    ]
)
CHANGES = st.one_of(
    st.tuples(
        st.just("set"), st.sampled_from(HISTORY_PEERS), st.lists(st.sampled_from(HISTORY_TOOLS), unique=True)
    ),
    st.tuples(st.just("withdraw"), st.sampled_from(HISTORY_PEERS), st.none()),
    st.tuples(st.just("remove"), st.sampled_from(HISTORY_PEERS), st.none()),
)


@settings(max_examples=300, deadline=None)
@example(  # a peer that left and came back goes after the others, in the index too
    history=[
        ([("set", "docs", ["search"]), ("set", "web", ["search"])], ["serch"]),
        ([("remove", "docs", None), ("set", "docs", ["search"])], ["serch"]),
    ]
)
@given(
    history=st.lists(
        st.tuples(st.lists(CHANGES, max_size=3), st.lists(CALLED, max_size=2)), min_size=1, max_size=6
    )
)
def test_the_suggestions_after_any_history_are_a_fresh_indexs(
    history: list[tuple[list[tuple[str, str, list[str] | None]], list[str]]],
) -> None:
    """Peers join, change, withdraw and leave, with unknown names called in between (the index is
    then brought up to date per peer): every suggestion is what an index made afresh suggests."""
    catalogue = Catalogue()
    for changes, called in history:
        for change, peer, tools in changes:
            if change == "set":
                catalogue.set_peer(
                    peer, [mt.Tool(name=t, input_schema={"type": "object"}) for t in tools or []]
                )
            elif change == "withdraw":
                catalogue.withdraw_peer(peer, "it was lost")
            else:
                catalogue.remove_peer(peer)
        fresh = NameSuggester((t.name, t.tool) for t in catalogue.all_tools())
        for name in called:
            if catalogue.lookup(name) is None and catalogue.departure(name) is None:
                expected, evident = fresh.graded(name)
                listed = " or ".join(repr(n) for n in expected) if len(expected) <= 1 else None
                text = catalogue.why_unknown(name)
                assert catalogue._unknown._suggester is not None
                assert catalogue._unknown._suggester.suggest(name) == expected
                if not evident:  # only spelt alike: those whose words say what the name says
                    tools = {t.name: t for t in catalogue.all_tools()}
                    meant = [t.name for t in meaningful(name, [tools[n] for n in expected], misspelt=True)]
                    assert ("Did you mean" in text) == bool(meant)
                    assert all(repr(n) in text for n in meant)
                elif listed:
                    assert f"Did you mean {listed}?" in text
                elif not expected:
                    assert "Did you mean" not in text


def test_a_change_of_one_peer_reindexes_only_that_peers_names() -> None:
    catalogue = Catalogue()
    for peer in ("docs", "web", "git"):
        catalogue.set_peer(
            peer, [mt.Tool(name=t, input_schema={"type": "object"}) for t in ("search", "fetch")]
        )
    catalogue.why_unknown("serch")
    index = catalogue._unknown._suggester
    assert index is not None
    before = dict(index._entries)
    catalogue.set_peer("web", [mt.Tool(name=t, input_schema={"type": "object"}) for t in ("search", "find")])
    assert "'web__find'" in catalogue.why_unknown("web__fnd")
    added = {n: pair for n, pair in index._entries.items() if n not in before}
    removed = {n: pair for n, pair in before.items() if n not in index._entries}
    assert list(added.values()) == [("web__find", "find")]
    assert list(removed.values()) == [("web__fetch", "fetch")]
