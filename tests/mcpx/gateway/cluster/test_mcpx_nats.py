"""Gateways sharing topics through a real NATS server: three gateway processes, one topic.

Select them with `-m nats`. The gateways are subprocesses (asyncio: the NATS mode's only
backend); the participants and Routers run in the test on asyncio and on trio.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.server.mcpserver import MCPServer

from mcpx_router import Outcome, PeerLeft, Router
from mcpx_router.mcpx import MCPxClusterError, TopicClient, run_gateway, serve_participant, static_token
from mcpx_router.mcpx.gateway._gateway_state import GatewayConfig

from ....support.mcpx_nats import GatewayProcess, NatsServer, gateways, nats_server, token
from ....support.mcpx_router_support import FAST, blocking_server, call
from ....support.mcpx_support import eventually, is_error, is_presence, make_server, raw_peer
from ....support.router_support import WAIT, free_port, next_event

pytestmark = [pytest.mark.anyio, pytest.mark.nats]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NatsServer, list[GatewayProcess]]]:
    """One NATS server and three gateways, shared by the tests that leave them running."""
    tmp = tmp_path_factory.mktemp("nats")
    with nats_server(tmp / "jetstream") as server, gateways(server.url, tmp, rate=50) as procs:
        yield server, procs


def new_topic() -> str:
    return f"room-{uuid.uuid4().hex[:8]}"


def starting_at(urls: Sequence[str], first: int) -> list[str]:
    """The gateway list a client is given, starting with gateway `first`."""
    return [*urls[first:], *urls[:first]]


async def roster(url: str, topic: str) -> set[str]:
    """Who a gateway lists as present in `topic` (REST, with a signed token)."""
    headers = {"Authorization": f"Bearer {token('observer', topic)}"}
    async with httpx2.AsyncClient() as client:
        response = await client.get(f"{url}/v0/topics/{topic}/participants", headers=headers)
    response.raise_for_status()
    return {p["id"] for p in response.json()["participants"]}


async def history(url: str, topic: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token('observer', topic)}"}
    async with httpx2.AsyncClient() as client:
        response = await client.get(f"{url}/v0/topics/{topic}/history", headers=headers)
    response.raise_for_status()
    items: list[dict[str, Any]] = response.json()["history"]
    return items


async def same_roster_everywhere(urls: Sequence[str], topic: str, expected: set[str]) -> None:
    async def all_agree() -> bool:
        return all([await roster(url, topic) == expected for url in urls])

    with anyio.fail_after(WAIT):
        while True:
            if await all_agree():
                return
            await anyio.sleep(0.05)


# -- one cluster, left running ------------------------------------------------------------------


async def test_participants_on_three_gateways_call_each_other(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    alice_server, bob_server = MCPServer("alice"), MCPServer("bob")
    async with Router() as alice, Router() as bob:

        @alice_server.tool()
        def plan(goal: str) -> str:
            """Make a plan."""
            return f"plan for {goal}: research, then write"

        @bob_server.tool()
        async def research(goal: str) -> str:
            """Research a goal, with the plan alice makes for it."""
            outcome = await bob.call("alice__plan", {"goal": goal})
            return f"bob researched ({outcome.text})"

        carol = TopicClient(
            starting_at(urls, 2), topic, "carol", token_provider=static_token(token("carol", topic))
        )
        async with serve_participant(carol, make_server("carol")), carol:
            alice_topic = await alice.join_topic(
                starting_at(urls, 0),
                topic,
                "alice",
                serve=alice_server,
                token_provider=static_token(token("alice", topic)),
            )
            bob_topic = await bob.join_topic(
                starting_at(urls, 1),
                topic,
                "bob",
                serve=bob_server,
                token_provider=static_token(token("bob", topic)),
            )
            assert [alice_topic.client.gateway_url, bob_topic.client.gateway_url, carol.gateway_url] == urls
            await eventually(
                lambda: {t.name for t in alice.tools} == {"bob__research", "carol__add", "carol__slow_echo"},
                WAIT,
            )
            await same_roster_everywhere(urls, topic, {"alice", "bob", "carol"})
            # alice (gateway 1) calls bob (gateway 2), whose tool calls alice back; and carol (gateway 3)
            answers = await alice.dispatch(
                [call("bob__research", {"goal": "a release"}), call("carol__add", {"a": 20, "b": 22}, "c2")]
            )
            assert [a["content"] for a in answers] == [
                "bob researched (plan for a release: research, then write)",
                "42",
            ]
            [answer] = await bob.dispatch([call("carol__add", {"a": 1, "b": 2})])
            assert answer["content"] == "3"
        await eventually(lambda: "carol" not in alice.peers, WAIT)
        await same_roster_everywhere(urls, topic, {"alice", "bob"})


async def test_broadcasts_reach_everyone_on_every_gateway_exactly_once(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    ids = ["p0", "p1", "p2"]
    async with (
        raw_peer(urls[0], topic, "p0", token=token("p0", topic)) as p0,
        raw_peer(urls[1], topic, "p1", token=token("p1", topic)) as p1,
        raw_peer(urls[2], topic, "p2", token=token("p2", topic)) as p2,
    ):
        await same_roster_everywhere(urls, topic, set(ids))
        for peer in (p0, p1, p2):
            await peer.send_mcp(
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": peer.participant_id}}
            )
        for peer in (p0, p1, p2):
            frames = await peer.frames_within(1.0)
            heard = sorted(f["from"] for f in frames if f.get("kind") == "mcp")
            assert heard == sorted(set(ids) - {peer.participant_id})
    # and the history every gateway serves holds each broadcast once, in one order
    orders = [[e["from"] for e in await history(url, topic) if e["kind"] == "mcp"] for url in urls]
    assert orders[0] == orders[1] == orders[2] and sorted(orders[0]) == ids


async def test_a_participant_sending_as_another_is_refused_across_gateways(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    async with (
        raw_peer(urls[0], topic, "mallory", token=token("mallory", topic)) as mallory,
        raw_peer(urls[1], topic, "alice", token=token("alice", topic)) as alice,
        raw_peer(urls[2], topic, "bob", token=token("bob", topic)) as bob,
    ):
        await same_roster_everywhere(urls, topic, {"mallory", "alice", "bob"})
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        forged = await mallory.send_mcp(request, to=("alice",), sender="bob")
        refused = await mallory.recv_until(is_error("from_mismatch"))
        assert refused["correlation_id"] == forged["id"]
        sent = await mallory.send_mcp(request, to=("nobody",))
        unknown = await mallory.recv_until(is_error("unknown_recipient"))
        assert unknown["correlation_id"] == sent["id"] and "nobody" in unknown["payload"]["message"]
        # mallory may still talk to alice as herself: that one arrives, and only that one
        honest = await mallory.send_mcp(request, to=("alice",))
        arrived = await alice.recv_mcp()
        assert arrived["id"] == honest["id"] and arrived["from"] == "mallory"
        assert not [f for f in await alice.frames_within(0.3) if f.get("kind") == "mcp"]
        assert not [f for f in await bob.frames_within(0.1) if f.get("kind") == "mcp"]


async def test_one_token_is_accepted_by_every_gateway_and_the_newest_connection_wins(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    shared = token("x", topic)
    async with raw_peer(urls[2], topic, "watcher", token=token("watcher", topic)) as watcher:
        async with raw_peer(urls[0], topic, "x", token=shared) as first:
            await watcher.recv_until(is_presence("join", "x"))
            async with raw_peer(urls[1], topic, "x", token=shared) as second:
                assert await first.close_code() == 4000  # replaced by the connection on gateway 2
                await watcher.recv_until(is_presence("join", "x"))  # the successor's join
                await same_roster_everywhere(urls, topic, {"watcher", "x"})
                frames = await watcher.frames_within(0.5)
                assert not [f for f in frames if is_presence("leave", "x")(f)]  # no leave in between
                # the same token on the third gateway replaces it again
                async with raw_peer(urls[2], topic, "x", token=shared):
                    assert await second.close_code() == 4000
                    await same_roster_everywhere(urls, topic, {"watcher", "x"})
            await watcher.recv_until(is_presence("leave", "x"))
        await same_roster_everywhere(urls, topic, {"watcher"})


async def test_the_rate_limit_holds_for_frames_to_another_gateway(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    async with (
        raw_peer(urls[0], topic, "flood", token=token("flood", topic)) as flood,
        raw_peer(urls[1], topic, "target", token=token("target", topic)) as target,
    ):
        await same_roster_everywhere(urls, topic, {"flood", "target"})
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
        for _ in range(150):  # the gateways allow 50 a second, bursts of 100
            await flood.send_mcp(note, to=("target",))
        refused = [f for f in await flood.frames_within(1.0) if is_error("rate_limited")(f)]
        received = [f for f in await target.frames_within(1.0) if f.get("kind") == "mcp"]
        assert refused and len(refused) + len(received) == 150


# -- clusters that the tests break --------------------------------------------------------------


async def test_a_gateway_killed_mid_call_answers_and_its_participants_move(tmp_path: Path) -> None:
    with nats_server(tmp_path / "jetstream") as server, gateways(server.url, tmp_path) as procs:
        urls = [g.url for g in procs]
        topic = new_topic()
        started = anyio.Event()

        def tokens(pid: str) -> Any:
            return static_token(token(pid, topic))

        worker = TopicClient(
            starting_at(urls, 1), topic, "worker", token_provider=tokens("worker"), reconnect=FAST
        )
        doomed = TopicClient(starting_at(urls, 1), topic, "doomed", token_provider=tokens("doomed"))
        async with (
            Router(reconnect=FAST) as router,
            serve_participant(worker, blocking_server("worker", started)),
            worker,
            serve_participant(doomed, make_server("doomed")),
            doomed,
        ):
            membership = await router.join_topic(urls, topic, "host", token_provider=tokens("host"))
            await eventually(
                lambda: {t.name.split("__")[0] for t in router.tools} == {"worker", "doomed"}, WAIT
            )
            names = sorted(t.name for t in router.tools)
            answers: list[Any] = []

            async def run_call() -> None:
                answers.extend(await router.dispatch([call("worker__block", {})]))

            with router.events() as events:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_call)
                    await started.wait()
                    procs[1].kill()  # the gateway holding worker and doomed dies mid-call
                # the call is answered (the worker reconnected elsewhere: the call may not have run)
                assert answers and answers[0]["content"].startswith("Error:")
                # doomed does not reconnect: every gateway drops it within the heartbeats' expiry
                left = await next_event(events, PeerLeft, lambda e: e.peer == "doomed")
                assert "left topic" in left.reason
            await eventually(lambda: worker.gateway_url == urls[2] and "worker" in router.peers, WAIT)
            await eventually(
                lambda: sorted(t.name for t in router.tools) == [n for n in names if "doomed" not in n], WAIT
            )
            [answer] = await router.dispatch([call("worker__add", {"a": 20, "b": 22})])
            assert answer["content"] == "42"
            await same_roster_everywhere([urls[0], urls[2]], topic, {"host", "worker"})
            # the Router's own gateway dies: it moves to the next one and reconciles
            procs[0].kill()
            await eventually(lambda: membership.client.gateway_url == urls[2] and membership.connected, WAIT)
            await eventually(lambda: "worker" in router.peers and bool(router.tools), WAIT)
            # The worker's session through the lost connection may still be the one listed until
            # the Router has reconciled: a call on it is answered with the connection's failure,
            # and calls succeed once the worker is reached through the new gateway.
            with anyio.fail_after(WAIT):
                while True:
                    [answer] = await router.dispatch([call("worker__add", {"a": 1, "b": 1})])
                    if answer["content"] == "2":
                        break
                    assert "peer 'worker'" in answer["content"], answer["content"]
                    await anyio.sleep(0.1)


async def test_a_frame_for_a_participant_that_left_for_good_is_refused_at_once(tmp_path: Path) -> None:
    """A participant that closed its connection left for good: a frame for it is refused at once,
    not after the hand-over time (frames wait only for participants that move)."""
    handover = 4 * WAIT  # a refusal within WAIT is not the hand-over running out
    with (
        nats_server(tmp_path / "jetstream") as server,
        gateways(server.url, tmp_path, handover=handover) as procs,
    ):
        urls = [g.url for g in procs]
        topic = new_topic()
        request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        async with raw_peer(urls[0], topic, "sender", token=token("sender", topic)) as sender:
            async with raw_peer(urls[2], topic, "leaver", token=token("leaver", topic)):
                await sender.recv_until(is_presence("join", "leaver"))
            await sender.recv_until(is_presence("leave", "leaver"))
            gone = await sender.send_mcp(request, to=("leaver",))
            refused = await sender.recv_until(is_error("unknown_recipient"), WAIT)
            assert refused["correlation_id"] == gone["id"]


async def test_a_gateway_killed_under_traffic_delivers_no_frame_twice(tmp_path: Path) -> None:
    """Frames for the participants of a gateway that dies (SIGKILL: no leave, no answers) are sent
    again only when NATS says nobody took them: each reaches its recipient once, where it
    reconnects, or is refused; none arrives twice."""
    with (
        nats_server(tmp_path / "jetstream") as server,
        gateways(server.url, tmp_path, handover=WAIT) as procs,
    ):
        urls = [g.url for g in procs]
        topic = new_topic()

        def note(n: int) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}

        async with raw_peer(urls[0], topic, "sender", token=token("sender", topic)) as sender:
            async with raw_peer(urls[1], topic, "target", token=token("target", topic)) as target:
                await same_roster_everywhere(urls, topic, {"sender", "target"})
                for n in range(10):
                    await sender.send_mcp(note(n), to=("target",))
                before = [(await target.recv_mcp())["payload"]["params"]["n"] for _ in range(10)]
                assert before == list(range(10))
                procs[1].kill()
                sent = [(await sender.send_mcp(note(n), to=("target",)))["id"] for n in range(10, 30)]
            async with raw_peer(urls[2], topic, "target", token=token("target", topic)) as again:
                received: list[str] = []
                refused: list[str] = []

                async def read_target() -> None:
                    while True:
                        frame = await again.recv(WAIT)
                        if frame.get("kind") == "mcp":
                            received.append(frame["id"])

                async def read_sender() -> None:
                    while True:
                        frame = await sender.recv(WAIT)
                        if is_error("unknown_recipient")(frame):
                            refused.append(frame["correlation_id"])

                async with anyio.create_task_group() as tg:
                    tg.start_soon(read_target)
                    tg.start_soon(read_sender)
                    await eventually(lambda: set(received) | set(refused) >= set(sent), WAIT)
                    await anyio.sleep(0.5)  # a duplicate would come now
                    tg.cancel_scope.cancel()
        assert len(received) == len(set(received)), "a frame arrived twice"
        assert not set(received) & set(refused), "a frame was delivered and refused"
        assert set(received) <= set(sent)


def recording_server(name: str, received: list[str]) -> MCPServer:
    """A server whose `record` tool notes each tag it runs with."""
    server = MCPServer(name)

    @server.tool()
    def record(tag: str) -> str:
        """Record a tag and return it."""
        received.append(tag)
        return tag

    return server


async def test_rolling_restarts_under_load_lose_no_call_and_every_answer_is_true(tmp_path: Path) -> None:
    """The three gateways are stopped and started again one after another (as an operator rolls
    out a release) while a host keeps calls flowing to a worker on each gateway. Every call is
    answered: a result means it ran once, "not sent" means its worker never saw it, and no call
    runs twice; a call that ran is never left unanswered ("timeout"): the frames of a participant
    moving to another gateway wait for it there. After each restart every worker answers again."""
    with nats_server(tmp_path / "jetstream") as server, gateways(server.url, tmp_path) as procs:
        urls = [g.url for g in procs]
        topic = new_topic()
        received: list[str] = []
        outcomes: list[tuple[str, Outcome]] = []
        names = [f"w{i}" for i in range(3)]
        async with Router(reconnect=FAST, call_timeout=5.0) as router, AsyncExitStack() as stack:
            for i, name in enumerate(names):
                worker = TopicClient(
                    starting_at(urls, i),
                    topic,
                    name,
                    token_provider=static_token(token(name, topic)),
                    reconnect=FAST,
                )
                await stack.enter_async_context(serve_participant(worker, recording_server(name, received)))
                await stack.enter_async_context(worker)
            await router.join_topic(urls, topic, "host", token_provider=static_token(token("host", topic)))
            await eventually(lambda: {f"{n}__record" for n in names} <= {t.name for t in router.tools}, WAIT)
            stop = anyio.Event()
            count = 0

            async def send(name: str) -> Outcome:
                nonlocal count
                count += 1
                tag = f"{name}-{count}"
                outcome = await router.call(f"{name}__record", {"tag": tag})
                outcomes.append((tag, outcome))
                return outcome

            async def load(name: str) -> None:
                while not stop.is_set():
                    if (await send(name)).is_error:
                        await anyio.sleep(0.05)

            async def every_worker_answers() -> None:
                for name in names:
                    with anyio.fail_after(WAIT):
                        while True:
                            if not (await send(name)).is_error:
                                break
                            await anyio.sleep(0.05)

            async with anyio.create_task_group() as group:
                for name in names:
                    group.start_soon(load, name)
                await every_worker_answers()
                for proc in procs:
                    await anyio.to_thread.run_sync(proc.stop)  # the host keeps serving its calls meanwhile
                    await anyio.to_thread.run_sync(proc.start)
                    await every_worker_answers()
                stop.set()
    ran = set(received)
    assert len(received) == len(ran), "a call ran twice"
    for tag, outcome in outcomes:
        if not outcome.is_error:
            assert outcome.text == tag and tag in ran
        elif outcome.error_type in {"not_sent", "peer_busy", "unknown_tool", "timeout"}:
            assert tag not in ran, f"{tag} ran, but was answered {outcome.text!r}"
        else:  # sent, and the session with its worker ended before the answer: it may have run
            assert outcome.error_type == "peer_unavailable", outcome.text
    assert ran <= {tag for tag, _ in outcomes}


async def test_nats_restarts_and_a_restarted_gateway_keeps_the_history(tmp_path: Path) -> None:
    with nats_server(tmp_path / "jetstream") as server, gateways(server.url, tmp_path) as procs:
        urls = [g.url for g in procs]
        topic = new_topic()
        seen: list[Any] = []
        # a call whose frames were in flight while NATS restarted is answered after 2 s
        async with Router(reconnect=FAST, on_event=seen.append, call_timeout=2.0) as router:
            worker = TopicClient(
                urls[1], topic, "worker", token_provider=static_token(token("worker", topic))
            )
            async with serve_participant(worker, make_server("worker")), worker:
                await router.join_topic(
                    urls[0], topic, "host", token_provider=static_token(token("host", topic))
                )
                await eventually(lambda: bool(router.tools), WAIT)
                async with raw_peer(urls[2], topic, "speaker", token=token("speaker", topic)) as speaker:
                    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": 1}}
                    await speaker.send_mcp(note)
                    with anyio.fail_after(WAIT):  # stored before NATS stops
                        while True:
                            if [e for e in await history(urls[0], topic) if e["kind"] == "mcp"]:
                                break
                            await anyio.sleep(0.05)
                    server.restart()  # same port, same JetStream store
                    # calls across gateways work again once the gateways are back on NATS
                    with anyio.fail_after(WAIT):
                        while True:
                            [answer] = await router.dispatch([call("worker__add", {"a": 2, "b": 3})])
                            if answer["content"] == "5":
                                break
                            await anyio.sleep(0.1)
                    assert not [e for e in seen if isinstance(e, PeerLeft)]  # nobody left meanwhile
                    await speaker.send_mcp({**note, "params": {"n": 2}})
                    await same_roster_everywhere(urls, topic, {"host", "worker", "speaker"})
        # a gateway killed and started again serves the history from before, both broadcasts
        procs[2].kill()
        procs[2].start()
        async with raw_peer(urls[2], topic, "late", token=token("late", topic)) as late:
            said = [
                e["payload"]["params"]["n"] for e in late.welcome["payload"]["history"] if e["kind"] == "mcp"
            ]
            assert said == [1, 2]


async def test_a_call_refused_while_nats_is_down_is_answered_not_sent(tmp_path: Path) -> None:
    """While NATS is down a gateway refuses a frame for another gateway's participant at once: the
    call never reached the peer, so the answer says it was not sent and is safe to retry."""
    with nats_server(tmp_path / "jetstream") as server, gateways(server.url, tmp_path) as procs:
        urls = [g.url for g in procs]
        topic = new_topic()
        async with Router(reconnect=FAST, call_timeout=5.0) as router:
            worker = TopicClient(
                urls[1], topic, "worker", token_provider=static_token(token("worker", topic))
            )
            async with serve_participant(worker, make_server("worker")), worker:
                await router.join_topic(
                    urls[0], topic, "host", token_provider=static_token(token("host", topic))
                )
                await eventually(lambda: "worker__add" in {t.name for t in router.tools}, WAIT)
                assert (await router.call("worker__add", {"a": 1, "b": 2})).text == "3"
                server.stop()
                # Until the gateway sees NATS gone a frame may wait in its NATS client's buffer;
                # from then on every call is refused at once, and answered as not sent.
                with anyio.fail_after(WAIT):
                    while True:
                        outcome = await router.call("worker__add", {"a": 1, "b": 2})
                        assert outcome.is_error, outcome.text
                        if outcome.error_type == "not_sent":
                            break
                        await anyio.sleep(0.1)
                assert outcome.text.startswith("Error: worker__add: the call was not sent: ")
                assert "the gateways cannot reach each other now (NATS is down)" in outcome.text
                assert outcome.text.endswith("it is safe to retry")
                server.start()
                with anyio.fail_after(WAIT):
                    while True:
                        if (await router.call("worker__add", {"a": 20, "b": 22})).text == "42":
                            break
                        await anyio.sleep(0.1)


# -- what the NATS mode refuses --------------------------------------------------------------------


async def test_the_nats_mode_refuses_trio_and_an_unreachable_nats(anyio_backend: str) -> None:
    config = GatewayConfig(nats=f"nats://127.0.0.1:{free_port()}")
    expected = "asyncio only" if anyio_backend == "trio" else "could not connect to NATS"
    with pytest.raises(MCPxClusterError, match=expected):
        async with run_gateway(config=config):
            pass
    with pytest.raises(ValueError, match="nats_prefix"):
        GatewayConfig(nats="nats://127.0.0.1:4222", nats_prefix="a.b")
    with pytest.raises(ValueError, match="at least one"):
        GatewayConfig(nats=[])


def test_the_commands_with_several_gateways(cluster: tuple[NatsServer, list[GatewayProcess]]) -> None:
    """`bridge` on gateway 2 (listed after a dead one); `tools` and `call` through gateways 1 and 3."""
    urls = [g.url for g in cluster[1]]
    topic = new_topic()
    command = [sys.executable, "-m", "mcpx_router"]
    dead = f"http://127.0.0.1:{free_port()}"
    server = [sys.executable, "-m", "mcpx_router.testing", "docs"]
    flags = ["--gateway", dead, "--gateway", urls[1], "--topic", topic, "--id", "docs"]
    bridge = subprocess.Popen(
        [*command, "bridge", *flags, "--token", token("docs", topic), "--", *server],
        start_new_session=True,
    )
    try:
        host = ["--topic", topic, "--token", token("mcpx-router", topic)]
        deadline = time.monotonic() + 30
        while True:  # the bridge joins once its server has started: ask until it is listed
            tools = subprocess.run(
                [*command, "tools", "--gateway", f"{dead},{urls[0]}", *host],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if "docs__search" in tools.stdout or time.monotonic() > deadline:
                break
        assert tools.stdout.rstrip().endswith("2 tools from 1 peer: docs"), tools.stderr
        answer = subprocess.run(
            [*command, "call", "docs__search", "query=names", "--gateway", urls[2], *host],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert answer.stdout == "docs/architecture.md: tools are published as peer__tool.\n", answer.stderr
    finally:
        bridge.send_signal(signal.SIGTERM)
        assert bridge.wait(timeout=20) == 0
