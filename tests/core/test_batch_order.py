"""A batch of calls: one answer per call, in call order, each call run exactly once.

Batches mix calls that run, calls refused before they are sent and items passed over, with
and without a slot limit on the peer (the first call of a batch runs in the dispatching task).
With one slot the calls reach the peer in call order, on trio too (whose scheduler starts a
batch of tasks in either order on purpose).
"""

from __future__ import annotations

import json
from typing import Any

import mcp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer

from mcpx_router import OpenAIPeerToolAdapter

pytestmark = pytest.mark.anyio

# What each item of a batch is: a call that runs, one to an unknown tool, one whose arguments
# do not match the schema, or a Responses item that is passed over without an answer.
KINDS = st.lists(st.sampled_from(["run", "unknown", "bad", "passed_over"]), max_size=12)


def recording_server(seen: list[int]) -> MCPServer:
    server = MCPServer("order")

    @server.tool()
    async def mark(n: int) -> str:
        """Record `n`."""
        seen.append(n)
        return f"ran {n}"

    return server


def item(kind: str, index: int) -> dict[str, Any]:
    if kind == "passed_over":
        return {"type": "reasoning", "id": f"rs_{index}", "summary": []}
    name = "order__nothing" if kind == "unknown" else "order__mark"
    arguments = {"n": "not a number"} if kind == "bad" else {"n": index}
    return {
        "type": "function_call",
        "call_id": f"call_{index}",
        "name": name,
        "arguments": json.dumps(arguments),
    }


@pytest.mark.parametrize("limit", [1, None])
@settings(max_examples=40, deadline=None)
@given(kinds=KINDS)
async def test_a_batch_is_answered_in_call_order_and_each_call_runs_once(
    kinds: list[str], limit: int | None
) -> None:
    seen: list[int] = []
    async with (
        mcp.Client(recording_server(seen)) as client,
        OpenAIPeerToolAdapter() as adapter,
    ):
        await adapter.add_peer("order", client, max_concurrency=limit)
        answers = await adapter.dispatch([item(kind, i) for i, kind in enumerate(kinds)])

    answered = [i for i, kind in enumerate(kinds) if kind != "passed_over"]
    assert [a["call_id"] for a in answers] == [f"call_{i}" for i in answered]
    for index, answer in zip(answered, answers, strict=True):
        output = answer["output"]
        if kinds[index] == "run":
            assert output == f"ran {index}"
        else:
            assert output.startswith("Error:"), output
    ran = [i for i, kind in enumerate(kinds) if kind == "run"]
    if limit == 1:  # one slot: the calls reach the peer one at a time, in call order
        assert seen == ran
    else:
        assert sorted(seen) == ran
