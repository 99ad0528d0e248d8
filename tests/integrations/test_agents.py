"""`RouterMCPServer` through the OpenAI Agents SDK's own run loop, with the SDK's `ScriptedModel`.

The peers are real: in-process `MCPServer`s and stdio servers started as subprocesses. Each
scripted turn is a responder that sees what the SDK sent the model (the tools offered, the tool
outputs so far) and answers as a model would.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as mt
import pytest
from mcp import Client

from mcpx_router import (
    CallProgress,
    InProcessPeer,
    OpenAIPeerToolAdapter,
    Outcome,
    Reconnect,
    Router,
    StdioPeer,
)
from mcpx_router.testing import docs_library, weather_station

from ..support._model_peers import PNG, media_peer
from ..support.otel_support import spans  # noqa: F401  (a fixture)
from ..support.router_support import HERE, tiny

if TYPE_CHECKING:
    from agents import Agent, RunConfig, Runner, RunResult
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    from mcpx_router.integrations.agents import RouterMCPServer, call_tool_result

# Importing the Agents SDK costs a second of CPU: these tests run on one worker, which imports it,
# rather than every worker importing it to collect the tests.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("agents")]


@pytest.fixture(autouse=True)
def _agents_imported() -> None:
    from agents import Agent, RunConfig, Runner
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from mcpx_router.integrations.agents import RouterMCPServer, call_tool_result

    globals().update(
        Agent=Agent,
        Runner=Runner,
        ModelStep=ModelStep,
        ScriptedModel=ScriptedModel,
        assistant_message=assistant_message,
        function_call=function_call,
        RouterMCPServer=RouterMCPServer,
        call_tool_result=call_tool_result,
        RunConfig=RunConfig,
    )


@pytest.fixture
def anyio_backend() -> str:
    """The SDK runs on asyncio only."""
    return "asyncio"


def offered(call: ModelCall) -> list[str]:
    return [tool.name for tool in call.tools]


def outputs(call: ModelCall) -> dict[str, Any]:
    """The tool outputs the model was sent, by call id: the text, or the list of parts with media."""
    found = {}
    for item in call.input:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item["output"]
            if isinstance(output, list) and len(output) == 1 and output[0]["type"] == "input_text":
                output = output[0]["text"]  # the SDK sends a tool's one text block as one text part
            found[item["call_id"]] = output
    return found


def agent_with(model: ScriptedModel, source: OpenAIPeerToolAdapter | Router) -> Agent[Any]:
    return Agent(name="assistant", model=model, mcp_servers=[RouterMCPServer(source)])


async def run(model: ScriptedModel, source: OpenAIPeerToolAdapter | Router, prompt: str) -> RunResult:
    """The SDK's run of one agent over `source`, sending no traces."""
    return await Runner.run(agent_with(model, source), prompt, run_config=RunConfig(tracing_disabled=True))


async def test_a_peer_that_joins_mid_conversation_is_offered_and_used_at_the_next_turn() -> None:
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))

        async def first(call: ModelCall) -> Any:
            assert offered(call) == ["weather__forecast", "weather__alerts"]
            # While the model thinks, a stdio peer joins.
            await router.join("tiny", tiny())
            return [function_call("weather__forecast", {"city": "Oslo"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert "tiny__echo" in offered(call)
            assert outputs(call)["c1"].startswith("Oslo:")
            return [function_call("tiny__echo", {"text": "hello"}, call_id="c2")]

        def third(call: ModelCall) -> Any:
            assert outputs(call)["c2"] == "hello"
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second), ModelStep.respond(third)])
        result = await run(model, router, "Weather in Oslo?")
        assert result.final_output == "done"
        model.assert_complete()


async def test_a_peer_that_leaves_is_no_longer_offered() -> None:
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("docs", InProcessPeer(docs_library()))

        async def first(call: ModelCall) -> Any:
            assert "docs__search" in offered(call)
            await router.leave("docs")
            return [function_call("weather__alerts", {"region": "Norway"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert offered(call) == ["weather__forecast", "weather__alerts"]
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        await run(model, router, "Alerts?")
        model.assert_complete()


def search_peer(name: str, log: Path) -> StdioPeer:
    server = HERE / "search_stdio_server.py"
    args = [str(server), "--name", name, "--read-only"]
    return StdioPeer(sys.executable, args, env={"TINY_SERVER_LOG": str(log)})


async def test_a_group_member_dies_and_another_member_answers(tmp_path: Path) -> None:
    aliases = {"search": ["web/search", "news/search"]}
    slow = Reconnect(initial_delay=30, max_delay=30, jitter=0)
    async with Router(aliases=aliases, hide_members=True, reconnect=slow, health_interval=None) as router:
        await router.join_all({name: search_peer(name, tmp_path / f"{name}.log") for name in ("web", "news")})

        def first(call: ModelCall) -> Any:
            assert "search" in offered(call) and "web__search" not in offered(call)
            # web crashes with the call in hand; search is read-only, so news runs it.
            return [function_call("search", {"query": "die@web", "peer": "web"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            answer = outputs(call)["c1"]
            assert "news: results for die@web" in answer and "(served by news" in answer
            assert "web failed first" in answer
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        await run(model, router, "Search")
        model.assert_complete()


async def test_a_bad_argument_is_an_error_the_model_reads() -> None:
    async with Client(weather_station()) as weather, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("weather", weather)  # a bare adapter serves as well as a Router

        def first(call: ModelCall) -> Any:
            return [function_call("weather__forecast", {"city": "Oslo", "days": 30}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            answer = outputs(call)["c1"]
            assert answer.startswith("Error:") and "days" in answer and "7" in answer
            return [function_call("weather__forecast", {"city": "Oslo", "days": 7}, call_id="c2")]

        def third(call: ModelCall) -> Any:
            assert outputs(call)["c2"].startswith("Oslo:")
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second), ModelStep.respond(third)])
        result = await run(model, adapter, "Weather?")
        assert result.final_output == "done"
        answered = [item for item in result.new_items if item.type == "tool_call_output_item"]
        assert len(answered) == 2


async def test_an_image_reaches_the_model_as_the_sdks_image_output() -> None:
    async with Router() as router:
        await router.join("media", InProcessPeer(media_peer()))

        def first(call: ModelCall) -> Any:
            return [function_call("media__snapshot", {"camera": "door"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            text, image = outputs(call)["c1"]
            assert text["type"] == "input_text" and text["text"].startswith("Picture from door:")
            assert image["type"] == "input_image"
            assert image["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
            return [assistant_message("a door")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        await run(model, router, "Look")
        model.assert_complete()


async def test_the_calls_span_is_a_child_of_the_span_around_the_run(spans: Any) -> None:  # noqa: F811
    from opentelemetry import trace

    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        model = ScriptedModel(
            [
                [function_call("weather__alerts", {"region": "Norway"}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        with trace.get_tracer("test").start_as_current_span("conversation") as outer:
            await run(model, router, "Alerts?")
    [span] = [s for s in spans.get_finished_spans() if s.name == "execute_tool weather__alerts"]
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id


async def test_prompts_are_listed_under_public_names() -> None:
    async with Router() as router:
        await router.join("peer", InProcessPeer(_prompting_server()))
        server = RouterMCPServer(router)
        listed = await server.list_prompts()
        assert [prompt.name for prompt in listed.prompts] == ["peer__greet"]
        result = await server.get_prompt("peer__greet", {"name": "Ada"})
        assert json.dumps(result.model_dump(mode="json")).count("Hello, Ada") == 1


def _prompting_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("prompting")

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}"

    return server


async def test_beyond_max_tools_the_tools_relevant_to_the_input_are_offered() -> None:
    async with Router(max_tools=1) as router:
        await router.join("weather", InProcessPeer(weather_station()))

        def first(call: ModelCall) -> Any:
            assert offered(call) == ["weather__alerts"]
            return [function_call("weather__alerts", {"region": "Norway"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert offered(call) == ["weather__alerts"]
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        await run(model, router, "Any storm alerts in Norway?")
        model.assert_complete()


async def test_a_stdio_peers_progress_reaches_the_routers_events() -> None:
    seen: list[Any] = []
    async with Router(on_event=seen.append) as router:
        await router.join("peer", StdioPeer(sys.executable, [str(HERE / "stdio_peer_server.py")]))
        model = ScriptedModel(
            [
                [function_call("peer__slow", {"seconds": 0.3}, call_id="c1")],
                [assistant_message("done")],
            ]
        )
        await run(model, router, "Wait")
    progress = [event for event in seen if isinstance(event, CallProgress)]
    assert progress and {event.name for event in progress} == {"peer__slow"}


TEXT = mt.TextContent(type="text", text="Picture:")
IMAGE = mt.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")
AUDIO = mt.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav")


@pytest.mark.parametrize(
    ("outcome", "content", "is_error"),
    [
        (Outcome("hi", False, result=mt.CallToolResult(content=[TEXT])), ["hi"], False),
        # the images follow the text; audio stays described in the text (the SDK has no type for it)
        (
            Outcome("Picture: [image]", False, result=mt.CallToolResult(content=[TEXT, IMAGE, AUDIO])),
            ["Picture: [image]", IMAGE],
            False,
        ),
        (Outcome("Error: no", True, error_type="tool_error"), ["Error: no"], True),
        # a failed call's images are not passed on: its text says what failed
        (
            Outcome("Error: x", True, result=mt.CallToolResult(content=[IMAGE], is_error=True)),
            ["Error: x"],
            True,
        ),
    ],
)
def test_an_outcome_as_a_call_tool_result(outcome: Outcome, content: list[Any], is_error: bool) -> None:
    result = call_tool_result(outcome)
    texts = [block.text if isinstance(block, mt.TextContent) else block for block in result.content]
    assert (texts, result.is_error) == (content, is_error)


def answering(server: RouterMCPServer) -> RunConfig:
    """The run config that has a name the turn did not offer answered with the Router's reason."""
    return RunConfig(
        tracing_disabled=True,
        tool_not_found_behavior="return_error_to_model",
        tool_error_formatter=server.tool_error_formatter,
    )


async def test_a_call_to_a_tool_that_left_or_never_was_is_answered_with_the_routers_reason() -> None:
    gone = (
        "Error: 'docs__search' is not available now: peer 'docs' left. Call only the functions offered now."
    )
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("docs", InProcessPeer(docs_library()))
        server = RouterMCPServer(router)

        async def first(call: ModelCall) -> Any:
            assert "docs__search" in offered(call)
            await router.leave("docs")  # while the model thinks: the turn's list still has it
            return [function_call("docs__search", {"query": "install"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert outputs(call)["c1"] == gone  # the Router's answer to the call
            assert "docs__search" not in offered(call)
            return [
                function_call("docs__search", {"query": "install"}, call_id="c2"),
                function_call("weather__forcast", {"city": "Oslo"}, call_id="c3"),
            ]

        def third(call: ModelCall) -> Any:
            answers = outputs(call)
            assert answers["c2"] == gone  # not offered this turn: the same reason, not "not found"
            assert answers["c3"].startswith("Error: there is no tool named 'weather__forcast'. Did you mean")
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second), ModelStep.respond(third)])
        result = await Runner.run(
            Agent(name="a", model=model, mcp_servers=[server]), "Go", run_config=answering(server)
        )
        assert result.final_output == "done"
        model.assert_complete()


async def test_a_tool_published_but_not_offered_this_turn_is_not_called() -> None:
    async with Router(max_tools=1, stats=True) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        server = RouterMCPServer(router)

        def first(call: ModelCall) -> Any:
            assert offered(call) == ["weather__alerts"]
            return [function_call("weather__forecast", {"city": "Oslo"}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert outputs(call)["c1"] == (
                "Error: 'weather__forecast' was not offered in this turn, so it was not called. "
                "Call only the functions offered now."
            )
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        agent = Agent(name="a", model=model, mcp_servers=[server])
        await Runner.run(agent, "Any storm alerts in Norway?", run_config=answering(server))
        model.assert_complete()
        assert sum(stats.calls for stats in router.stats().tools.values()) == 0  # no peer called


async def test_without_the_setting_the_sdk_ends_the_run_on_a_name_not_offered() -> None:
    """What the docs say of the SDK's default (`tool_not_found_behavior="raise_error"`)."""
    from agents.exceptions import ModelBehaviorError

    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        model = ScriptedModel([[function_call("docs__search", {"query": "x"}, call_id="c1")]])
        with pytest.raises(ModelBehaviorError, match="docs__search"):
            await run(model, router, "Go")


async def test_code_mode_is_offered_as_its_two_functions_of_one_mcp_server() -> None:
    from mcpx_router.codemode import CodeMode

    async with Router() as router, CodeMode(router.adapter) as code:
        await router.join("weather", InProcessPeer(weather_station()))
        program = 'weather.alerts(region="Portugal")["alerts"][0]'

        def first(call: ModelCall) -> Any:
            assert offered(call) == ["run_python", "find_tools"]
            return [function_call("run_python", {"code": program}, call_id="c1")]

        def second(call: ModelCall) -> Any:
            assert outputs(call)["c1"] == (
                'Calls made (1):\n1. weather.alerts(region="Portugal") -> ok\n\n'
                'Result: "storm warning: coast"'
            )
            return [assistant_message("done")]

        model = ScriptedModel([ModelStep.respond(first), ModelStep.respond(second)])
        agent = Agent(name="assistant", model=model, mcp_servers=[RouterMCPServer(code)])
        await Runner.run(agent, "Alerts in Portugal?", run_config=RunConfig(tracing_disabled=True))
        model.assert_complete()
