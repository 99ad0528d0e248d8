"""LangChain / LangGraph: the router's tools run by LangGraph's own agent loop over real peers.

The model is LangChain's own `GenericFakeChatModel`, given `bind_tools` (as LangGraph's tests
do; tests/integrations/langchain_model.py): each turn it records the tools it was bound to and
plays the next scripted step; a step may act first (a peer joins) and then answers with tool
calls. LangGraph runs async graphs on asyncio only, so the async tests do too; the blocking facade
runs its Router on trio as well.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from mcpx_router import InProcessPeer, Outcome, Router, UsageError, sync
from mcpx_router.testing import docs_library, weather_station

from ..support.router_support import tiny
from .peers import PNG, ROUTER_OPTIONS, called, camera, search_group, search_peer, within

if TYPE_CHECKING:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from mcpx_router.integrations.langchain import LangChainTools, RouterTool, ShadowedToolWarning

    from .langchain_model import ScriptedChatModel, Step, calls, react_agent, say, scripted, tool_messages

# Importing LangChain and LangGraph costs seconds of CPU: these tests run on one worker, which
# imports them, rather than every worker importing them to collect the tests.
pytestmark = pytest.mark.xdist_group("langchain")


@pytest.fixture(autouse=True)
def _langchain_imported() -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from mcpx_router.integrations.langchain import LangChainTools, RouterTool, ShadowedToolWarning

    from . import langchain_model as model

    globals().update(
        create_agent=create_agent,
        ToolMessage=ToolMessage,
        convert_to_openai_tool=convert_to_openai_tool,
        LangChainTools=LangChainTools,
        RouterTool=RouterTool,
        ShadowedToolWarning=ShadowedToolWarning,
        ScriptedChatModel=model.ScriptedChatModel,
        calls=model.calls,
        react_agent=model.react_agent,
        say=model.say,
        scripted=model.scripted,
        tool_messages=model.tool_messages,
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_react_agent_calls_stdio_and_in_process_peers_and_sees_a_peer_join(
    anyio_backend: str,
) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("tiny", tiny())
        toolset = LangChainTools(router)

        async def join_docs_then_call(messages: list[BaseMessage]) -> AIMessage:
            await router.join("docs", InProcessPeer(docs_library()))  # between two turns
            return calls(("weather__forecast", {"city": "Oslo"}), ("tiny__echo", {"text": "hi"}))

        model = scripted(
            join_docs_then_call,
            lambda messages: calls(("docs__search", {"query": "install"})),
            say("Snow in Oslo; install with dev.py."),
        )
        state = await react_agent(toolset, model).ainvoke({"messages": [("user", "Weather in Oslo?")]})

    assert "docs__search" not in model.offered[0] and "weather__forecast" in model.offered[0]
    assert "docs__search" in model.offered[1]
    forecast, echo, docs = tool_messages(state)
    assert (forecast.name, forecast.status, forecast.content) == (
        "weather__forecast",
        "success",
        "Oslo: snow, 3°C, for the next 3 day(s)",
    )
    assert isinstance(forecast.artifact, Outcome) and forecast.artifact.tool is not None
    assert forecast.artifact.tool.peer == "weather"
    assert (echo.content, docs.status) == ("hi", "success")
    assert "python3 dev.py demo" in str(docs.content)
    assert state["messages"][-1].content == "Snow in Oslo; install with dev.py."


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_bad_argument_is_an_error_message_the_model_reads(anyio_backend: str) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        toolset = LangChainTools(router)

        def fix_it(messages: list[BaseMessage]) -> AIMessage:
            assert isinstance(messages[-1], ToolMessage) and messages[-1].status == "error"
            return calls(("weather__forecast", {"city": "Oslo", "days": 2}))

        model = scripted(
            lambda messages: calls(("weather__forecast", {"city": "Oslo", "days": "many"})),
            fix_it,
            lambda messages: calls(("weather__forcast", {"city": "Oslo"})),
            say("done"),
        )
        state = await react_agent(toolset, model).ainvoke({"messages": [("user", "Oslo?")]})

    bad, good, unknown = tool_messages(state)
    assert bad.status == "error" and str(bad.content).startswith("Error:") and "days" in str(bad.content)
    assert (good.status, good.content) == ("success", "Oslo: snow, 3°C, for the next 2 day(s)")
    # A name no tool answers to is answered by the router (close names), not by ToolNode.
    assert unknown.status == "error" and "weather__forecast" in str(unknown.content)
    assert state["messages"][-1].content == "done"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_group_member_dies_and_another_answers(anyio_backend: str, tmp_path: Path) -> None:
    peers, options = search_group(tmp_path)
    async with Router(**options) as router:
        await router.join_all(peers)
        toolset = LangChainTools(router)
        assert next(tool.name for tool in toolset.tools()) == "search"
        model = scripted(
            lambda messages: calls(("search", {"query": "die@web", "peer": "web"})),
            lambda messages: calls(("search", {"query": "mcp"})),
            say("found"),
        )
        state = await react_agent(toolset, model).ainvoke({"messages": [("user", "search")]})

    died, after = tool_messages(state)
    assert died.status == "success" and "web failed first" in str(died.content)
    assert isinstance(died.artifact, Outcome) and died.artifact.group == "search"
    assert died.artifact.tool is not None and died.artifact.tool.peer in ("news", "docs")
    assert after.status == "success" and "results for mcp" in str(after.content)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_image_reaches_langchain_as_an_image_block(anyio_backend: str) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("camera", InProcessPeer(camera()))
        toolset = LangChainTools(router)
        model = scripted(lambda messages: calls(("camera__snapshot", {"room": "hall"})), say("a hall"))
        state = await react_agent(toolset, model).ainvoke({"messages": [("user", "Show me the hall")]})

    [picture] = tool_messages(state)
    text, image = picture.content
    assert isinstance(text, dict) and text["type"] == "text" and "snapshot of hall" in text["text"]
    assert isinstance(image, dict) and (image["type"], image["mime_type"]) == ("image", "image/png")
    assert base64.b64decode(image["base64"]) == PNG


def blocking_script(router: sync.Router) -> Iterator[Step]:
    """The sync graph's model: between turns one and two, a stdio peer joins (blocking)."""

    def join_tiny_then_call(messages: list[BaseMessage]) -> AIMessage:
        router.join("tiny", tiny())
        return calls(("weather__forecast", {"city": "Paris"}))

    yield join_tiny_then_call
    yield lambda messages: calls(("tiny__echo", {"text": "from a new peer"}), ("weather__alerts", {}))
    yield say("done")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_blocking_router_serves_a_sync_graph(backend: str) -> None:
    with sync.Router(backend=backend, **ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        toolset = LangChainTools(router)
        model = ScriptedChatModel(messages=blocking_script(router), offered=[])
        state = react_agent(toolset, model).invoke({"messages": [("user", "Paris?")]})

    assert "tiny__echo" not in model.offered[0] and "tiny__echo" in model.offered[1]
    forecast, echo, alerts = tool_messages(state)
    assert forecast.content == "Paris: light rain, 14°C, for the next 3 day(s)"
    assert (echo.status, echo.content) == ("success", "from a new peer")
    assert alerts.status == "error" and "region" in str(alerts.content)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_tools_follow_the_router_and_sync_calls_of_an_async_router_leave_its_loop(
    anyio_backend: str,
) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        toolset = LangChainTools(router)
        first = toolset.tools()
        assert toolset.tools() == first and all(isinstance(tool, RouterTool) for tool in first)
        forecast: BaseTool = toolset.tool("weather__forecast")
        assert forecast.args_schema == router.tools[0].parameters
        # What bind_tools sends: the router's name, description and parameters (less LangChain's
        # dropped `title`s).
        bound, published = (
            convert_to_openai_tool(forecast)["function"],
            router.get_openai_tools()[0]["function"],
        )
        assert (bound["name"], bound["description"]) == (published["name"], published["description"])
        assert bound["parameters"]["properties"].keys() == published["parameters"]["properties"].keys()
        # Called synchronously in the router's own loop it would deadlock: it says so instead.
        with pytest.raises(UsageError, match="await"):
            forecast.invoke({"city": "Oslo"})
        # From another thread, a sync call reaches the router's loop.
        assert await anyio.to_thread.run_sync(forecast.invoke, {"city": "Oslo"}) == (
            "Oslo: snow, 3°C, for the next 3 day(s)"
        )
        await router.leave("weather")
        assert toolset.tools() == []
        gone = await toolset.tool("weather__forecast").ainvoke(
            {"name": "weather__forecast", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}
        )
        assert isinstance(gone, ToolMessage) and gone.status == "error" and "weather" in str(gone.content)


# -- LangChain's create_agent (the `langchain` package), through the middleware ------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_create_agent_offers_the_current_tools_beside_its_own(anyio_backend: str) -> None:
    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        toolset = LangChainTools(router)

        async def join_then_call(messages: list[BaseMessage]) -> AIMessage:
            await router.join("camera", InProcessPeer(camera()))
            return calls(("weather__forecast", {"city": "Oslo", "days": 0}), ("shout", {"text": "hi"}))

        model = scripted(
            join_then_call,
            lambda messages: calls(("camera__snapshot", {"room": "hall"})),
            say("done"),
        )
        agent = create_agent(model, tools=[shout], middleware=[toolset.middleware()])
        state = await agent.ainvoke({"messages": [("user", "Oslo?")]})

    assert model.offered[0] == ["shout", "weather__forecast", "weather__alerts"]
    assert "camera__snapshot" in model.offered[1]
    bad, own, picture = tool_messages(state)
    assert bad.status == "error" and "days" in str(bad.content)
    assert (own.status, own.content) == ("success", "HI")
    assert picture.status == "success" and picture.content[1]["type"] == "image"  # type: ignore[index]


def test_create_agent_runs_synchronously_on_the_blocking_router(tmp_path: Path) -> None:
    peers, options = search_group(tmp_path)
    with sync.Router(**options) as router:
        router.join_all(peers)
        toolset = LangChainTools(router)
        model = scripted(lambda messages: calls(("search", {"query": "die@web", "peer": "web"})), say("ok"))
        state = create_agent(model, middleware=[toolset.middleware()]).invoke(
            {"messages": [("user", "find")]}
        )

    [died] = tool_messages(state)
    assert died.status == "success" and "web failed first" in str(died.content)


# -- a synchronous invoke on the event loop's own thread --------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_create_agent_invoked_synchronously_on_the_routers_loop_fails_at_once_and_runs_nothing(
    backend: str, tmp_path: Path
) -> None:
    log = tmp_path / "web.log"

    async def main() -> None:
        async with Router(**ROUTER_OPTIONS) as router:
            await router.join("web", search_peer("web", log))
            toolset = LangChainTools(router)
            model = scripted(lambda messages: calls(("web__search", {"query": "mcp"})), say("done"))
            agent = create_agent(model, middleware=[toolset.middleware()])
            started = time.monotonic()
            # As in `async def main` or a notebook cell: the loop's thread runs the graph.
            with pytest.raises(UsageError, match="await"):
                agent.invoke({"messages": [("user", "find")]})
            assert time.monotonic() - started < 5
            await anyio.sleep(0.2)  # the loop runs again: the withdrawn call must not run now
            assert called(log) == []
            # The router still runs calls, and only those asked for.
            assert (await router.call("web__search", {"query": "mcp"})).text == "web: results for mcp"
            assert [request["arguments"] for request in called(log)] == [{"query": "mcp"}]

    within(30, backend, main)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_react_agent_running_two_calls_at_once_on_the_routers_loop_fails_at_once(backend: str) -> None:
    async def main() -> None:
        async with Router(**ROUTER_OPTIONS) as router:
            await router.join("weather", InProcessPeer(weather_station()))
            toolset = LangChainTools(router)
            model = scripted(
                lambda messages: calls(
                    ("weather__forecast", {"city": "Oslo"}), ("weather__alerts", {"region": "Norway"})
                ),
                say("done"),
            )
            with pytest.raises(UsageError, match="deadlock"):
                react_agent(toolset, model).invoke({"messages": [("user", "Oslo?")]})
            # The router still answers.
            assert (await router.call("weather__forecast", {"city": "Oslo"})).text.startswith("Oslo:")

    within(30, backend, main)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_agent_tool_named_as_a_router_tool_is_the_one_offered_and_run(
    anyio_backend: str, tmp_path: Path
) -> None:
    def search(text: str) -> str:
        """Search my own notes."""
        return f"notes about {text}"

    peers, options = search_group(tmp_path)
    async with Router(**options) as router:
        await router.join_all(peers)
        toolset = LangChainTools(router)
        assert "search" in [tool.name for tool in toolset.tools()]  # the group's function
        model = scripted(
            lambda messages: calls(("search", {"text": "mcp"})),
            lambda messages: calls(("search", {"text": "again"})),
            say("done"),
        )
        agent = create_agent(model, tools=[search], middleware=[toolset.middleware()])
        with pytest.warns(ShadowedToolWarning, match="'search'") as told:
            state = await agent.ainvoke({"messages": [("user", "find")]})

    assert len(told) == 1  # once, not at every model call
    for turn in model.bound:  # every turn: one `search`, the agent's, with its own parameters
        [offered] = [tool["function"] for tool in turn if tool["function"]["name"] == "search"]
        assert offered["description"] == "Search my own notes."
        assert list(offered["parameters"]["properties"]) == ["text"]
    first, second = tool_messages(state)
    assert (first.status, first.content) == ("success", "notes about mcp")
    assert (second.status, second.content) == ("success", "notes about again")
    assert not any(called(tmp_path / f"{name}.log") for name in peers)  # no peer was called


def test_an_agent_tool_named_as_a_router_tool_is_the_one_run_in_a_sync_agent(tmp_path: Path) -> None:
    def search(text: str) -> str:
        """Search my own notes."""
        return f"notes about {text}"

    peers, options = search_group(tmp_path)
    with sync.Router(**options) as router:
        router.join_all(peers)
        toolset = LangChainTools(router)
        model = scripted(lambda messages: calls(("search", {"text": "mcp"})), say("done"))
        agent = create_agent(model, tools=[search], middleware=[toolset.middleware()])
        with pytest.warns(ShadowedToolWarning):
            state = agent.invoke({"messages": [("user", "find")]})

    assert model.offered[0].count("search") == 1
    [found] = tool_messages(state)
    assert (found.status, found.content) == ("success", "notes about mcp")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_code_mode_is_two_tools_of_a_react_agent(anyio_backend: str) -> None:
    from mcpx_router.codemode import CodeMode

    program = 'f = weather.forecast(city="Oslo", days=2)\nf.split(":")[1].strip()'
    async with Router(**ROUTER_OPTIONS) as router, CodeMode(router.adapter) as code:
        await router.join("weather", InProcessPeer(weather_station()))
        toolset = LangChainTools(code)
        assert [tool.name for tool in toolset.tools()] == ["run_python", "find_tools"]
        model = scripted(
            lambda messages: calls(("find_tools", {"query": "weather forecast"})),
            lambda messages: calls(("run_python", {"code": program})),
            say("done"),
        )
        state = await react_agent(toolset, model).ainvoke({"messages": [("user", "Oslo?")]})
    found, ran = tool_messages(state)
    assert found.status == "success" and str(found.content).startswith("weather.forecast(city: str")
    assert ran.status == "success"
    assert ran.content == (
        'Calls made (1):\n1. weather.forecast(city="Oslo", days=2) -> ok\n\n'
        'Result: "snow, 3°C, for the next 2 day(s)"'
    )
