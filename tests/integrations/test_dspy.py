"""DSPy: the router's tools run by `dspy.ReAct` over real peers, with DSPy's own `DummyLM`.

`DummyLM` plays the scripted ReAct fields (`next_thought`, `next_tool_name`, `next_tool_args`,
then the extract step's `reasoning` and `answer`); its history holds every prompt ReAct sent, so
a test reads what the model was offered and what it observed. A script given as a generator may
act (a peer joins) when the LM takes its next answer. DSPy awaits on asyncio: async tests run there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mcpx_router import InProcessPeer, Router, sync
from mcpx_router.testing import docs_library, weather_station

from ..support.router_support import tiny
from .peers import ROUTER_OPTIONS, camera, search_group

if TYPE_CHECKING:
    import dspy
    from dspy.utils import DummyLM

    from mcpx_router.integrations.dspy import DSPyTools, RouterReAct, RouterTool

# Importing DSPy costs seconds of CPU: these tests run on one worker, which imports it, rather
# than every worker importing it to collect them.
pytestmark = pytest.mark.xdist_group("dspy")


@pytest.fixture(autouse=True)
def _dspy_imported() -> None:
    import dspy
    from dspy.utils import DummyLM

    from mcpx_router.integrations.dspy import DSPyTools, RouterReAct, RouterTool

    names = {"DummyLM": DummyLM, "DSPyTools": DSPyTools, "RouterReAct": RouterReAct, "RouterTool": RouterTool}
    globals().update(dspy=dspy, **names)


def step(tool: str, **args: Any) -> dict[str, Any]:
    return {"next_thought": f"I call {tool}.", "next_tool_name": tool, "next_tool_args": args}


def finish(answer: str) -> list[dict[str, Any]]:
    return [step("finish"), {"reasoning": "The observations say so.", "answer": answer}]


def prompt(lm: DummyLM, index: int) -> str:
    """The text of the `index`th request ReAct made (every message, images as their URLs)."""
    parts = []
    for message in lm.history[index]["messages"]:
        content = message["content"]
        parts += [content] if isinstance(content, str) else [str(part) for part in content]
    return "\n".join(parts)


def observations(prediction: dspy.Prediction) -> list[Any]:
    trajectory = prediction.trajectory
    return [trajectory[key] for key in sorted(trajectory) if key.startswith("observation_")]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_react_calls_stdio_and_in_process_peers_and_a_joined_peer_on_the_next_step(backend: str) -> None:
    with sync.Router(backend=backend, **ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        router.join("tiny", tiny())

        def script() -> Iterator[dict[str, Any]]:
            router.join("docs", docs_library())  # while the first step is chosen
            yield step("weather__forecast", city="Oslo")
            yield step("docs__search", query="install")
            yield step("tiny__echo", text="hi")
            yield from finish("Snow in Oslo.")

        lm = DummyLM([])
        lm.answers = script()
        agent = DSPyTools(router).react("question -> answer")
        assert isinstance(agent, RouterReAct)
        with dspy.context(lm=lm):
            prediction = agent(question="Weather in Oslo, and how do I install?")

    assert prediction.answer == "Snow in Oslo."
    assert "weather__forecast" in prompt(lm, 0) and "docs__search" not in prompt(lm, 0)
    assert "docs__search" in prompt(lm, 1)
    forecast, docs, echo, done = observations(prediction)
    assert forecast == "Oslo: snow, 3°C, for the next 3 day(s)"
    assert "python3 dev.py demo" in docs and echo == "hi" and done == "Completed."


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_react_acall_awaits_an_async_router(anyio_backend: str) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("tiny", tiny())
        toolset = DSPyTools(router)
        assert all(isinstance(tool, RouterTool) for tool in toolset.tools())
        lm = DummyLM(
            [step("weather__forecast", city="Paris"), step("tiny__echo", text="x"), *finish("Rain.")]
        )
        with dspy.context(lm=lm):
            prediction = await toolset.react("question -> answer").acall(question="Paris?")

    assert prediction.answer == "Rain."
    assert observations(prediction)[:2] == ["Paris: light rain, 14°C, for the next 3 day(s)", "x"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_bad_argument_is_the_routers_error_and_the_next_step_reads_it(anyio_backend: str) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        lm = DummyLM(
            [
                step("weather__forecast", city="Oslo", days="many"),
                step("weather__forecast", city="Oslo", days=2),
                *finish("Snow."),
            ]
        )
        with dspy.context(lm=lm):
            prediction = await DSPyTools(router).react("question -> answer").acall(question="Oslo?")

    bad, good, _ = observations(prediction)
    assert bad.startswith("Error:") and "days" in bad and "weather__forecast" in bad
    assert good == "Oslo: snow, 3°C, for the next 2 day(s)"
    assert bad in prompt(lm, 1)  # what the model reads on the next step


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_group_member_dies_and_another_answers(anyio_backend: str, tmp_path: Path) -> None:
    peers, options = search_group(tmp_path)
    async with Router(**options) as router:
        await router.join_all(peers)
        lm = DummyLM(
            [step("search", query="die@web", peer="web"), step("search", query="mcp"), *finish("ok")]
        )
        with dspy.context(lm=lm):
            prediction = await DSPyTools(router).react("question -> answer").acall(question="search")

    died, after, _ = observations(prediction)
    assert "web failed first" in died and "(served by web)" not in died
    assert "results for mcp" in after


def test_an_image_reaches_dspy_as_a_dspy_image() -> None:
    with sync.Router(**ROUTER_OPTIONS) as router:
        router.join("camera", camera())
        lm = DummyLM([step("camera__snapshot", room="hall"), *finish("A hall.")])
        with dspy.context(lm=lm):
            prediction = DSPyTools(router).react("question -> answer")(question="Show me the hall")

    text, image = observations(prediction)[0]
    assert "snapshot of hall" in text
    assert isinstance(image, dspy.Image) and image.url.startswith("data:image/png;base64,")
    # The next step's request carries it as an image part, as DSPy sends images to a model.
    parts = [
        part for message in lm.history[1]["messages"] for part in message["content"] if isinstance(part, dict)
    ]
    assert {"type": "image_url", "image_url": {"url": image.url}} in parts


def test_copies_of_the_program_share_the_live_tools(caplog: pytest.LogCaptureFixture) -> None:
    """DSPy's optimizers copy programs: a copy keeps calling the same router, and follows it."""
    with sync.Router(**ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        agent = DSPyTools(router).react("question -> answer")
        copy = agent.deepcopy()
        assert "Failed to deep copy" not in caplog.text
        router.join("docs", docs_library())
        lm = DummyLM([step("docs__search", query="names"), *finish("peer__tool")])
        with dspy.context(lm=lm):
            prediction = copy(question="How are tools named?")

    assert observations(prediction)[0] == "docs/architecture.md: tools are published as peer__tool."
    assert "docs__search" not in agent.tools  # the original refreshes on its own next step


GONE = "Error: 'docs__search' is not available now: peer 'docs' left. Call only the functions offered now."


def gone_and_unknown(leave: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """A model that calls docs__search, names it again once docs left, then names a tool that
    never was, and finishes."""
    yield step("docs__search", query="install")
    leave()  # while the second step is chosen
    yield step("docs__search", query="names")
    yield step("weather__forcast", city="Oslo")
    yield from finish("Snow.")


def assert_answered_by_the_router(prediction: dspy.Prediction, lm: DummyLM) -> None:
    found, gone, unknown, done = observations(prediction)
    assert "python3 dev.py demo" in found
    assert gone == GONE
    assert unknown.startswith("Error:") and "weather__forcast" in unknown and "weather__forecast" in unknown
    assert (done, prediction.answer) == ("Completed.", "Snow.")
    assert unknown in prompt(lm, 3)  # the next step reads it
    # The choice the model is given is DSPy's own, of the tools there are at each step.
    choices = [choice(prompt(lm, index)) for index in range(4)]
    assert "docs__search" in choices[1]  # docs left while this step was being chosen
    assert choices[2] == choices[3] == "weather__forecast; weather__alerts; finish"


def choice(text: str) -> str:
    """The tools a step's prompt says `next_tool_name` must be one of."""
    [line] = [line for line in text.splitlines() if line.startswith("{next_tool_name}")]
    return line.split("one of: ")[1]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_tool_that_left_or_never_was_is_the_routers_observation(backend: str) -> None:
    with sync.Router(backend=backend, **ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        router.join("docs", docs_library())
        lm = DummyLM([])
        lm.answers = gone_and_unknown(lambda: router.leave("docs"))
        with dspy.context(lm=lm):
            prediction = DSPyTools(router).react("question -> answer")(question="Install, then Oslo?")

    assert_answered_by_the_router(prediction, lm)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_acall_a_tool_that_left_or_never_was_is_the_routers_observation(anyio_backend: str) -> None:
    async with Router(**ROUTER_OPTIONS) as router:
        await router.join("weather", InProcessPeer(weather_station()))
        await router.join("docs", InProcessPeer(docs_library()))
        agent = DSPyTools(router).react("question -> answer")  # made while docs is here
        await router.leave("docs")
        lm = DummyLM(
            [step("docs__search", query="names"), step("weather__forcast", city="Oslo"), *finish("Snow.")]
        )
        with dspy.context(lm=lm):
            prediction = await agent.acall(question="Install, then Oslo?")

    gone, unknown, done = observations(prediction)
    assert gone == GONE
    assert unknown.startswith("Error:") and "weather__forcast" in unknown and "weather__forecast" in unknown
    assert (done, prediction.answer) == ("Completed.", "Snow.")
    assert gone in prompt(lm, 1) and unknown in prompt(lm, 2)
    assert choice(prompt(lm, 0)) == "weather__forecast; weather__alerts; finish"


def test_the_step_prompt_is_dspys_own() -> None:
    """What RouterReAct changes of a step (any name parses) does not change what the model reads."""
    with sync.Router(**ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        toolset = DSPyTools(router)
        sent = []
        for agent in (toolset.react("question -> answer"), dspy.ReAct("question -> answer", toolset.tools())):
            lm = DummyLM(finish("Snow."))
            with dspy.context(lm=lm):
                agent(question="Oslo?")
            sent.append(lm.history[0]["messages"])

    ours, theirs = sent
    assert ours == theirs


@pytest.mark.parametrize("adapter", ["ChatAdapter", "JSONAdapter", "XMLAdapter"])
def test_every_adapter_reads_a_name_that_is_no_tool_as_a_name(adapter: str) -> None:
    with sync.Router(**ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        agent = DSPyTools(router).react("question -> answer")
        chosen = getattr(dspy, adapter)()
        lm = DummyLM([step("weather__forcast", city="Oslo"), step("true"), *finish("x")], adapter=chosen)
        with dspy.context(lm=lm, adapter=chosen):
            prediction = agent(question="Oslo?")
        agent.load_state(agent.dump_state())  # as an optimizer saves and loads it

    nowcast, true, done = observations(prediction)
    assert nowcast.startswith("Error: there is no tool named 'weather__forcast'. Did you mean")
    assert true.startswith("Error: there is no tool named 'true'") and done == "Completed."


def test_a_step_that_cannot_be_read_ends_the_trajectory_not_the_program(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unreadable = {
        "next_thought": "x",
        "next_tool_name": "weather__forecast",
        "next_tool_args": "[[not an object",
    }
    with sync.Router(**ROUTER_OPTIONS) as router:
        router.join("weather", weather_station())
        # DSPy's ChatAdapter asks again in JSON: the model answers the same both times.
        lm = DummyLM([step("weather__forecast", city="Oslo"), unreadable, unreadable, finish("Snow.")[1]])
        with dspy.context(lm=lm):
            prediction = DSPyTools(router).react("question -> answer")(question="Oslo?")

    assert observations(prediction) == ["Oslo: snow, 3°C, for the next 3 day(s)"]
    assert prediction.answer == "Snow."  # extracted from the steps so far
    assert "the model's step could not be read" in caplog.text


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_react_in_code_mode_runs_one_program(anyio_backend: str) -> None:
    from mcpx_router.codemode import CodeMode

    async with Router(**ROUTER_OPTIONS) as router, CodeMode(router.adapter) as code:
        await router.join("weather", InProcessPeer(weather_station()))
        toolset = DSPyTools(code)
        assert [tool.name for tool in toolset.tools()] == ["run_python", "find_tools"]
        program = 'weather.forecast(city="Paris").split(",")[0]'
        lm = DummyLM([step("run_python", code=program), *finish("Light rain.")])
        with dspy.context(lm=lm):
            prediction = await toolset.react("question -> answer").acall(question="Paris?")
    assert prediction.answer == "Light rain."
    assert observations(prediction)[0] == (
        'Calls made (1):\n1. weather.forecast(city="Paris") -> ok\n\nResult: "Paris: light rain"'
    )
