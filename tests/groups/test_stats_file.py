"""Reputation statistics saved to a JSON file and loaded back (`stats_file=`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import ConfigError, OpenAIPeerToolAdapter, ToolKey, UsageError
from mcpx_router.groups._reputation import ERROR_KINDS, Reputation
from mcpx_router.groups._stats_file import load_stats, save_stats

from ..support._model_peers import connected
from .test_groups import search_peer

KINDS = st.sampled_from([None, *ERROR_KINDS, "peer_error"])
CALLS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["s", "t"]), st.floats(0, 5), KINDS), max_size=30
)


@settings(max_examples=40, deadline=None)
@given(CALLS, st.integers(1, 8), st.lists(st.tuples(st.booleans(), st.floats(0.1, 3)), max_size=3))
def test_what_is_saved_loads_back_the_same(
    calls: list[tuple[str, str, float, Any]], window: int, judged: list[tuple[bool, float]]
) -> None:
    import tempfile

    reputation = Reputation(window)
    for n, (peer, tool, seconds, kind) in enumerate(calls):
        for record in reputation._records(ToolKey(peer, tool)):
            record.add(seconds, kind, f"failure {n}")
        reputation._remember(f"c{n}", ToolKey(peer, tool))
    for ok, weight in judged:
        if calls:
            reputation.feedback("c0", ok, weight)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stats.json"
        save_stats(path, reputation)
        loaded = Reputation(window)
        assert load_stats(path, loaded)
    assert loaded.report() == reputation.report()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "it is not valid JSON"),
        ('{"version": 2, "peers": {}, "tools": []}', 'expected {"version": 1'),
        ('{"version": 1, "peers": [], "tools": []}', '"peers" must be an object'),
        ('{"version": 1, "peers": {"a": {"calls": 1, "errors": {"odd": 1}}}, "tools": []}', "errors must be"),
        (
            '{"version": 1, "peers": {"a": {"calls": 0, "errors": {"timeout": 1}}}, "tools": []}',
            "more errors",
        ),
        ('{"version": 1, "peers": {}, "tools": [{"peer": "a"}]}', '"peer" and "tool" strings'),
        ('{"version": 1, "peers": {"a": {"latencies": [-1]}}, "tools": []}', "a latency must be"),
    ],
)
def test_a_file_that_is_not_statistics_is_refused_and_kept(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "stats.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        OpenAIPeerToolAdapter(stats_file=path)
    assert f"the statistics file {str(path)!r} is unusable" in str(info.value)
    assert problem in str(info.value) and "delete it" in str(info.value)
    assert path.read_text() == text


def test_a_stats_file_must_be_a_path() -> None:
    with pytest.raises(UsageError, match="stats_file must be a path, not 3"):
        OpenAIPeerToolAdapter(stats_file=3)  # type: ignore[typeddict-item]


@pytest.mark.anyio
async def test_an_adapter_saves_its_statistics_on_close_and_the_next_one_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    peer = search_peer("web")
    for round_ in (1, 2):
        async with connected(web=peer) as clients, OpenAIPeerToolAdapter(stats_file=path) as adapter:
            await adapter.add_peer("web", clients["web"])
            loaded = adapter.stats().peers
            assert (loaded["web"].calls if round_ == 2 else "web" not in loaded) in (2, True)
            await adapter.call("web__search", {"query": "q"})
            await adapter.call("web__search", {})
        saved = json.loads(path.read_text())
        assert saved["peers"]["web"]["calls"] == 2 * round_
        assert saved["peers"]["web"]["errors"] == {"invalid_arguments": round_}
    assert [entry["tool"] for entry in saved["tools"]] == ["search"]
