"""What a call's answer says is true: not sent, sent and abandoned, cut short by a leave, sent and
lost; and a hung peer is noticed, while a merely slow one is not."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpx_router import (
    CallProgress,
    HealthChanged,
    HttpPeer,
    InProcessPeer,
    PeerJoined,
    PeerLeft,
    PeerSpec,
    Reconnect,
    Router,
    RouterEvent,
    StdioPeer,
)

from ..support.http_peer_server import build
from ..support.router_support import (
    ABANDONED_HTTP_STREAMS,
    HERE,
    WAIT,
    child_pids,
    http_server,
    next_event,
    tiny,
)

pytestmark = pytest.mark.anyio

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0)
HUNG_AFTER = 3.0
"""The health timeout where a peer that is running must not be taken for hung: a busy machine
answers a probe well within it; a stopped peer misses it whatever its length."""


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def received(log: Path, method: str) -> list[dict[str, Any]]:
    """What the tiny server logged, in the order it read it."""
    if not log.exists():
        return []
    messages = [json.loads(line) for line in log.read_text().splitlines()]
    return [m for m in messages if m["method"] == method]


# -- waiting for a slot -----------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(
    max_concurrency=st.integers(1, 3),
    durations=st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.4]), min_size=1, max_size=9),
    limit=st.sampled_from([0.1, 0.2, 0.3, 0.5]),
)
async def test_each_answer_says_truthfully_whether_the_call_reached_the_peer(
    max_concurrency: int, durations: list[float], limit: float
) -> None:
    """Calls queue for `max_concurrency` slots: "not sent" never reached the server, "abandoned"
    and a result did. The server logs every `tools/call` as it reads it."""
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "received.jsonl"
        peer = tiny(env={"TINY_SERVER_LOG": str(log)}, max_concurrency=max_concurrency)
        async with Router() as router:
            await router.join("s", peer)
            calls = [
                chat_call(f"c{i}", "s__sleep", {"seconds": seconds, "tag": f"c{i}"})
                for i, seconds in enumerate(durations)
            ]
            answers = await router.dispatch(calls, call_timeout=limit)
            # The server reads its input in order: once this is answered, every request sent
            # before it has been read and logged.
            assert (await router.call("s__echo", {"text": "sync"}, call_timeout=WAIT)).text == "sync"
        arrived = {m["params"]["arguments"].get("tag") for m in received(log, "tools/call")}
    busy = "Error: s__sleep was not sent (peer 's' was busy: "
    abandoned = f"Error: s__sleep did not answer within {limit:g} s; the call was abandoned"
    assert [a["tool_call_id"] for a in answers] == [c["id"] for c in calls]
    for answer in answers:
        text, tag = answer["content"], answer["tool_call_id"]
        if text.startswith(busy):
            event("not sent")
            assert tag not in arrived, text
            assert text.endswith("calls already running); it is safe to retry") or text.endswith(
                "1 call already running); it is safe to retry"
            )
        elif text == abandoned:
            event("abandoned")
            assert tag in arrived, text
        else:
            event("answered")
            assert text == "slept" and tag in arrived, text


async def test_a_queued_call_is_not_sent_when_its_time_runs_out_in_the_queue(tmp_path: Path) -> None:
    """Two long calls hold both slots; three more queue behind them with a short timeout. The long
    calls' own time is far longer than the queue's, so no slot frees before the queued calls give
    up, however slow the machine."""
    log = tmp_path / "received.jsonl"
    holding: list[str] = []
    async with Router() as router:
        await router.join("s", tiny(env={"TINY_SERVER_LOG": str(log)}, max_concurrency=2))

        async def hold_both_slots() -> None:
            calls = [chat_call(f"h{i}", "s__sleep", {"seconds": 3, "tag": f"h{i}"}) for i in range(2)]
            holding.extend(a["content"] for a in await router.dispatch(calls, call_timeout=WAIT))

        async with anyio.create_task_group() as group:
            group.start_soon(hold_both_slots)
            with anyio.fail_after(WAIT):
                # Another process writes the log: there is no event to wait on.
                while len(received(log, "tools/call")) < 2:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            queued = [chat_call(f"q{i}", "s__sleep", {"seconds": 3, "tag": f"q{i}"}) for i in range(3)]
            answers = [a["content"] for a in await router.dispatch(queued, call_timeout=0.3)]
        assert (await router.call("s__echo", {"text": "sync"})).text == "sync"
    not_sent = (
        "Error: s__sleep was not sent (peer 's' was busy: 2 calls already running); it is safe to retry"
    )
    assert answers == [not_sent] * 3
    assert holding == ["slept"] * 2
    arrived = [
        m["params"]["arguments"]["tag"] for m in received(log, "tools/call") if m["params"]["name"] == "sleep"
    ]
    assert sorted(arrived) == ["h0", "h1"]


# -- leaving while a call runs ----------------------------------------------------------------


@asynccontextmanager
async def a_peer(kind: str) -> AsyncIterator[tuple[PeerSpec | object, str]]:
    """A peer of each kind, with a long call that reports progress once it runs on the server."""
    if kind == "in-process":
        yield InProcessPeer(build(None)), "slow"
    elif kind == "stdio":
        yield tiny(), "sleep"
    else:
        async with http_server() as server:
            yield HttpPeer(server.url, mode=kind.removeprefix("http-")), "slow"


KINDS = ["in-process", "stdio", "http-auto", "http-legacy"]


@settings(max_examples=25, deadline=None)
@given(
    durations=st.lists(st.sampled_from([0.0, 0.05, 0.2, 5.0]), min_size=1, max_size=6),
    leave_after=st.integers(0, 6),
    max_concurrency=st.sampled_from([None, 1, 2]),
)
async def test_calls_around_a_leave_say_truthfully_what_became_of_them(
    durations: list[float], leave_after: int, max_concurrency: int | None
) -> None:
    """The peer leaves after `leave_after` progress notifications of its calls (or once all are
    answered): every answer is a result that reached the server, "left while the call ran", or
    a refusal of a call that never reached it."""
    answers: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "received.jsonl"
        async with Router() as router:
            await router.join("s", tiny(env={"TINY_SERVER_LOG": str(log)}, max_concurrency=max_concurrency))
            calls = [
                chat_call(f"c{i}", "s__sleep", {"seconds": seconds, "tag": f"c{i}"})
                for i, seconds in enumerate(durations)
            ]
            finished = anyio.Event()
            with router.events() as events, anyio.fail_after(WAIT):
                async with anyio.create_task_group() as tg:

                    async def run() -> None:
                        answers.extend(await router.dispatch(calls))
                        finished.set()

                    async def count_progress(scope: anyio.CancelScope) -> None:
                        seen = 0
                        async for update in events:
                            seen += isinstance(update, CallProgress)
                            if seen >= leave_after:
                                break
                        scope.cancel()

                    async def until_finished(scope: anyio.CancelScope) -> None:
                        await finished.wait()
                        scope.cancel()

                    tg.start_soon(run)
                    if leave_after:
                        async with anyio.create_task_group() as due:
                            due.start_soon(count_progress, due.cancel_scope)
                            due.start_soon(until_finished, due.cancel_scope)
                    await router.leave("s")
        # The server has read every request written to it before it exited.
        arrived = {m["params"]["arguments"].get("tag") for m in received(log, "tools/call")}
    left = "Error: s__sleep: peer 's' left while the call ran; it may or may not have taken effect"
    refused = (
        "Error: s__sleep: peer 's' has left; the call was not sent",
        "Error: 's__sleep' is not available now: peer 's' left. Call only the functions offered now.",
    )
    assert [a["tool_call_id"] for a in answers] == [c["id"] for c in calls]
    for answer in answers:
        text, tag = answer["content"], answer["tool_call_id"]
        if text == left:
            event("left while running")
        elif text in refused:
            event("not sent")
            assert tag not in arrived, text
        else:
            event("answered")
            assert text == "slept" and tag in arrived, text


@pytest.mark.parametrize("kind", KINDS)
@ABANDONED_HTTP_STREAMS[0]
@ABANDONED_HTTP_STREAMS[1]
async def test_a_call_cut_short_by_leave_is_answered_left(kind: str) -> None:
    seen: list[RouterEvent] = []
    async with a_peer(kind) as (spec, tool), Router(on_event=seen.append) as router:
        await router.join("p", spec)
        with router.events() as events:
            async with anyio.create_task_group() as tg:

                async def leave_once_running() -> None:
                    await next_event(events, CallProgress)  # it runs on the server
                    await router.leave("p")

                tg.start_soon(leave_once_running)
                with anyio.fail_after(WAIT):
                    outcome = await router.call(f"p__{tool}", {"seconds": 30})
        assert outcome.text == (
            f"Error: p__{tool}: peer 'p' left while the call ran; it may or may not have taken effect"
        )
        # Leaving is not losing: no HealthChanged on the way out.
        kinds = [type(e) for e in seen if not isinstance(e, CallProgress)]
        assert kinds == [PeerJoined, PeerLeft]
        after = await router.call(f"p__{tool}", {"seconds": 0})
        assert (
            after.text
            == f"Error: 'p__{tool}' is not available now: peer 'p' left. Call only the functions offered now."
        )


@pytest.mark.parametrize("kind", KINDS)
@ABANDONED_HTTP_STREAMS[0]
@ABANDONED_HTTP_STREAMS[1]
async def test_a_call_running_when_the_router_closes_is_answered_left(kind: str) -> None:
    answers: list[str] = []
    async with a_peer(kind) as (spec, tool), anyio.create_task_group() as tg:
        async with Router() as router:
            await router.join("p", spec)
            with router.events() as events:

                async def call() -> None:
                    answers.append((await router.call(f"p__{tool}", {"seconds": 30})).text)

                tg.start_soon(call)
                await next_event(events, CallProgress)
        # The block ended with the call still running on the peer.
    assert answers == [
        f"Error: p__{tool}: peer 'p' left while the call ran; it may or may not have taken effect"
    ]


# -- hung peers -------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


MODERN_STDIO = StdioPeer(sys.executable, [str(HERE / "stdio_peer_server.py")])


@pytest.mark.parametrize(
    ("spec", "probe"),
    [(tiny(), "ping"), (MODERN_STDIO, "tools/list")],
    ids=["legacy-ping", "2026-listing"],
)
async def test_a_stopped_stdio_peer_is_hung_and_is_restarted_under_the_same_names(
    spec: StdioPeer, probe: str
) -> None:
    long_call = "s__sleep" if probe == "ping" else "s__slow"
    if probe == "tools/list":
        # This server speaks 2026-07-28, which has no ping: a listing is its probe.
        params = mcp.StdioServerParameters(command=spec.command, args=list(spec.args))
        async with mcp.Client(params) as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
    async with Router(reconnect=FAST, health_interval=0.1, health_timeout=HUNG_AFTER) as router:
        names = await router.join("s", spec)
        pid = int((await router.call("s__pid", {})).text)
        try:
            with router.events() as events:
                async with anyio.create_task_group() as tg:

                    async def stop_once_running() -> None:
                        await next_event(events, CallProgress)  # the call is running on the server
                        os.kill(pid, signal.SIGSTOP)

                    tg.start_soon(stop_once_running)
                    with anyio.fail_after(WAIT):
                        in_flight = await router.call(long_call, {"seconds": 30})
                lost = await next_event(events, HealthChanged)
                assert not lost.healthy and lost.attempt == 0
                hung = f"TimeoutError: peer 's' did not answer a probe within {HUNG_AFTER:g} s; it seems hung"
                assert lost.error == hung
                back = await next_event(events, HealthChanged)
        finally:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # only if the test failed before the Router ended it
        assert in_flight.text.startswith(
            f"Error: {long_call}: the call was sent, but the connection to peer 's' failed ("
        ) and in_flight.text.endswith("before it answered; it may or may not have taken effect")
        assert back.healthy and back.version > lost.version
        assert [t.name for t in router.adapter.tools_of("s")] == list(names)
        new_pid = int((await router.call("s__pid", {})).text)
        # The hung process was ended (SIGKILL reaches a stopped process) and reaped.
        assert new_pid != pid and pid not in child_pids() and not _alive(pid)


async def test_a_timed_out_call_makes_a_stopped_peer_be_probed() -> None:
    """With no periodic probe, a call that times out is what makes the Router look."""
    async with Router(reconnect=FAST, health_interval=None, health_timeout=0.5) as router:
        await router.join("s", tiny())
        pid = int((await router.call("s__pid", {})).text)
        try:
            with router.events() as events:
                os.kill(pid, signal.SIGSTOP)
                outcome = await router.call("s__echo", {"text": "x"}, call_timeout=0.3)
                lost = await next_event(events, HealthChanged)
                back = await next_event(events, HealthChanged)
        finally:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert outcome.text == "Error: s__echo did not answer within 0.3 s; the call was abandoned"
        assert not lost.healthy and lost.error is not None and "it seems hung" in lost.error
        assert back.healthy and (await router.call("s__echo", {"text": "y"})).text == "y"


async def test_a_slow_call_is_not_a_hung_peer(tmp_path: Path) -> None:
    """A peer busy with a long call (and one that timed out) still answers its pings."""
    log = tmp_path / "received.jsonl"
    seen: list[RouterEvent] = []
    async with Router(health_interval=0.1, health_timeout=HUNG_AFTER, on_event=seen.append) as router:
        await router.join("s", tiny(env={"TINY_SERVER_LOG": str(log)}))
        pid = int((await router.call("s__pid", {})).text)
        pings_before = len(received(log, "ping"))
        slow = await router.call("s__sleep", {"seconds": 1.5})
        pings_during = len(received(log, "ping")) - pings_before
        timed_out = await router.call("s__sleep", {"seconds": 5}, call_timeout=0.3)
        # A timed-out call has the peer probed too; the probe is answered.
        assert (await router.call("s__echo", {"text": "sync"})).text == "sync"
        assert slow.text == "slept" and pings_during >= 3
        assert timed_out.text == "Error: s__sleep did not answer within 0.3 s; the call was abandoned"
        assert router.status("s").healthy and int((await router.call("s__pid", {})).text) == pid
    assert not any(isinstance(e, HealthChanged) for e in seen)


# -- connections that fail ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@ABANDONED_HTTP_STREAMS[0]
@ABANDONED_HTTP_STREAMS[1]
async def test_a_call_to_a_stopped_http_server_says_it_was_not_sent(mode: str) -> None:
    """Before the Router has noticed the server is gone, a call cannot connect: it was not sent."""
    async with http_server() as server, Router(reconnect=FAST, health_interval=None) as router:
        await router.join("web", HttpPeer(server.url, mode=mode))
        await server.kill()
        outcome = await router.call("web__echo", {"text": "x"})
    not_sent = "Error: web__echo: the call was not sent: the connection to peer 'web' failed ("
    noticed = "Error: 'web__echo' is not available now: peer 'web' is unavailable (its connection was lost"
    if mode == "legacy":
        # Nothing else talks to the server: the call is what finds it gone.
        assert outcome.text.startswith(not_sent) and outcome.text.endswith("; it is safe to retry")
    else:
        # A broken listen stream may have had the loss confirmed first.
        assert outcome.text.startswith((not_sent, noticed)), outcome.text
