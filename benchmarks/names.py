"""Answering a call to a name that is not published, with suggestions, at 10,000 tools.

A catalogue of 100 peers x 100 tools, named from a small vocabulary as real catalogues are
(`github7__list_issue_read`: many names share words), is published in a `Catalogue` (no
servers: the names are what matters). Misspelt names are made from published ones the way models
get them wrong: one or two typos, a case change, one underscore for two, no peer prefix.

- subject:  `catalogue.why_unknown(name)`, the text the model reads, suggestions included (the
            index behind it is built at the first unknown name, beforehand, then kept per peer);
- baseline: `difflib.get_close_matches(name, every published name, n=3)`, how the suggestions
            were found before (a scan of every name).

Rounds alternate the two on the same names (the baseline on fewer: it is slow); the figure is
the median over rounds of the time per name. Target: under 1 ms per name. Also reported: how
long building the index takes (once, at the first unknown name), and how
often each finds the name that was meant.

A diagnostic row: at 500 peers x 20 tools, the first unknown-name call after one peer renamed
one of its tools (the index is brought up to date then), against re-listing that peer
(`set_peer`, what the change itself costs the catalogue); the median over rounds.
"""

from __future__ import annotations

import difflib
import random
import time

import mcp_types as mt

from mcpx_router._catalogue import Catalogue

from ._common import Row, Settings, collect, fmt_seconds, median

NAME = "names"

PEERS, TOOLS_PER_PEER = 100, 100
TARGET = 1e-3
WORDS = (
    "get set list search create update delete fetch read write query find open close run sync send post "
    "user file issue repo branch commit page doc record event job task order item price stock weather "
    "forecast city note"
).split()
KINDS = ["github", "slack", "jira", "notion", "drive", "mail", "calendar", "weather", "db", "search"]
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}


def catalogue(rng: random.Random) -> tuple[Catalogue, list[tuple[str, str]]]:
    """The published catalogue, and (public name, tool name) for each of its tools."""
    published = Catalogue()
    for p in range(PEERS):
        tools: set[str] = set()
        while len(tools) < TOOLS_PER_PEER:
            tools.add("_".join(rng.sample(WORDS, rng.choice([2, 3]))))
        listed = [mt.Tool(name=t, description=f"{t} tool.", input_schema=SCHEMA) for t in sorted(tools)]
        published.set_peer(f"{rng.choice(KINDS)}{p}", listed)
    return published, [(t.name, t.tool) for t in published.all_tools()]


def misspell(rng: random.Random, name: str, tool: str) -> str:
    kind = rng.choice(["typo", "typo", "two-typos", "case", "underscore", "bare"])
    if kind == "case":
        return name.upper()
    if kind == "underscore":
        return name.replace("__", "_", 1)
    if kind == "bare":
        return tool
    for _ in range(2 if kind == "two-typos" else 1):
        i = rng.randrange(len(name) - 1)
        name = rng.choice(
            [
                name[:i] + name[i + 1 :],
                name[:i] + rng.choice("aeiou") + name[i:],
                name[:i] + name[i + 1] + name[i] + name[i + 2 :],
            ]
        )
    return name


def after_change(rounds: int) -> tuple[float, float]:
    """At 500 x 20: the first `why_unknown` after one peer's change, and that peer's `set_peer`."""
    rng = random.Random(2)
    published = Catalogue()
    listings: list[list[mt.Tool]] = []
    for p in range(500):
        names = sorted({"_".join(rng.sample(WORDS, 3)) for _ in range(20)})
        listings.append([mt.Tool(name=t, description=f"{t} tool.", input_schema=SCHEMA) for t in names])
        published.set_peer(f"peer{p}", listings[-1])
    published.why_unknown("serch_orders")
    first: list[float] = []
    relist: list[float] = []
    for r in range(rounds):
        tools = list(listings[250])
        tools[0] = mt.Tool(name=f"renamed_{r}", description="Renamed.", input_schema=SCHEMA)
        collect()
        started = time.perf_counter()
        published.set_peer("peer250", tools)
        relist.append(time.perf_counter() - started)
        started = time.perf_counter()
        published.why_unknown(f"renamd_{r}")
        first.append(time.perf_counter() - started)
    return median(first), median(relist)


async def run(settings: Settings) -> list[Row]:
    rng = random.Random(1)
    started = time.perf_counter()
    published, tools = catalogue(rng)
    print(f"  {len(tools)} tools published in {time.perf_counter() - started:.1f} s")
    names = [name for name, _ in tools]
    called: list[tuple[str, str]] = []
    while len(called) < 400:
        name, tool = rng.choice(tools)
        wrong = misspell(rng, name, tool)
        if published.lookup(wrong) is None:
            called.append((wrong, name))

    collect()
    started = time.perf_counter()
    published.why_unknown(called[0][0])
    build = time.perf_counter() - started

    rounds = 3 if settings.quick else 7
    per_round = 4 if settings.quick else 10
    ours: list[float] = []
    theirs: list[float] = []
    for r in range(rounds):
        sample = called[r * per_round : (r + 1) * per_round]
        collect()
        started = time.perf_counter()
        for wrong, _ in called:
            published.why_unknown(wrong)
        ours.append((time.perf_counter() - started) / len(called))
        started = time.perf_counter()
        for wrong, _ in sample:
            difflib.get_close_matches(wrong, names, n=3)
        theirs.append((time.perf_counter() - started) / len(sample))
    subject, baseline = median(ours), median(theirs)

    found = sum(f"'{meant}'" in published.why_unknown(wrong) for wrong, meant in called)
    checked = called[: 20 if settings.quick else 60]
    found_before = sum(meant in difflib.get_close_matches(wrong, names, n=3) for wrong, meant in checked)
    ok = subject < TARGET
    print(
        f"  unknown name: {fmt_seconds(subject)} per name vs difflib {fmt_seconds(baseline)} "
        f"(target < {fmt_seconds(TARGET)}) {'PASS' if ok else 'FAIL'}; index built in {fmt_seconds(build)}"
    )
    print(
        f"  the meant name suggested: {found}/{len(called)} "
        f"(difflib: {found_before}/{len(checked)} of the first {len(checked)})"
    )
    first, relist = after_change(3 if settings.quick else 7)
    print(
        f"  500 x 20, after one peer's change: first unknown name {fmt_seconds(first)}, "
        f"re-listing {fmt_seconds(relist)}"
    )
    return [
        Row(
            NAME,
            "first unknown name after one peer's change, 500 x 20, vs that peer's re-listing (diagnostic)",
            fmt_seconds(relist),
            fmt_seconds(first),
            f"{first / relist:.1f}x",
            "—",
            None,
        ),
        Row(
            NAME,
            f"unknown name, {len(tools):,} tools: time per name (`why_unknown`, suggestions included)",
            fmt_seconds(baseline),
            fmt_seconds(subject),
            f"1/{baseline / subject:,.0f}",
            f"< {fmt_seconds(TARGET)}",
            ok,
        ),
        Row(
            NAME,
            "building the suggestion index, at the first unknown name (then kept per peer; diagnostic)",
            "—",
            fmt_seconds(build),
            "—",
            "—",
            None,
        ),
        Row(
            NAME,
            "the meant name among the suggestions (diagnostic)",
            f"{found_before / len(checked):.0%}",
            f"{found / len(called):.0%}",
            "—",
            "—",
            None,
        ),
    ]
