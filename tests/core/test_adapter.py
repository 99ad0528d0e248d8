"""OpenAIPeerToolAdapter against real in-process MCP servers, through real `mcp.Client` sessions."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp
import mcp_types as mt
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from openai.types.chat import ChatCompletionMessageCustomToolCall, ChatCompletionMessageFunctionToolCall
from openai.types.chat.chat_completion_message import FunctionCall
from openai.types.chat.chat_completion_message_custom_tool_call import Custom
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import ResponseFunctionToolCall

import mcpx_router
from mcpx_router import (
    AdapterClosedError,
    DuplicatePeerError,
    InvalidPeerIdError,
    OpenAIPeerToolAdapter,
    PeerUnavailableError,
    RouterError,
    ToolCallFormatError,
    UnknownPeerError,
)

pytestmark = pytest.mark.anyio

SAFETY = 5.0
"""Seconds after which a test that should finish at once fails instead of hanging."""


# -- servers -------------------------------------------------------------------------------


def echo_server(label: str) -> MCPServer:
    """An MCPServer whose tools say which server answered."""
    server = MCPServer(label)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"{label}:{text}"

    @server.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    return server


Handler = Callable[[dict[str, Any]], Awaitable[mt.CallToolResult]]


@dataclass
class LowServer:
    """A lowlevel server with exact control over listing and calls; records what it was asked."""

    name: str = "low"
    tools: list[mt.Tool] = field(default_factory=list)
    handlers: dict[str, Handler] = field(default_factory=dict)
    pages: list[list[str]] | None = None
    """Tool names per page of tools/list; None: one page with every tool."""
    list_requests: list[str | None] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tool(self, name: str, handler: Handler, description: str = "") -> None:
        text = description or f"The {name} tool."
        self.tools.append(mt.Tool(name=name, description=text, input_schema=OBJ))
        self.handlers[name] = handler

    def server(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
            cursor = params.cursor if params is not None else None
            self.list_requests.append(cursor)
            if self.pages is None:
                return mt.ListToolsResult(tools=list(self.tools))
            index = 0 if cursor is None else int(cursor.removeprefix("page-"))
            by_name = {t.name: t for t in self.tools}
            following = f"page-{index + 1}" if index + 1 < len(self.pages) else None
            return mt.ListToolsResult(tools=[by_name[n] for n in self.pages[index]], next_cursor=following)

        async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            arguments = dict(params.arguments or {})
            self.calls.append((params.name, arguments))
            return await self.handlers[params.name](arguments)

        return Server(self.name, on_list_tools=list_tools, on_call_tool=call_tool)


OBJ: dict[str, Any] = {"type": "object", "properties": {}}


def text_result(value: str, *, is_error: bool = False) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=value)], is_error=is_error)


def misc_server() -> LowServer:
    """ok, args (echoes its arguments), err (isError), raises, hang."""
    low = LowServer(name="misc")

    async def ok(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result("ok")

    async def args(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(json.dumps(arguments, sort_keys=True))

    async def err(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result("the disk is full", is_error=True)

    async def raises(arguments: dict[str, Any]) -> mt.CallToolResult:
        raise RuntimeError("kaboom")

    async def hang(arguments: dict[str, Any]) -> mt.CallToolResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    for name, handler in [("ok", ok), ("args", args), ("err", err), ("raises", raises), ("hang", hang)]:
        low.tool(name, handler)
    return low


@asynccontextmanager
async def connected(**servers: Any) -> AsyncIterator[dict[str, mcp.Client]]:
    """Connect an `mcp.Client` to each server, keyed like the arguments."""
    async with AsyncExitStack() as stack:
        clients = {}
        for key, server in servers.items():
            target = server.server() if isinstance(server, LowServer) else server
            clients[key] = await stack.enter_async_context(mcp.Client(target))
        yield clients


def chat(call_id: str, name: str, arguments: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def responses(call_id: str, name: str, arguments: Any = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def is_error_answer(answer: dict[str, Any]) -> bool:
    content = answer.get("content", answer.get("output"))
    return isinstance(content, str) and content.startswith("Error:")


# -- publishing ----------------------------------------------------------------------------


async def test_add_peer_lists_every_page() -> None:
    low = misc_server()
    low.pages = [["ok", "args"], ["err"], ["raises", "hang"]]
    async with connected(misc=low) as c, OpenAIPeerToolAdapter() as adapter:
        names = await adapter.add_peer("misc", c["misc"])
        assert names == ("misc__ok", "misc__args", "misc__err", "misc__raises", "misc__hang")
        assert low.list_requests == [None, "page-1", "page-2"]
        published = [t["function"]["name"] for t in adapter.get_openai_tools()]
        assert published == list(names)
        # A tool from the last page can be called.
        (answer,) = await adapter.dispatch([chat("c1", "misc__raises")])
        assert is_error_answer(answer)
        assert low.calls == [("raises", {})]


async def test_a_pagination_loop_makes_the_peer_unavailable() -> None:
    low = misc_server()

    async def looping(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[low.tools[0]], next_cursor="again")

    looping_server = Server("loop", on_list_tools=looping)
    async with mcp.Client(looping_server) as client, OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(PeerUnavailableError) as info:
            await adapter.add_peer("loop", client)
        assert info.value.peer == "loop"
        assert adapter.peers == ()
        assert adapter.get_openai_tools() == ()


async def test_same_tool_name_on_two_peers() -> None:
    async with (
        connected(a=echo_server("alpha"), b=echo_server("beta")) as c,
        OpenAIPeerToolAdapter() as adapter,
    ):
        assert await adapter.add_peer("alpha", c["a"]) == ("alpha__echo", "alpha__add")
        assert await adapter.add_peer("beta", c["b"]) == ("beta__echo", "beta__add")
        names = [t["function"]["name"] for t in adapter.get_openai_tools()]
        assert names == ["alpha__echo", "alpha__add", "beta__echo", "beta__add"]
        descriptions = [t["function"]["description"] for t in adapter.get_openai_tools()]
        assert descriptions[0].endswith("(via alpha)") and descriptions[2].endswith("(via beta)")
        answers = await adapter.dispatch(
            [chat("1", "beta__echo", '{"text": "hi"}'), chat("2", "alpha__echo", '{"text": "hi"}')]
        )
        assert [a["content"] for a in answers] == ["beta:hi", "alpha:hi"]
        assert adapter.resolve("alpha__echo") == ("alpha", "echo")
        assert adapter.public_name("beta", "add") == "beta__add"


async def test_ambiguous_peer_and_tool_names_stay_apart() -> None:
    first = LowServer(name="first")
    second = LowServer(name="second")

    async def say_first(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result("first")

    async def say_second(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result("second")

    first.tool("c", say_first)
    second.tool("b__c", say_second)
    async with connected(f=first, s=second) as c, OpenAIPeerToolAdapter() as adapter:
        (name_first,) = await adapter.add_peer("a__b", c["f"])
        (name_second,) = await adapter.add_peer("a", c["s"])
        assert name_first == "a__b__c"
        assert name_second != name_first
        answers = await adapter.dispatch([chat("1", name_second), chat("2", name_first)])
        assert [a["content"] for a in answers] == ["second", "first"]


# -- the version and the cached lists ------------------------------------------------------


async def test_version_changes_only_when_the_catalogue_does() -> None:
    empty = LowServer(name="empty")
    dynamic = misc_server()
    async with connected(e=empty, d=dynamic, x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        start = adapter.version
        tools = adapter.get_openai_tools()
        assert tools == ()

        await adapter.add_peer("x", c["x"])
        v1 = adapter.version
        assert v1 != start
        tools = adapter.get_openai_tools()
        assert adapter.get_openai_tools() is tools

        # A peer with no tools changes nothing.
        assert await adapter.add_peer("empty", c["e"]) == ()
        assert adapter.version == v1
        assert adapter.get_openai_tools() is tools

        # Refreshing with no change changes nothing.
        assert await adapter.refresh_peer("x") is False
        assert await adapter.refresh_peer("empty") is False
        assert adapter.version == v1
        assert adapter.get_openai_tools() is tools

        # A new peer with tools does.
        await adapter.add_peer("d", c["d"])
        v2 = adapter.version
        assert v2 != v1
        tools2 = adapter.get_openai_tools()
        assert tools2 is not tools
        assert len(tools2) == len(tools) + 5
        assert adapter.get_openai_tools() is tools2
        responses_tools = adapter.get_responses_tools()
        assert adapter.get_responses_tools() is responses_tools
        functions = adapter.get_openai_functions()
        assert adapter.get_openai_functions() is functions

        # The peer changes one description and drops a tool: a refresh publishes exactly that.
        dynamic.tools[0] = mt.Tool(name="ok", description="Now described differently.", input_schema=OBJ)
        del dynamic.tools[-1]  # "hang"
        assert await adapter.refresh_peer("d") is True
        v3 = adapter.version
        assert v3 != v2
        names = [t["function"]["name"] for t in adapter.get_openai_tools()]
        assert "d__hang" not in names
        assert names[-4:] == ["d__ok", "d__args", "d__err", "d__raises"]
        ok = next(t for t in adapter.get_openai_tools() if t["function"]["name"] == "d__ok")
        assert ok["function"]["description"] == "Now described differently. (via d)"
        assert await adapter.refresh_peer("d") is False
        assert adapter.version == v3

        # Removing a peer with no tools changes nothing; removing one with tools does.
        await adapter.remove_peer("empty")
        assert adapter.version == v3
        await adapter.remove_peer("x")
        assert adapter.version != v3
        assert [t["function"]["name"] for t in adapter.get_openai_tools()] == names[2:]


async def test_remove_peer_withdraws_its_tools() -> None:
    async with (
        connected(a=echo_server("alpha"), b=echo_server("beta")) as c,
        OpenAIPeerToolAdapter() as adapter,
    ):
        await adapter.add_peer("alpha", c["a"])
        await adapter.add_peer("beta", c["b"])
        await adapter.remove_peer("alpha")
        assert adapter.peers == ("beta",)
        assert [t["function"]["name"] for t in adapter.get_openai_tools()] == ["beta__echo", "beta__add"]
        assert [t["name"] for t in adapter.get_responses_tools()] == ["beta__echo", "beta__add"]
        assert [t["name"] for t in adapter.get_openai_functions()] == ["beta__echo", "beta__add"]
        gone, kept = await adapter.dispatch(
            [chat("1", "alpha__echo", '{"text": "x"}'), chat("2", "beta__echo", '{"text": "x"}')]
        )
        assert is_error_answer(gone) and "alpha__echo" in gone["content"]
        assert kept["content"] == "beta:x"
        # The peer may come back under the same id, with the same names.
        assert await adapter.add_peer("alpha", c["a"]) == ("alpha__echo", "alpha__add")


# -- dispatch: shapes ----------------------------------------------------------------------


async def test_chat_sdk_objects() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        calls = [
            ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function", function=Function(name="x__echo", arguments='{"text": "one"}')
            ),
            ChatCompletionMessageFunctionToolCall(
                id="call_2", type="function", function=Function(name="x__add", arguments='{"a": 40}')
            ),
        ]
        assert await adapter.dispatch(calls) == [
            {"role": "tool", "tool_call_id": "call_1", "content": "x:one"},
            {"role": "tool", "tool_call_id": "call_2", "content": "42"},
        ]


async def test_responses_sdk_objects() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        calls = [
            ResponseFunctionToolCall(
                type="function_call", call_id="fc_1", id="item_1", name="x__echo", arguments='{"text": "r"}'
            ),
            ResponseFunctionToolCall(
                type="function_call", call_id="fc_2", name="x__add", arguments='{"a": 1, "b": 1}'
            ),
        ]
        assert await adapter.dispatch(calls) == [
            {"type": "function_call_output", "call_id": "fc_1", "output": "x:r"},
            {"type": "function_call_output", "call_id": "fc_2", "output": "2"},
        ]


async def test_dicts_of_either_shape() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        assert await adapter.dispatch([chat("c", "x__echo", '{"text": "d"}')]) == [
            {"role": "tool", "tool_call_id": "c", "content": "x:d"}
        ]
        assert await adapter.dispatch([responses("r", "x__echo", '{"text": "d"}')]) == [
            {"type": "function_call_output", "call_id": "r", "output": "x:d"}
        ]
        # Arguments given as a dict rather than a JSON string are accepted too.
        assert await adapter.dispatch([chat("c2", "x__add", {"a": 5})]) == [
            {"role": "tool", "tool_call_id": "c2", "content": "7"}
        ]


async def test_legacy_function_calls() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        answers = await adapter.dispatch(
            [
                FunctionCall(name="x__echo", arguments='{"text": "legacy"}'),
                {"name": "x__add", "arguments": '{"a": 1}'},
            ]
        )
        assert answers == [
            {"role": "function", "name": "x__echo", "content": "x:legacy"},
            {"role": "function", "name": "x__add", "content": "3"},
        ]
        answer = await adapter.execute_function_call(FunctionCall(name="x__add", arguments='{"a": 2}'))
        assert answer == {"role": "function", "name": "x__add", "content": "4"}


async def test_mixed_shapes_answered_in_call_order_with_matching_ids() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        calls: list[Any] = [
            responses("r1", "x__echo", '{"text": "1"}'),
            ChatCompletionMessageFunctionToolCall(
                id="c2", type="function", function=Function(name="x__echo", arguments='{"text": "2"}')
            ),
            {"name": "x__echo", "arguments": '{"text": "3"}'},
            ResponseFunctionToolCall(
                type="function_call", call_id="r4", name="x__echo", arguments='{"text": "4"}'
            ),
            chat("c5", "x__echo", '{"text": "5"}'),
            FunctionCall(name="x__echo", arguments='{"text": "6"}'),
        ]
        assert await adapter.dispatch(calls) == [
            {"type": "function_call_output", "call_id": "r1", "output": "x:1"},
            {"role": "tool", "tool_call_id": "c2", "content": "x:2"},
            {"role": "function", "name": "x__echo", "content": "x:3"},
            {"type": "function_call_output", "call_id": "r4", "output": "x:4"},
            {"role": "tool", "tool_call_id": "c5", "content": "x:5"},
            {"role": "function", "name": "x__echo", "content": "x:6"},
        ]


async def test_answers_keep_call_order_when_calls_finish_out_of_order() -> None:
    low = LowServer(name="timing")

    def sleeper(seconds: float) -> Handler:
        async def handler(arguments: dict[str, Any]) -> mt.CallToolResult:
            await anyio.sleep(seconds)
            return text_result(f"slept {seconds}")

        return handler

    low.tool("slow", sleeper(0.2))
    low.tool("medium", sleeper(0.1))
    low.tool("fast", sleeper(0.0))
    async with connected(t=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("t", c["t"])
        answers = await adapter.dispatch(
            [chat("a", "t__slow"), chat("b", "t__fast"), chat("c", "t__medium"), chat("d", "t__fast")]
        )
        assert [(a["tool_call_id"], a["content"]) for a in answers] == [
            ("a", "slept 0.2"),
            ("b", "slept 0.0"),
            ("c", "slept 0.1"),
            ("d", "slept 0.0"),
        ]


async def test_empty_dispatch() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        assert await adapter.dispatch([]) == []
        assert await adapter.dispatch(()) == []


@pytest.mark.parametrize("arguments", ["", "   ", "\n", None])
async def test_empty_arguments_mean_an_empty_object(arguments: Any) -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        answers = await adapter.dispatch(
            [chat("1", "m__args", arguments), responses("2", "m__args", arguments)]
        )
        assert answers[0]["content"] == "{}"
        assert answers[1]["output"] == "{}"
        assert low.calls == [("args", {}), ("args", {})]


async def test_arguments_reach_the_peer_unchanged() -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        arguments = {"s": "é ☕", "n": 1.5, "list": [1, {"x": None}], "flag": False}
        (answer,) = await adapter.dispatch([chat("1", "m__args", json.dumps(arguments))])
        assert json.loads(answer["content"]) == arguments
        assert low.calls == [("args", arguments)]


# -- dispatch: errors the model or a peer causes -------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(chat("e", "m__nope"), "no tool named 'm__nope'", id="unknown-tool"),
        pytest.param(chat("e", "nope"), "no tool named 'nope'", id="unknown-unprefixed"),
        pytest.param(chat("e", "m__args", "definitely not json"), "not valid JSON", id="invalid-json"),
        pytest.param(chat("e", "m__args", "[1, 2]"), "must be a JSON object", id="json-array"),
        pytest.param(chat("e", "m__args", "42"), "must be a JSON object", id="json-number"),
        pytest.param(chat("e", "m__args", '"text"'), "must be a JSON object", id="json-string"),
        pytest.param(chat("e", "m__args", "null"), "must be a JSON object", id="json-null"),
        pytest.param(chat("e", "m__args", 42), "must be a JSON object", id="arguments-not-a-string"),
        pytest.param(chat("e", "m__raises"), "failed to run 'raises'", id="peer-raises"),
        pytest.param(chat("e", "m__err"), "the disk is full", id="peer-is-error"),
        pytest.param(
            {"id": "e", "type": "function", "function": {"arguments": "{}"}}, "no function name", id="no-name"
        ),
    ],
)
async def test_error_answers_and_siblings_still_succeed(call: dict[str, Any], expected: str) -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        before, bad, after = await adapter.dispatch([chat("b", "m__ok"), call, chat("a", "m__ok")])
        assert before == {"role": "tool", "tool_call_id": "b", "content": "ok"}
        assert after == {"role": "tool", "tool_call_id": "a", "content": "ok"}
        assert bad["role"] == "tool" and bad["tool_call_id"] == "e"
        assert is_error_answer(bad)
        assert expected in bad["content"]
        # Arguments that cannot be used never reach the peer.
        assert [name for name, _ in low.calls if name == "args"] == []


async def test_error_answers_in_responses_shape() -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        answers = await adapter.dispatch(
            [responses("1", "m__nope"), responses("2", "m__args", "{bad"), responses("3", "m__ok")]
        )
        assert [a["call_id"] for a in answers] == ["1", "2", "3"]
        assert all(a["type"] == "function_call_output" for a in answers)
        assert is_error_answer(answers[0]) and is_error_answer(answers[1])
        assert answers[2]["output"] == "ok"


async def test_unknown_tool_suggests_close_names() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        (answer,) = await adapter.dispatch([chat("1", "x_echo")])
        assert is_error_answer(answer)
        assert "x__echo" in answer["content"]


async def test_peer_is_error_result() -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        outcome = await adapter.call("m__err", {})
        assert outcome.is_error
        assert outcome.text.startswith("Error:") and "the disk is full" in outcome.text
        assert outcome.result is not None and outcome.result.is_error


async def test_mcpserver_tool_that_raises() -> None:
    server = MCPServer("raising")

    @server.tool()
    def explode() -> str:
        raise ValueError("inner detail")

    @server.tool()
    def fine() -> str:
        return "fine"

    async with connected(r=server) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("r", c["r"])
        bad, good = await adapter.dispatch([chat("1", "r__explode"), chat("2", "r__fine")])
        assert is_error_answer(bad)
        assert "r__explode" in bad["content"]
        assert good["content"] == "fine"


async def test_custom_tool_call_is_answered_with_an_error() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("x", c["x"])
        custom = ChatCompletionMessageCustomToolCall(
            id="custom_1", type="custom", custom=Custom(name="x__echo", input="free text")
        )
        custom_dict = {"id": "custom_2", "type": "custom", "custom": {"name": "grammar", "input": "x"}}
        answers = await adapter.dispatch([custom, chat("c", "x__echo", '{"text": "fine"}'), custom_dict])
        assert [a["tool_call_id"] for a in answers] == ["custom_1", "c", "custom_2"]
        assert is_error_answer(answers[0]) and "custom" in answers[0]["content"]
        assert answers[1]["content"] == "x:fine"
        assert is_error_answer(answers[2])


# -- concurrency ---------------------------------------------------------------------------


def rendezvous_server() -> LowServer:
    """Two tools that each wait for the other to have started: they finish only if they run at once."""
    low = LowServer(name="rendezvous")
    ping_started = anyio.Event()
    pong_started = anyio.Event()

    async def ping(arguments: dict[str, Any]) -> mt.CallToolResult:
        ping_started.set()
        await pong_started.wait()
        return text_result("ping done")

    async def pong(arguments: dict[str, Any]) -> mt.CallToolResult:
        pong_started.set()
        await ping_started.wait()
        return text_result("pong done")

    low.tool("ping", ping)
    low.tool("pong", pong)
    return low


async def test_calls_run_concurrently() -> None:
    async with connected(r=rendezvous_server()) as c, OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter:
        await adapter.add_peer("r", c["r"])
        with anyio.fail_after(SAFETY * 2):
            answers = await adapter.dispatch([chat("1", "r__ping"), chat("2", "r__pong")])
        # Run one after the other, the first would time out with an error answer.
        assert [a["content"] for a in answers] == ["ping done", "pong done"]


async def test_calls_across_peers_and_shapes_run_concurrently() -> None:
    low = rendezvous_server()
    async with (
        connected(a=low, x=echo_server("x")) as c,
        OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter,
    ):
        await adapter.add_peer("a", c["a"])
        await adapter.add_peer("x", c["x"])
        with anyio.fail_after(SAFETY * 2):
            answers = await adapter.dispatch(
                [responses("1", "a__pong"), chat("2", "x__echo", '{"text": "t"}'), chat("3", "a__ping")]
            )
        assert [answers[0]["output"], answers[1]["content"], answers[2]["content"]] == [
            "pong done",
            "x:t",
            "ping done",
        ]


def counting_server(name: str, partner: anyio.Event, mine: anyio.Event) -> tuple[LowServer, dict[str, int]]:
    """One tool that records how many of its calls run at once, sets `mine` when it starts and
    waits for `partner` (set by another peer's tool)."""
    low = LowServer(name=name)
    stats = {"active": 0, "max_active": 0, "done": 0}

    async def work(arguments: dict[str, Any]) -> mt.CallToolResult:
        stats["active"] += 1
        stats["max_active"] = max(stats["max_active"], stats["active"])
        try:
            mine.set()
            await partner.wait()
            await anyio.sleep(0.05)  # hold the slot long enough for an overlap to show
        finally:
            stats["active"] -= 1
        stats["done"] += 1
        return text_result(f"{name} done")

    low.tool("work", work)
    return low, stats


@pytest.mark.parametrize(("limit", "expected_max"), [(1, 1), (None, 3)])
async def test_max_concurrency_serialises_one_peer_only(limit: int | None, expected_max: int) -> None:
    a_started = anyio.Event()
    b_started = anyio.Event()
    limited, a_stats = counting_server("limited", partner=b_started, mine=a_started)
    free, b_stats = counting_server("free", partner=a_started, mine=b_started)
    async with connected(a=limited, b=free) as c, OpenAIPeerToolAdapter(call_timeout=SAFETY) as adapter:
        await adapter.add_peer("lim", c["a"], max_concurrency=limit)
        await adapter.add_peer("free", c["b"])
        calls = [chat(f"a{i}", "lim__work") for i in range(3)]
        calls += [chat(f"b{i}", "free__work") for i in range(2)]
        started = time.monotonic()
        with anyio.fail_after(SAFETY * 2):
            answers = await adapter.dispatch(calls)
        elapsed = time.monotonic() - started
    assert [a["content"] for a in answers] == ["limited done"] * 3 + ["free done"] * 2
    # The limited peer ran its calls one at a time (or all at once without a limit) ...
    assert a_stats["max_active"] == expected_max
    # ... while the other peer's calls ran alongside them: they waited for the limited peer's
    # first call to start, and it waited for them.
    assert b_stats["max_active"] == 2
    assert elapsed < SAFETY


async def test_max_concurrency_must_be_positive() -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(ValueError, match="max_concurrency"):
            await adapter.add_peer("x", c["x"], max_concurrency=0)
        assert adapter.peers == ()


# -- timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["adapter", "peer", "dispatch"])
async def test_timeout_gives_an_error_answer_quickly_while_a_sibling_succeeds(level: str) -> None:
    low = misc_server()
    adapter_timeout = 0.3 if level == "adapter" else SAFETY
    async with connected(m=low) as c, OpenAIPeerToolAdapter(call_timeout=adapter_timeout) as adapter:
        if level == "peer":
            await adapter.add_peer("m", c["m"], call_timeout=0.3)
        else:
            await adapter.add_peer("m", c["m"])
        started = time.monotonic()
        with anyio.fail_after(SAFETY):
            if level == "dispatch":
                hung, fine = await adapter.dispatch(
                    [chat("1", "m__hang"), chat("2", "m__ok")], call_timeout=0.3
                )
            else:
                hung, fine = await adapter.dispatch([chat("1", "m__hang"), chat("2", "m__ok")])
        elapsed = time.monotonic() - started
        assert elapsed >= 0.25  # the timeout ran out; fail_after shows nothing waited much longer
        assert is_error_answer(hung)
        assert "0.3 s" in hung["content"] and "m__hang" in hung["content"]
        assert fine == {"role": "tool", "tool_call_id": "2", "content": "ok"}
        # The peer is still usable afterwards.
        (again,) = await adapter.dispatch([chat("3", "m__ok")])
        assert again["content"] == "ok"


async def test_single_call_timeout() -> None:
    async with connected(m=misc_server()) as c, OpenAIPeerToolAdapter(call_timeout=0.2) as adapter:
        await adapter.add_peer("m", c["m"])
        with anyio.fail_after(SAFETY):
            (answer,) = await adapter.dispatch([responses("r", "m__hang")])
            outcome = await adapter.call("m__hang", "{}")
        assert is_error_answer(answer) and answer["call_id"] == "r"
        assert outcome.is_error and "0.2 s" in outcome.text


@dataclass
class DeadlineSession:
    """A session wrapper that applies its own deadline to a real client (the adapter takes any
    object with `list_tools` and `call_tool`)."""

    client: mcp.Client
    deadline: float

    async def list_tools(self, *, cursor: str | None = None) -> mt.ListToolsResult:
        return await self.client.list_tools(cursor=cursor)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, read_timeout_seconds: float | None = None
    ) -> mt.CallToolResult:
        with anyio.fail_after(self.deadline):
            return await self.client.call_tool(name, arguments)


@pytest.mark.parametrize("adapter_timeout", [None, SAFETY])
async def test_a_peers_own_timeout_is_an_error_answer(adapter_timeout: float | None) -> None:
    async with (
        connected(m=misc_server()) as c,
        OpenAIPeerToolAdapter(call_timeout=adapter_timeout) as adapter,
    ):
        await adapter.add_peer("m", DeadlineSession(c["m"], deadline=0.2))
        with anyio.fail_after(SAFETY):
            hung, fine = await adapter.dispatch([chat("1", "m__hang"), chat("2", "m__ok")])
        assert is_error_answer(hung)
        assert "TimeoutError" in hung["content"]
        assert fine["content"] == "ok"


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1", [1]])
async def test_invalid_timeouts_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenAIPeerToolAdapter(call_timeout=bad)
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(ValueError, match="timeout"):
            await adapter.dispatch([], call_timeout=bad)
        with pytest.raises(ValueError, match="timeout"):
            await adapter.call("m__ok", {}, call_timeout=bad)


# -- programmer errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool_calls",
    [
        pytest.param("x__echo", id="a-string"),
        pytest.param(b"x__echo", id="bytes"),
        pytest.param(42, id="not-iterable"),
        pytest.param([42], id="a-number-in-the-list"),
        pytest.param(["x__echo"], id="a-string-in-the-list"),
        pytest.param([None], id="none-in-the-list"),
        pytest.param([[chat("n", "m__ok")]], id="a-list-in-the-list"),
        pytest.param([{"arguments": "{}"}], id="no-name-no-id"),
        pytest.param([{}], id="empty-dict"),
        pytest.param([{"type": "banana", "call_id": "b"}], id="unknown-type"),
        pytest.param({"foo": 1}, id="a-dict-that-is-no-call"),
    ],
)
async def test_malformed_tool_calls_raise_and_nothing_runs(tool_calls: Any) -> None:
    low = misc_server()
    async with connected(m=low) as c, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("m", c["m"])
        batch = [chat("fine", "m__ok"), *tool_calls] if isinstance(tool_calls, list) else tool_calls
        with pytest.raises(ToolCallFormatError) as info:
            await adapter.dispatch(batch)
        assert isinstance(info.value, RouterError)
        assert isinstance(info.value, TypeError)
        assert low.calls == []


async def test_execute_function_call_rejects_a_non_call() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(ToolCallFormatError):
            await adapter.execute_function_call(42)


@pytest.mark.parametrize("peer_id", ["", None, 42])
async def test_add_peer_with_an_unusable_id(peer_id: Any) -> None:
    async with connected(x=echo_server("x")) as c, OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(InvalidPeerIdError) as info:
            await adapter.add_peer(peer_id, c["x"])
        assert isinstance(info.value, RouterError) and isinstance(info.value, ValueError)
        assert adapter.peers == ()


async def test_duplicate_peer_id() -> None:
    async with (
        connected(a=echo_server("alpha"), b=echo_server("beta")) as c,
        OpenAIPeerToolAdapter() as adapter,
    ):
        await adapter.add_peer("p", c["a"])
        version = adapter.version
        with pytest.raises(DuplicatePeerError) as info:
            await adapter.add_peer("p", c["b"])
        assert info.value.peer == "p"
        assert isinstance(info.value, RouterError) and isinstance(info.value, ValueError)
        # The first peer is untouched.
        assert adapter.version == version
        (answer,) = await adapter.dispatch([chat("1", "p__echo", '{"text": "?"}')])
        assert answer["content"] == "alpha:?"


async def test_unknown_peer() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UnknownPeerError) as info:
            await adapter.remove_peer("ghost")
        assert info.value.peer == "ghost"
        assert isinstance(info.value, RouterError) and isinstance(info.value, LookupError)
        with pytest.raises(UnknownPeerError):
            await adapter.refresh_peer("ghost")


async def test_add_peer_with_something_that_is_not_a_session() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(TypeError) as info:
            await adapter.add_peer("p", object())  # type: ignore[arg-type]
        assert isinstance(info.value, mcpx_router.UsageError)
        assert adapter.peers == ()


@pytest.mark.parametrize(
    "options",
    [
        {"call_timeout": True},
        {"call_timeout": 0},
        {"call_timeout": float("nan")},
        {"call_timeout": "5"},
        {"max_tools": 0},
        {"description_limit": 10},
        {"media": "inline"},
        {"strict": "yes"},
    ],
    ids=repr,
)
def test_bad_options_raise_usage_errors_from_the_one_tree(options: dict[str, Any]) -> None:
    with pytest.raises(mcpx_router.UsageError) as info:
        OpenAIPeerToolAdapter(**options)
    assert isinstance(info.value, RouterError) and isinstance(info.value, ValueError)


async def test_use_after_exit_raises_adapter_closed() -> None:
    async with connected(x=echo_server("x")) as c:
        async with OpenAIPeerToolAdapter() as adapter:
            await adapter.add_peer("x", c["x"])
        assert adapter.get_openai_tools() == ()
        attempts: list[Callable[[], Awaitable[Any]]] = [
            lambda: adapter.add_peer("y", c["x"]),
            lambda: adapter.dispatch([chat("1", "x__echo", '{"text": "late"}')]),
            lambda: adapter.dispatch([]),
            lambda: adapter.execute_function_call(chat("1", "x__echo", '{"text": "late"}')),
            lambda: adapter.call("x__echo", {"text": "late"}),
            lambda: adapter.refresh_peer("x"),
            lambda: adapter.remove_peer("x"),
        ]
        for attempt in attempts:
            with pytest.raises(AdapterClosedError) as info:
                await attempt()
            assert isinstance(info.value, RouterError)
        with pytest.raises(AdapterClosedError):
            async with adapter:
                pass


# -- the public API ------------------------------------------------------------------------


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest."""
    if name.isupper() or (name.upper() == name and "_" in name):
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return kind, name


async def test_public_all_is_sorted_and_importable() -> None:
    names = list(mcpx_router.__all__)
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(mcpx_router, name) is not None
    namespace: dict[str, Any] = {}
    exec("from mcpx_router import *", namespace)
    assert set(names) <= set(namespace)
    for name in [
        "OpenAIPeerToolAdapter",
        "NameTable",
        "ToolKey",
        "RouterError",
        "AdapterClosedError",
        "ToolCallFormatError",
        "convert_parameters",
        "render_result",
    ]:
        assert name in names


async def test_a_null_for_an_optional_parameter_is_dropped_before_the_call() -> None:
    server = MCPServer("w")

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        return f"{city}:{days}"

    async with mcp.Client(server) as client, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("w", client)
        dropped = await adapter.call("w__forecast", '{"city": "Oslo", "days": null}')
        refused = await adapter.call("w__forecast", '{"city": null}')
    assert (dropped.text, dropped.is_error) == ("Oslo:3", False)
    assert refused.is_error and "at $.city: null is not of type 'string'" in refused.text
