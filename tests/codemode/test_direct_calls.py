"""Direct calls in code mode, as a class: whatever tool name and arguments the model sends in
place of `run_python`, one answer per call in order, and a tool reached only by a call that its
answer lists as made. Real in-process MCP peers; no sandbox worker is needed for a direct call."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import OpenAIPeerToolAdapter
from mcpx_router.codemode import CodeMode

from .test_codemode import tracker_peer

NAMES = ["tracker__create-issue", "tracker.create_issue", "tracker__close", "tracker.close", "tracker.gone"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KEYS = st.sampled_from(["title", "body", "id", "due-date", "class", ""]) | st.text(max_size=6)
ARGUMENTS = st.dictionaries(KEYS, JSON, max_size=4).map(json.dumps) | st.sampled_from(
    ["", "{", "null", "[1]", '"{\\"title\\": \\"x\\"}"', '{"title": NaN}']
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), ARGUMENTS), min_size=1, max_size=4), st.booleans())
def test_every_direct_call_gets_one_answer_and_reaches_the_peer_only_as_listed(
    calls: list[tuple[str, str]], direct_calls: bool
) -> None:
    tracker = tracker_peer()

    async def main() -> list[Any]:
        async with AsyncExitStack() as stack:
            adapter = await stack.enter_async_context(OpenAIPeerToolAdapter())
            await adapter.add_peer("tracker", await stack.enter_async_context(mcp.Client(tracker.server())))
            code = CodeMode(adapter, direct_calls=direct_calls)
            with anyio.fail_after(30):
                return await code.dispatch(
                    [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                        for i, (name, arguments) in enumerate(calls)
                    ]
                )

    answers = anyio.run(main)
    assert [a["tool_call_id"] for a in answers] == [f"c{i}" for i in range(len(calls))]
    ran = [a["content"] for a in answers if "so it ran as the program" in a["content"]]
    if not direct_calls:
        assert ran == [] and tracker.calls == []
    # A call listed as made and answered "ok" or by the peer's own failure reached the peer, once;
    # every other (refused by the router's check, not an object, no such tool) did not.
    made = sum(t.count("-> ok") + t.count("-> error: tracker.close reported a failure:") for t in ran)
    assert len(tracker.calls) == made
    for (name, _), answer in zip(calls, answers, strict=True):
        text = answer["content"]
        assert isinstance(text, str) and text
        if name == "tracker.gone":
            assert text.startswith("Error: 'tracker.gone' is not a function you can call")
        assert text.count("Calls made (") <= 1
