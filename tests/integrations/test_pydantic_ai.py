"""`RouterToolset` through Pydantic AI's own agent loop, with its `FunctionModel`.

The peers are real: in-process `MCPServer`s and stdio servers started as subprocesses. Each
scripted step is a function that sees what the agent sent the model (the tools offered, the
tool returns so far) and answers as a model would.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, Reconnect, Router, StdioPeer
from mcpx_router.testing import docs_library, weather_station

from ..support._model_peers import PNG, media_peer
from ..support.otel_support import spans  # noqa: F401  (a fixture)
from ..support.router_support import HERE, tiny

if TYPE_CHECKING:
    from pydantic_ai import Agent, BinaryImage
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from mcpx_router.integrations.pydantic_ai import RouterToolset

    Step = Callable[[list[ModelMessage], AgentInfo], Any]

# Importing Pydantic AI costs a second of CPU: these tests run on one worker, which imports it,
# rather than every worker importing it to collect the tests.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("pydantic-ai")]


@pytest.fixture(autouse=True)
def _pydantic_ai_imported() -> None:
    from pydantic_ai import Agent, BinaryImage
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from mcpx_router.integrations.pydantic_ai import RouterToolset

    globals().update(
        Agent=Agent,
        BinaryImage=BinaryImage,
        Instrumentation=Instrumentation,
        ModelRequest=ModelRequest,
        ModelResponse=ModelResponse,
        TextPart=TextPart,
        ToolCallPart=ToolCallPart,
        ToolReturnPart=ToolReturnPart,
        FunctionModel=FunctionModel,
        RouterToolset=RouterToolset,
    )


@pytest.fixture
def anyio_backend() -> str:
    """Pydantic AI's agent runs on asyncio only (its run starts asyncio tasks)."""
    return "asyncio"


def scripted(*steps: Step) -> FunctionModel:
    """A model that answers with each step in turn; every step must be used."""
    queue = list(steps)

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        result = queue.pop(0)(messages, info)
        if hasattr(result, "__await__"):
            result = await result
        return result if isinstance(result, ModelResponse) else ModelResponse(parts=result)

    model = FunctionModel(respond)
    model.remaining = queue  # type: ignore[attr-defined]
    return model


def offered(info: AgentInfo) -> list[str]:
    return [tool.name for tool in info.function_tools]


def returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    """The tool returns the model was sent, by call id."""
    return {
        part.tool_call_id: part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


def call(name: str, args: dict[str, Any], call_id: str) -> list[Any]:
    return [ToolCallPart(name, args, tool_call_id=call_id)]


def say(text: str) -> list[Any]:
    return [TextPart(text)]


async def test_a_peer_that_joins_mid_conversation_is_offered_and_used_at_the_next_step() -> None:
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))

        async def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert offered(info) == ["weather__forecast", "weather__alerts"]
            await router.join("tiny", tiny())  # a stdio peer joins while the model thinks
            return call("weather__forecast", {"city": "Oslo"}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert "tiny__echo" in offered(info)
            assert returns(messages)["c1"].content.startswith("Oslo:")
            return call("tiny__echo", {"text": "hello"}, "c2")

        def third(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert returns(messages)["c2"].content == "hello"
            return say("done")

        model = scripted(first, second, third)
        result = await Agent(model, toolsets=[RouterToolset(router)]).run("Weather in Oslo?")
        assert result.output == "done" and model.remaining == []  # type: ignore[attr-defined]


async def test_a_peer_that_leaves_is_no_longer_offered() -> None:
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("docs", InProcessPeer(docs_library()))

        async def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert "docs__search" in offered(info)
            await router.leave("docs")
            return call("weather__alerts", {"region": "Norway"}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert offered(info) == ["weather__forecast", "weather__alerts"]
            return say("done")

        await Agent(scripted(first, second), toolsets=[RouterToolset(router)]).run("Alerts?")


def search_peer(name: str, log: Path) -> StdioPeer:
    args = [str(HERE / "search_stdio_server.py"), "--name", name, "--read-only"]
    return StdioPeer(sys.executable, args, env={"TINY_SERVER_LOG": str(log)})


async def test_a_group_member_dies_and_another_member_answers(tmp_path: Path) -> None:
    aliases = {"search": ["web/search", "news/search"]}
    slow = Reconnect(initial_delay=30, max_delay=30, jitter=0)
    async with Router(aliases=aliases, hide_members=True, reconnect=slow, health_interval=None) as router:
        await router.join_all({name: search_peer(name, tmp_path / f"{name}.log") for name in ("web", "news")})

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert "search" in offered(info) and "web__search" not in offered(info)
            return call("search", {"query": "die@web", "peer": "web"}, "c1")  # web crashes mid-call

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            answer = returns(messages)["c1"]
            assert answer.outcome == "success"
            assert "news: results for die@web" in answer.content and "(served by news" in answer.content
            assert "web failed first" in answer.content
            return say("done")

        await Agent(scripted(first, second), toolsets=[RouterToolset(router)]).run("Search")


async def test_a_bad_argument_is_a_failed_tool_result_the_model_reads() -> None:
    async with Client(weather_station()) as weather, OpenAIPeerToolAdapter() as adapter:
        await adapter.add_peer("weather", weather)  # a bare adapter serves as well as a Router

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            return call("weather__forecast", {"city": "Oslo", "days": 30}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            answer = returns(messages)["c1"]
            assert answer.outcome == "failed"
            assert answer.content.startswith("Error:") and "days" in answer.content and "7" in answer.content
            return call("weather__forecast", {"city": "Oslo", "days": 7}, "c2")

        def third(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert returns(messages)["c2"].content.startswith("Oslo:")
            return say("done")

        # No retry is spent on a failed call: with none allowed, the run still goes on.
        agent = Agent(scripted(first, second, third), toolsets=[RouterToolset(adapter)], retries=0)
        assert (await agent.run("Weather?")).output == "done"


async def test_an_image_reaches_the_model_as_a_binary_image() -> None:
    async with Router() as router:
        await router.join("media", InProcessPeer(media_peer()))

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            return call("media__snapshot", {"camera": "door"}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            sent = [
                item
                for message in messages
                if isinstance(message, ModelRequest)
                for part in message.parts
                for item in (part.content if isinstance(part.content, list) else [part.content])
            ]
            assert any(isinstance(item, str) and item.startswith("Picture from door:") for item in sent)
            [image] = [item for item in sent if isinstance(item, BinaryImage)]
            assert image.data == PNG and image.media_type == "image/png"
            return say("a door")

        await Agent(scripted(first, second), toolsets=[RouterToolset(router)]).run("Look")


async def test_the_calls_span_is_a_child_of_the_agents_tool_span(spans: Any) -> None:  # noqa: F811
    async with Router() as router:
        await router.join("weather", InProcessPeer(weather_station()))

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            return call("weather__alerts", {"region": "Norway"}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            return say("done")

        instrumented = [Instrumentation()]  # the agent's own spans, through the global tracer provider
        agent = Agent(scripted(first, second), toolsets=[RouterToolset(router)], capabilities=instrumented)
        await agent.run("Alerts?")
    finished = spans.get_finished_spans()
    ours = next(
        s
        for s in finished
        if s.instrumentation_scope.name == "mcpx_router"
        and s.kind.name == "INTERNAL"
        and s.name == "execute_tool weather__alerts"
    )
    assert ours.parent is not None
    [theirs] = [s for s in finished if s.context.span_id == ours.parent.span_id]
    assert theirs.instrumentation_scope.name.startswith("pydantic-ai")
    assert theirs.name == "execute_tool weather__alerts"


async def test_beyond_max_tools_the_tools_relevant_to_the_prompt_are_offered() -> None:
    async with Router(max_tools=1) as router:
        await router.join("weather", InProcessPeer(weather_station()))

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert offered(info) == ["weather__alerts"]
            return call("weather__alerts", {"region": "Norway"}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert offered(info) == ["weather__alerts"]
            return say("done")

        agent = Agent(scripted(first, second), toolsets=[RouterToolset(router)])
        await agent.run("Any storm alerts in Norway?")


async def test_code_mode_is_offered_as_its_two_functions_and_runs_the_program() -> None:
    from mcpx_router.codemode import CodeMode

    async with Router() as router, CodeMode(router.adapter) as code:
        await router.join("weather", InProcessPeer(weather_station()))
        program = 'print(weather.forecast(city="Oslo"))\nweather.alerts(region="Norway")["alerts"]'

        def first(messages: list[ModelMessage], info: AgentInfo) -> Any:
            assert offered(info) == ["run_python", "find_tools"]
            assert "weather (2): forecast, alerts" in info.function_tools[0].description
            return call("run_python", {"code": program}, "c1")

        def second(messages: list[ModelMessage], info: AgentInfo) -> Any:
            answer = returns(messages)["c1"].content
            assert answer.startswith("Calls made (2):\n1. weather.forecast(city=\"Oslo\") -> ok")
            assert answer.endswith('Result: ["storm warning: coast"]')
            return say("A storm warning on the coast.")

        model = scripted(first, second)
        result = await Agent(model, toolsets=[RouterToolset(code)]).run("Weather alerts in Norway?")
        assert result.output == "A storm warning on the coast." and model.remaining == []  # type: ignore[attr-defined]
