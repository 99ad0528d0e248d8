"""A stdio peer that answers badly on purpose costs only the call or the entry it spoils.

Each case runs against a real subprocess (`support/hostile_stdio_server.py`), beside a second,
ordinary peer, which must keep working throughout. Calls are given a time limit far beyond the
test's own timeout, so an answer that were lost would fail the test instead of being answered
"did not answer within N s".
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import Router, StdioPeer
from mcpx_router.peers import _member
from mcpx_router.peers.wire import _lines, _stdio

SERVER = Path(__file__).parents[2] / "support" / "hostile_stdio_server.py"
NEVER = 3600.0
"""Seconds a call or a join may take: a lost answer would run into the test's timeout instead."""
UNUSABLE = "Error: peer 'h' answered with something that is not a tool result: "

pytestmark = pytest.mark.anyio


def hostile(*args: str) -> StdioPeer:
    return StdioPeer(sys.executable, [str(SERVER), *args])


@asynccontextmanager
async def routed(*args: str) -> AsyncIterator[Router]:
    """A Router with the hostile peer `h` and an ordinary one, `plain`."""
    async with Router(connect_timeout=NEVER, call_timeout=NEVER) as router:
        await router.join("h", hostile(*args))
        await router.join("plain", hostile())
        yield router


async def still_fine(router: Router) -> None:
    """Both peers still answer, and neither was lost."""
    for peer in ("h", "plain"):
        outcome = await router.call(f"{peer}__echo", {"text": "still here"})
        assert (outcome.is_error, outcome.text) == (False, "still here")
        assert router.status(peer).healthy


async def test_an_error_with_the_connection_closed_code_is_the_peers_own_failure() -> None:
    async with routed() as router:
        outcome = await router.call("h__failing", {})
        assert outcome.text == "Error: peer 'h' failed to run 'failing': MCPError: database down"
        assert outcome.error_type == "peer_error"  # not peer_unavailable
        await still_fine(router)


async def test_a_peers_error_text_is_capped_like_a_result() -> None:
    async with routed() as router:
        outcome = await router.call("h__long_error", {})
        assert outcome.is_error
        assert len(outcome.text) < 100_200
        assert "output truncated: " in outcome.text
        assert outcome.text.endswith("the end")


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("five", "its result is 5, not an object"),
        ("null", "its result is null, not an object"),
        ("not_json", "it is not valid JSON (Unterminated string starting at: line 1 column "),
        ("deep_result", "it is nested deeper than 200 levels"),
        ("deeper_result", "it is nested deeper than 200 levels"),
    ],
)
async def test_an_answer_that_is_no_result_is_answered_at_once(tool: str, why: str) -> None:
    async with routed() as router:
        outcome = await router.call(f"h__{tool}", {})
        assert outcome.text.startswith(UNUSABLE + why), outcome.text
        assert outcome.error_type == "tool_error"
        await still_fine(router)


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("content_string", "content: Input should be a valid list"),
        ("unknown_block", 'content/0: not one of the shapes allowed there ({"type": "hologram"})'),
        ("empty", "content: Field required"),
    ],
)
async def test_a_result_of_the_wrong_shape_is_told_in_a_few_words(tool: str, why: str) -> None:
    async with routed() as router:
        outcome = await router.call(f"h__{tool}", {})
        assert (outcome.text, outcome.error_type) == (UNUSABLE + why, "tool_error")
        assert "pydantic" not in outcome.text
        await still_fine(router)


async def test_a_malformed_entry_of_a_listing_is_held_back_alone() -> None:
    async with routed("--bad-listing") as router:
        names = {tool.name for tool in router.tools}
        assert {"h__ok", "h__echo", "h__nested_95"} <= names
        rejected = router.rejected_tools("h")
        unreadable = "peer 'h' listed a tool that cannot be read: "
        not_a_schema = "inputSchema: Input should be a valid dictionary or instance of InputSchema"
        assert rejected == {
            "schema_string": unreadable + not_a_schema,
            "schema_null": unreadable + not_a_schema,
            "(entry 17, no name)": unreadable + "name: Field required",
            "(entry 18, the name 42)": unreadable + "name: Input should be a valid string",
            "nested_120": unreadable + "it is nested deeper than 200 levels",
            "nested_5000": unreadable + "it is nested deeper than 200 levels",
        }
        assert [prompt.prompt.name for prompt in router.prompts("h")] == ["greet"]
        assert [resource.resource.name for resource in router.resources("h")] == ["a"]
        await still_fine(router)


async def test_large_results_are_read_and_cut_to_their_end() -> None:
    async with routed("--blocks", "5000", "--mb", "3") as router:
        blocks = await router.call("h__blocks", {})
        assert blocks.text.startswith("[4,000 earlier content blocks left out]\nblock 4000\n")
        assert blocks.text.endswith("\nblock 4999")
        huge = await router.call("h__huge", {})
        assert huge.text.startswith("xxx") and huge.text.endswith("xxxend")
        # The middle of the 3 MB text was left out as it was read (its first and last MiB kept),
        # then the text cut to max_output_chars as any result is.
        assert "characters omitted" in huge.text and len(huge.text) < 100_200
        await still_fine(router)


async def test_stray_lines_are_warned_of_once_per_kind_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "mcpx_router")
    async with routed("--garbage", "10") as router:
        await still_fine(router)
        stray = router.status("h").stray_lines
        assert stray == {"a line that is not JSON": 5, "JSON that is not JSON-RPC": 5}
        assert router.status("plain").stray_lines == {}
    records = [r for r in caplog.records if r.name.startswith("mcpx_router")]
    assert [(r.levelno, r.exc_info) for r in records] == [(logging.WARNING, None)] * 2
    assert {r.getMessage().split(" on stdout")[0] for r in records} == {
        "peer 'h' wrote a line that is not JSON",
        "peer 'h' wrote JSON that is not JSON-RPC",
    }


@pytest.mark.parametrize("share", [1.0, 0.001])
async def test_a_peer_that_says_its_tools_changed_all_the_time_is_relisted_within_its_share(
    share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The peer announces a change every 10 ms. Re-listing it may take `REFRESH_SHARE` of the
    process's time: at 1.0 it is re-listed back to back, at 0.001 once, then not for a while."""
    monkeypatch.setattr(_member, "REFRESH_SHARE", share)
    async with routed("--churn", "0.01") as router:
        await anyio.sleep(1.5)
        listings = int((await router.call("h__listings", {})).text)
        if share == 1.0:
            assert listings >= 6
        else:
            assert 2 <= listings <= 3  # the join's listing, the first re-listing, perhaps one more
        await still_fine(router)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, ascii_only=st.booleans())
def test_a_large_line_reads_as_json_reads_it(value: object, ascii_only: bool) -> None:
    """With its slices made tiny, the step-by-step reading of a large line cuts strings, escapes
    and UTF-8 sequences everywhere, and still reads what `json` reads."""
    line = json.dumps(value, ensure_ascii=ascii_only).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_lines, "LONG_STRING", 3)
        patch.setattr(_lines, "_SLICE", 2)
        assert _lines.parse_large(line) == (json.loads(line), False, 0)
    assert _lines.parse(line) == (json.loads(line), False)


@pytest.mark.parametrize("parse", [_lines.parse, _lines.parse_large])
def test_nesting_is_cut_below_the_depth_the_sdk_reads(parse: object) -> None:
    for levels, cut in ((199, False), (250, True), (5000, True)):
        value, was_cut, *_ = parse(b"[" * levels + b"]" * levels)  # type: ignore[operator]
        assert was_cut is cut
        depth = 0
        while isinstance(value, list) and value:
            value, depth = value[0], depth + 1
        assert (value is _lines.TOO_DEEP) is cut
        assert depth == (_lines.MAX_DEPTH if cut else levels - 1)


@settings(max_examples=300, deadline=None)
@given(
    ends=st.tuples(st.text(max_size=30), st.text(max_size=30)),
    middle=st.integers(60, 200),
    ascii_only=st.booleans(),
    chunk=st.integers(1, 9),
)
def test_a_long_lines_middle_inside_one_string_is_left_out_cleanly(
    ends: tuple[str, str], middle: int, ascii_only: bool, chunk: int
) -> None:
    """Whatever characters and escapes surround the cut, the line that is left reads as JSON, and
    its string is the original's start and end around the note."""
    text = ends[0] + "m" * middle + ends[1]
    line = json.dumps({"t": text, "n": 1}, ensure_ascii=ascii_only).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_stdio, "HEAD", 20)
        patch.setattr(_stdio, "TAIL", 20)
        reading = _stdio._Line()
        for start in range(0, len(line), chunk):
            reading.add(line[start : start + chunk])
        value = json.loads(reading.whole())
    assert value["n"] == 1
    if "were left out as it was read" not in value["t"]:
        assert value["t"] == text  # nothing could be left out (a quote or backslash in the middle)
        return
    before, _, rest = value["t"].partition(" [… ")
    after = rest.split(" …] ", 1)[1]
    assert text.startswith(before) and text.endswith(after)
