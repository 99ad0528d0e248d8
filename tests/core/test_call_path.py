"""The call path to an `mcp.Client` peer: what `client.call_tool` returns or raises is the answer.

A call through the adapter must end as `client.call_tool` ends (output schemas checked alike),
including the cases `mcp.Client.call_tool` exists for (an `InputRequiredResult`, a
`HEADER_MISMATCH`), with every input request answered once.
"""

from __future__ import annotations

from typing import Annotated, Any

import mcp
import mcp_types as mt
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer, Resolve
from mcp.server.mcpserver.resolve import Elicit
from pydantic import BaseModel

from mcpx_router import OpenAIPeerToolAdapter

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}
TOOLS = [
    mt.Tool(name="plain", input_schema={"type": "object"}),
    mt.Tool(name="typed", input_schema={"type": "object"}, output_schema=OUTPUT_SCHEMA),
]

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
results = st.builds(
    mt.CallToolResult,
    content=st.lists(st.builds(mt.TextContent, type=st.just("text"), text=st.text(max_size=20)), max_size=3),
    structured_content=st.none() | st.dictionaries(st.sampled_from(["n", "x"]), _json, max_size=2),
    is_error=st.booleans(),
)


def answering(result: mt.CallToolResult) -> Server[Any]:
    """A server whose two tools (one with an output schema) both answer `result`."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        return result

    return Server("answering", on_list_tools=list_tools, on_call_tool=call_tool)


async def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "result", (await call).model_dump()
    except Exception as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(result=results, mode=st.sampled_from(MODES), tool=st.sampled_from(["plain", "typed"]))
async def test_the_adapter_answers_what_client_call_tool_returns_or_raises(
    result: mt.CallToolResult, mode: str, tool: str
) -> None:
    async with mcp.Client(answering(result), mode=mode) as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", client)
        ours = await adapter.call(f"p__{tool}", {})
        theirs = await outcome(client.call_tool(tool, {}, 5.0))
    event(f"{tool}: {theirs[0]}")
    if theirs[0] == "result":
        assert ours.result is not None and ours.result.model_dump() == theirs[1]
        assert ours.is_error == bool(result.is_error)
    else:  # e.g. a structured result that breaks the tool's output schema
        assert ours.is_error and theirs[1] in ours.text
    if tool == "typed" and not result.is_error and theirs[0] == "result":
        assert isinstance(result.structured_content, dict) and isinstance(result.structured_content["n"], int)


class Person(BaseModel):
    name: str


def ask_name() -> Elicit:
    return Elicit("Who are you?", Person)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_that_asks_for_input_is_answered_once_by_the_clients_callback(mode: str) -> None:
    """At 2026-07-28 the server answers the call with an `InputRequiredResult`; before, it asks
    with an `elicitation/create` request. Either way the client's callback answers once."""
    server = MCPServer("asking")
    greeted: list[str] = []

    @server.tool()
    def greet(person: Annotated[Person, Resolve(ask_name)]) -> str:
        greeted.append(person.name)
        return f"Hello {person.name}"

    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"name": "Ada"})

    async with (
        mcp.Client(server, mode=mode, elicitation_callback=elicit) as client,
        OpenAIPeerToolAdapter() as adapter,
    ):
        await adapter.add_peer("p", client)
        (answer,) = await adapter.dispatch(
            [{"id": "c", "type": "function", "function": {"name": "p__greet"}}]
        )
    assert answer == {"role": "tool", "tool_call_id": "c", "content": "Hello Ada"}
    assert asked == ["Who are you?"]
    assert greeted == ["Ada"]


async def test_a_call_rejected_with_header_mismatch_is_resent_through_the_client() -> None:
    """The server ran nothing; the client's own recovery (re-list, resend once) takes over."""
    calls: list[str] = []

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=TOOLS[:1])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        calls.append(params.name)
        if len(calls) == 1:
            raise mcp.MCPError(mt.HEADER_MISMATCH, "the tool's headers do not match its listing")
        return mt.CallToolResult(content=[mt.TextContent(type="text", text="ran")])

    server = Server("mismatch", on_list_tools=list_tools, on_call_tool=call_tool)
    async with mcp.Client(server, mode="2026-07-28") as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", client)
        outcome = await adapter.call("p__plain", {})
    assert (outcome.text, outcome.is_error) == ("ran", False)
    assert calls == ["plain", "plain"]


async def test_a_call_answered_with_only_a_request_state_is_resumed_with_it() -> None:
    """A server still working answers with a `request_state` to send back; the call resumes with
    it, and its result is the answer."""
    states: list[str | None] = []

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=TOOLS[:1])

    async def call_tool(
        ctx: Any, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        states.append(params.request_state)
        if params.request_state is None:
            return mt.InputRequiredResult(request_state="step-2")
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=f"done at {params.request_state}")]
        )

    server = Server("polling", on_list_tools=list_tools, on_call_tool=call_tool)
    async with mcp.Client(server, mode="2026-07-28") as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("p", client)
        outcome = await adapter.call("p__plain", {})
    assert (outcome.text, outcome.is_error) == ("done at step-2", False)
    assert states == [None, "step-2"]


# A round the server answers with: input requests (elicitation messages), or only a request state.
rounds = st.lists(
    st.lists(st.sampled_from(["name?", "age?", "city?"]), unique=True, max_size=2),
    max_size=3,
).filter(lambda r: sum(not asks for asks in r) <= 1)  # a state-only round waits 50 ms or more


def asking_in_rounds(plan: list[list[str]], seen: list[Any]) -> Server[Any]:
    """A server that answers each `tools/call` with the next round of `plan` (its input requests,
    or only a `request_state` when a round asks nothing), then with a result; `seen` gets what
    each request carried."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=TOOLS[:1])

    async def call_tool(
        ctx: Any, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        answers = {k: v.model_dump() for k, v in (params.input_responses or {}).items()}
        seen.append((params.request_state, answers))
        step = int(params.request_state or "0")
        if step == len(plan):
            return mt.CallToolResult(content=[mt.TextContent(type="text", text=f"done after {step}")])
        asks = {
            f"{step}-{message}": mt.ElicitRequest(
                params=mt.ElicitRequestFormParams(
                    message=message, requested_schema={"type": "object", "properties": {}}
                )
            )
            for message in plan[step]
        }
        return mt.InputRequiredResult(input_requests=asks or None, request_state=str(step + 1))

    return Server("rounds", on_list_tools=list_tools, on_call_tool=call_tool)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=rounds, refuse=st.sampled_from([None, "age?"]))
async def test_every_round_of_input_reaches_the_server_as_through_client_call_tool(
    plan: list[list[str]], refuse: str | None
) -> None:
    """The first round goes out on the session, the rest through the client: the server sees the
    same requests, and the client's callback answers the same questions once each, as when the
    call is made with `client.call_tool` (a refused question ends the call alike)."""

    async def run(through_adapter: bool) -> tuple[list[Any], list[str], tuple[str, Any]]:
        seen: list[Any] = []
        asked: list[str] = []

        async def elicit(
            context: ClientRequestContext, params: mt.ElicitRequestParams
        ) -> mt.ElicitResult | mt.ErrorData:
            asked.append(params.message)
            if params.message == refuse:
                return mt.ErrorData(code=mt.INVALID_REQUEST, message="not telling")
            return mt.ElicitResult(action="accept", content={"said": params.message})

        server = asking_in_rounds(plan, seen)
        async with mcp.Client(server, mode="2026-07-28", elicitation_callback=elicit) as client:
            if not through_adapter:
                return seen, asked, await outcome(client.call_tool("plain", {}))
            async with OpenAIPeerToolAdapter() as adapter:
                await adapter.add_peer("p", client)
                ours = await adapter.call("p__plain", {})
            return seen, asked, ("result" if not ours.is_error else "error", ours.text)

    seen, asked, (kind, text) = await run(True)
    their_seen, their_asked, theirs = await run(False)
    assert seen == their_seen
    assert sorted(asked) == sorted(their_asked)
    if theirs[0] == "result":
        assert (kind, text) == ("result", f"done after {len(plan)}")
    else:
        assert kind == "error" and "not telling" in text and "not telling" in theirs[1]


def upstream_timeout() -> MCPServer:
    server = MCPServer("upstream")

    @server.tool()
    def search(query: str) -> str:
        """Answers at once with the JSON-RPC timeout code, as a proxy whose upstream timed out does."""
        raise mcp.MCPError(code=mt.REQUEST_TIMEOUT, message=f"upstream timed out on {query}")

    return server


@pytest.mark.parametrize("limit", [None, 30.0])
async def test_a_peers_own_timeout_code_is_its_answer_not_our_deadline(limit: float | None) -> None:
    """A peer may answer -32001 itself at once: the model reads that answer, not "did not answer"."""
    async with mcp.Client(upstream_timeout()) as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("up", client, call_timeout=limit)
        outcome = await adapter.call("up__search", {"query": "q"})
    assert outcome.is_error and outcome.error_type == "peer_error"
    assert "did not answer" not in outcome.text
    assert outcome.text.startswith("Error: peer 'up' failed to run 'search':")
    assert "upstream timed out on q" in outcome.text


def test_an_answered_calls_outcome_is_the_dataclass_made_directly() -> None:
    """`success` fills `Outcome`'s slots itself: it must set every field, and nothing else."""
    from dataclasses import fields

    from mcpx_router._dispatch import _FIELDS, Outcome, success

    assert tuple(f.name for f in fields(Outcome)) == _FIELDS
    result = mt.CallToolResult(content=[])
    made = success("text", None, result, "grp")
    assert made == Outcome("text", False, None, result, None, "grp")
    assert {name: getattr(made, name) for name in _FIELDS} == {
        "text": "text",
        "is_error": False,
        "tool": None,
        "result": result,
        "error_type": None,
        "group": "grp",
    }


def test_a_parsed_call_is_the_dataclass_made_directly() -> None:
    """`tool_call` fills `ToolCall`'s slots itself: it must set every field, and nothing else."""
    from dataclasses import fields

    from mcpx_router.model.calls._calls import _CALL_FIELDS, ToolCall, tool_call

    assert tuple(f.name for f in fields(ToolCall)) == _CALL_FIELDS
    made = tool_call("chat", "call_1", "a__b", '{"x": 1}')
    assert made == ToolCall("chat", "call_1", "a__b", '{"x": 1}')
    assert made.problem is None
    assert hash(made) == hash(ToolCall("chat", "call_1", "a__b", '{"x": 1}'))
