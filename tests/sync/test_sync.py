"""The blocking facade (`mcpx_router.sync`) against real peers, from threads and from inside event loops.

Each test runs once with the facade's loop on asyncio and once on trio.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from openai import OpenAI
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpx_router import (
    AdapterClosedError,
    Outcome,
    PeerJoined,
    PeerUnavailableError,
    Router,
    RouterEvent,
    SessionPeer,
    ToolKey,
    UnknownPeerError,
    UnknownToolError,
    UsageError,
    sync,
)
from mcpx_router.sync.loop import run_chat, run_responses

from ..support._openai_replay import (
    CHAT,
    RESPONSES,
    chat_completion,
    function_call,
    output_message,
    replay_openai,
    response,
    tool_call,
)
from ..support.otel_support import named, parent_of, spans
from ..support.router_support import WAIT, child_pids, tiny


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> sync.Backend:
    value: sync.Backend = request.param
    return value


__all__ = ["spans"]  # the fixture


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcpx_router-")]


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    before = set(loop_threads())
    yield
    if set(loop_threads()) - before:
        # A router the test dropped unclosed stops its thread when collected. Only then: a full
        # collection costs seconds on a worker whose heap earlier tests have filled.
        gc.collect()
    assert set(loop_threads()) - before == set()


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def calc_server() -> MCPServer:
    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def thread() -> str:
        """The name of the thread the server's event loop runs in."""
        return threading.current_thread().name

    return server


def test_the_router_surface_blocks_and_answers(backend: sync.Backend) -> None:
    with sync.Router(backend=backend) as router:
        assert router.join("calc", calc_server()) == ("calc__add", "calc__thread")
        assert router.peers == ("calc",)
        assert [t["function"]["name"] for t in router.get_openai_tools()] == ["calc__add", "calc__thread"]
        assert [t["name"] for t in router.get_responses_tools()] == ["calc__add", "calc__thread"]
        assert [f["name"] for f in router.get_openai_functions()] == ["calc__add", "calc__thread"]
        assert router.resolve("calc__add") == ToolKey("calc", "add")
        assert router.public_name("calc", "add") == "calc__add"
        assert router.rejected_tools("calc") == {}
        assert router.why_unknown("calc__ad").startswith("there is no tool named 'calc__ad'. Did you mean")
        assert router.version >= 1 and [t.name for t in router.tools] == ["calc__add", "calc__thread"]
        assert router.status("calc").healthy
        answers = router.dispatch(
            [chat_call("c1", "calc__add", {"a": 1, "b": 2}), chat_call("c2", "nope", {})]
        )
        assert answers[0] == {"role": "tool", "tool_call_id": "c1", "content": "3"}
        assert answers[1]["content"].startswith("Error: there is no tool named 'nope'")
        one = router.execute_function_call(chat_call("c3", "calc__add", {"a": 2, "b": 2}))
        assert one == {"role": "tool", "tool_call_id": "c3", "content": "4"}
        # The in-process server runs in the Router's loop thread, not the caller's.
        assert router.call("calc__thread").text == f"mcpx_router-{backend}"
        with pytest.raises(UnknownToolError):
            router.resolve("calc__nope")
        with pytest.raises(UnknownPeerError):
            router.leave("ghost")
        router.leave("calc")
        assert router.peers == () and router.get_openai_tools() == ()


def test_a_stdio_peer_ends_with_close_and_everything_refuses_afterwards(backend: sync.Backend) -> None:
    before = child_pids()
    router = sync.Router(backend=backend)
    router.join("s", tiny())
    assert router.call("s__echo", {"text": "hi"}).text == "hi"
    assert len(child_pids() - before) == 1
    router.close()
    assert child_pids() - before == set()
    assert router.closed
    router.close()  # closing twice is fine
    for use in (
        lambda: router.call("s__echo", {"text": "x"}),
        lambda: router.get_openai_tools(),
        lambda: router.join("t", tiny()),
        lambda: router.__enter__(),
    ):
        with pytest.raises(AdapterClosedError, match="this Router was closed; create a new one"):
            use()


def test_many_threads_call_at_once(backend: sync.Backend) -> None:
    with sync.Router(backend=backend) as router:
        router.join("calc", calc_server())
        router.join("s", tiny())

        def work(n: int) -> list[str]:
            got = [router.call("calc__add", {"a": n, "b": i}).text for i in range(5)]
            got += [a["content"] for a in router.dispatch([chat_call(f"{n}", "s__echo", {"text": f"t{n}"})])]
            return got

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(work, range(16)))
    assert results == [[str(n + i) for i in range(5)] + [f"t{n}"] for n in range(16)]


@pytest.mark.parametrize("caller", ["asyncio", "trio"])
def test_it_works_from_inside_a_running_event_loop(backend: sync.Backend, caller: str) -> None:
    # As in a notebook: the calling thread runs an event loop of its own (Trio refuses to be
    # entered from a Trio thread, so that case goes through a helper thread).
    async def notebook_cell() -> tuple[str, str]:
        with sync.Router(backend=backend) as router:
            router.join("calc", calc_server())
            return router.call("calc__add", {"a": 20, "b": 22}).text, router.call("calc__thread").text

    assert anyio.run(notebook_cell, backend=caller) == ("42", f"mcpx_router-{backend}")


def test_the_openai_sync_client_drives_a_tool_calling_turn(backend: sync.Backend) -> None:
    script = [
        chat_completion({"content": None, "tool_calls": [tool_call("c1", "calc__add", '{"a": 2, "b": 40}')]}),
        chat_completion({"content": "42"}),
    ]
    with replay_openai(script) as replay, sync.Router(backend=backend) as router:
        router.join("calc", calc_server())
        client = OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "2 + 40?"}]
        while True:
            response = client.chat.completions.create(
                model="m", messages=messages, tools=router.get_openai_tools()
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            messages += router.dispatch(message.tool_calls)
        client.close()
    assert message.content == "42"
    first, second = replay.bodies(CHAT)
    assert [t["function"]["name"] for t in first["tools"]] == ["calc__add", "calc__thread"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "42"}


def test_the_adapter_adds_peers_with_their_options(backend: sync.Backend) -> None:
    with sync.OpenAIPeerToolAdapter(backend=backend, call_timeout=10) as adapter:
        assert adapter.add_peer("calc", calc_server(), include=["add"]) == ("calc__add",)
        assert adapter.add_peer("s", tiny(), call_timeout=0.2) == (
            "s__echo",
            "s__pid",
            "s__sleep",
            "s__add_tool",
            "s__remove_tool",
        )
        assert adapter.call("calc__add", {"a": 1, "b": 1}).text == "2"
        slow = adapter.call("s__sleep", {"seconds": 5})
        assert slow.error_type == "timeout" and "within 0.2 s" in slow.text
        assert not adapter.refresh_peer("calc")
        adapter.remove_peer("s")
        assert adapter.peers == ("calc",)
        with pytest.raises(PeerUnavailableError):
            adapter.add_peer("ghost", tiny("--no-such-flag"))
        assert adapter.peers == ("calc",)


def test_events_block_and_callbacks_cannot_reenter(backend: sync.Backend) -> None:
    refused: list[BaseException] = []
    router: sync.Router | None = None

    def on_event(event: RouterEvent) -> None:
        assert router is not None
        try:
            _ = router.peers
        except UsageError as exc:
            refused.append(exc)

    router = sync.Router(backend=backend, on_event=on_event)
    with router, router.events() as events:
        router.join("calc", calc_server())
        first = next(iter(events))
    assert isinstance(first, PeerJoined) and first.peer == "calc"
    assert len(refused) >= 1 and "own event loop thread" in str(refused[0])
    assert list(events) == []  # the iteration ends once the Router is closed


def test_a_session_opened_elsewhere_is_refused_with_what_to_do() -> None:
    async def refused() -> None:
        async with mcp.Client(calc_server()) as client:
            with sync.Router() as router:
                with pytest.raises(UsageError, match=r"give a spec .* and the facade opens the session"):
                    router.join("calc", client)
                with pytest.raises(UsageError, match="belongs to the event loop it was opened in"):
                    router.join_all({"calc": SessionPeer(client)})
                assert router.peers == ()

    anyio.run(refused)
    with sync.OpenAIPeerToolAdapter() as adapter, pytest.raises(UsageError, match="peer 'x'"):
        adapter.add_peer("x", SessionPeer(object()))  # type: ignore[arg-type]


def test_bad_options_are_refused_and_leave_no_thread() -> None:
    with pytest.raises(UsageError, match="backend must be 'asyncio' or 'trio'"):
        sync.Router(backend="curio")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="connect_timeout"):
        sync.Router(connect_timeout=-1)


def test_an_unclosed_router_is_closed_when_collected(backend: sync.Backend) -> None:
    before = child_pids()
    router = sync.Router(backend=backend)
    router.join("s", tiny())
    del router
    gc.collect()
    assert child_pids() - before == set()


@pytest.mark.parametrize("caller", ["plain", "trio"])
def test_the_callers_span_is_the_parent_of_the_call_span(
    backend: sync.Backend, caller: str, spans: InMemorySpanExporter
) -> None:
    # From a thread that runs Trio the call goes through a helper thread: the context goes along.
    def script() -> None:
        with sync.Router(backend=backend) as router:
            router.join("calc", calc_server())
            with trace.get_tracer("tests").start_as_current_span("script"):
                router.dispatch([chat_call("c1", "calc__add", {"a": 1, "b": 2})])

    async def in_trio() -> None:
        script()

    if caller == "trio":
        anyio.run(in_trio, backend="trio")
    else:
        script()
    [call_span] = named(spans, "execute_tool calc__add")
    parent = parent_of(spans, call_span)
    assert parent is not None and parent.name == "script"


names = st.sampled_from(["calc__add", "calc__thread", "calc__none", "calc", ""])
arguments = st.one_of(
    st.fixed_dictionaries({"a": st.integers(-5, 5), "b": st.integers(-5, 5)}),
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]), st.one_of(st.integers(), st.text(max_size=3), st.none())
    ),
)


@settings(max_examples=15, deadline=None)
@given(batch=st.lists(st.tuples(names, arguments), max_size=5))
def test_any_batch_is_answered_as_the_async_api_answers_it(batch: list[tuple[str, dict[str, Any]]]) -> None:
    calls = [chat_call(f"c{i}", name, args) for i, (name, args) in enumerate(batch)]

    async def answered_async() -> list[Any]:
        async with Router() as router:
            await router.join("calc", calc_server())
            return await router.dispatch(calls)

    with sync.Router() as router:
        router.join("calc", calc_server())
        answers = router.dispatch(calls)
    expected = anyio.run(answered_async)
    # the thread tool names the thread its loop runs in: the one difference there is
    assert [a["content"].replace("mcpx_router-asyncio", "MainThread") for a in answers] == [
        a["content"] for a in expected
    ]
    assert [a["tool_call_id"] for a in answers] == [f"c{i}" for i in range(len(batch))]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_sync_loop_runs_a_conversation(backend: sync.Backend, api: str, stream: bool) -> None:
    calls = [("c1", "calc__add", '{"a": 2, "b": 40}'), ("c2", "calc__nope", "{}")]
    if api == "chat":
        script = [
            chat_completion({"content": None, "tool_calls": [tool_call(*c) for c in calls]}),
            chat_completion({"content": "42"}),
        ]
    else:
        script = [response([function_call(*c) for c in calls]), response([output_message("42")])]
    with replay_openai(script) as replay, sync.Router(backend=backend) as router:
        router.join("calc", calc_server())
        with OpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client:
            if api == "chat":
                prompt: list[Any] = [{"role": "user", "content": "2 + 40?"}]
                result = run_chat(client, router, model="m", messages=prompt, stream=stream)
            else:
                result = run_responses(client, router, model="m", input="2 + 40?", stream=stream)
    assert (result.text, result.stopped, result.turns, result.tool_calls) == ("42", "answer", 2, 2)
    answers = [
        m for m in result.messages if m.get("role") == "tool" or m.get("type") == "function_call_output"
    ]
    texts = [a.get("content", a.get("output")) for a in answers]
    assert texts[0] == "42" and texts[1].startswith("Error: there is no tool named 'calc__nope'")
    second = replay.bodies(CHAT if api == "chat" else RESPONSES)[1]
    assert len(second["messages" if api == "chat" else "input"]) == len(result.messages) - 1


def test_closing_answers_the_calls_still_running_in_other_threads(
    backend: sync.Backend, tmp_path: Path
) -> None:
    before = child_pids()
    log = tmp_path / "received.jsonl"
    router = sync.Router(backend=backend)
    router.join("s", tiny(env={"TINY_SERVER_LOG": str(log)}))
    outcomes: list[Outcome] = []
    worker = threading.Thread(target=lambda: outcomes.append(router.call("s__sleep", {"seconds": 30})))
    worker.start()
    deadline = time.monotonic() + WAIT
    while not (log.exists() and '"tools/call"' in log.read_text()):  # the peer has the call
        assert time.monotonic() < deadline, "the call never reached the peer"
        time.sleep(0.02)
    router.close()
    worker.join(timeout=WAIT)
    assert not worker.is_alive()
    [outcome] = outcomes
    assert outcome.is_error and "peer 's' left" in outcome.text, outcome.text
    assert child_pids() - before == set()


def test_the_facades_take_groups_and_keep_statistics(backend: sync.Backend) -> None:
    with sync.Router(backend=backend, auto_groups=True) as router:
        router.join_all({"one": calc_server(), "two": calc_server()})
        assert [t["function"]["name"] for t in router.get_openai_tools()][:2] == ["add", "thread"]
        [answer] = router.dispatch([chat_call("c1", "add", {"a": 1, "b": 2, "peer": "two"})])
        assert answer["content"] == "3\n\n(served by two)"
        assert router.feedback("c1", ok=True) == ToolKey("two", "add")
        assert router.stats().tools[ToolKey("two", "add")].good == 1
        router.set_aliases({"plus": ["one/add"]})
        assert [g.name for g in router.groups()] == ["plus", "thread"]
    with sync.OpenAIPeerToolAdapter(backend=backend, stats=True) as adapter:
        adapter.add_peer("calc", calc_server())
        adapter.call("calc__add", {"a": 1, "b": 1})
        assert adapter.stats().peers["calc"].calls == 1
