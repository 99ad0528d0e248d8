"""A Router in an MCPx topic, against the real gateway on 127.0.0.1: presence drives membership.

Participants are in-process agents (`serve_participant`), hand-played raw participants (for
spoofing, silence and malformed traffic) and other Routers.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from mcpx_router import (
    HealthChanged,
    ParticipantPeer,
    PeerJoined,
    PeerLeft,
    Reconnect,
    Router,
    RouterEvent,
    ToolKey,
    is_legal_name,
)
from mcpx_router.mcpx import (
    ConnectionEvent,
    ConnectionState,
    Gateway,
    GatewayErrorEvent,
    MCPxAuthError,
    MCPxConnectionError,
    TopicClient,
    run_gateway,
    static_token,
)

from ..support.mcpx_router_support import (
    FAST,
    TOPIC,
    Agents,
    GatedTokens,
    RestartableGateway,
    blocking_server,
    call,
    lost_and_back,
    numbered_server,
    play_server,
    text_result,
    until_all,
)
from ..support.mcpx_support import RawPeer, eventually, make_server, raw_peer
from ..support.router_support import free_port, next_event

pytestmark = pytest.mark.anyio

HANDSHAKE = 4.0
"""The handshake timeout where one participant answers and another must be skipped: ample for an
answer on a busy machine, and what the silent one is given before it is skipped."""


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, str]]:
    gw = Gateway()
    async with run_gateway(gw) as url:
        yield gw, url


@pytest.fixture
async def agents(gateway: tuple[Gateway, str]) -> AsyncIterator[Agents]:
    async with anyio.create_task_group() as tg:
        yield Agents(tg, gateway[1])
        tg.cancel_scope.cancel()


async def refusal(peer: RawPeer) -> str:
    """The error the gateway answered a refused frame with."""
    frame = await peer.recv_until(lambda f: f["kind"] == "system")
    error: str = frame["payload"]["error"]
    return error


def is_(kind: type[Any], peer: str, **fields: Any) -> Any:
    def match(event: RouterEvent) -> bool:
        return (
            isinstance(event, kind)
            and event.peer == peer
            and all(getattr(event, k) == v for k, v in fields.items())
        )

    return match


async def test_presence_drives_membership(gateway: tuple[Gateway, str], agents: Agents) -> None:
    _, url = gateway
    await agents.start("agent-b")
    async with Router() as router:
        with router.events() as events:
            topic = await router.join_topic(url, TOPIC, "router")
            assert (topic.peers, topic.skipped, topic.connected) == (("agent-b",), {}, True)
            joined = await next_event(events, PeerJoined)
            assert (joined.peer, joined.tools) == ("agent-b", ("agent-b__add", "agent-b__slow_echo"))
            [answer] = await router.dispatch([call("agent-b__add", {"a": 2, "b": 40})])
            assert answer == {"role": "tool", "tool_call_id": "c1", "content": "42"}

            await agents.start("agent-c")  # a join: handshake, listing, published
            joined = await next_event(events, PeerJoined, lambda e: e.peer == "agent-c")
            assert joined.tools == ("agent-c__add", "agent-c__slow_echo")
            assert topic.peers == ("agent-b", "agent-c") and router.status("agent-c").healthy
            assert agents.servers["agent-c"].sessions == {"router"}

            await agents.stop("agent-c")  # a leave: the peer leaves, its names are freed
            left = await next_event(events, PeerLeft, lambda e: e.peer == "agent-c")
            assert left.reason == "peer 'agent-c' left topic 'room'"
            assert [t.name for t in router.tools] == ["agent-b__add", "agent-b__slow_echo"]
            [answer] = await router.dispatch([call("agent-c__add", {"a": 1, "b": 1})])
            assert answer["content"] == (
                "Error: 'agent-c__add' is not available now: peer 'agent-c' left topic 'room'. "
                "Call only the functions offered now."
            )

            await agents.start("agent-c")  # back under the same id: same names
            joined = await next_event(events, PeerJoined, lambda e: e.peer == "agent-c")
            assert joined.tools == ("agent-c__add", "agent-c__slow_echo")

            await topic.leave()
            assert topic.done.is_set() and router.peers == () and router.tools == ()
            gone = await until_all(events, is_(PeerLeft, "agent-b"), is_(PeerLeft, "agent-c"))
            assert {e.reason for e in gone if isinstance(e, PeerLeft)} == {
                "peer 'agent-b' left: we left topic 'room'",
                "peer 'agent-c' left: we left topic 'room'",
            }


async def test_include_and_exclude_choose_participants(gateway: tuple[Gateway, str], agents: Agents) -> None:
    gw, url = gateway
    for pid in ("tools-1", "tools-2", "notes"):
        await agents.start(pid)
    async with Router() as router:
        topic = await router.join_topic(url, TOPIC, "router", include=["tools-*"], exclude=["*-2"])
        assert topic.peers == ("tools-1",) and router.peers == ("tools-1",)
        assert agents.servers["tools-2"].sessions == agents.servers["notes"].sessions == frozenset()
        with pytest.raises(TypeError, match="glob patterns"):
            await router.join_topic(url, TOPIC, "other", include="tools-*")  # type: ignore[arg-type]
    await eventually(lambda: {p["id"] for p in gw.participants(TOPIC)} == {"tools-1", "tools-2", "notes"})


async def test_a_participant_that_never_answers_is_skipped_then_retried(
    gateway: tuple[Gateway, str], agents: Agents
) -> None:
    gw, url = gateway
    await agents.start("agent-b")
    async with raw_peer(url, TOPIC, "alice", gw) as alice, Router() as router:
        with router.events() as events:
            started = time.perf_counter()
            # Long enough for agent-b's handshake on a busy machine; alice never answers.
            topic = await router.join_topic(
                url, TOPIC, "router", handshake_timeout=HANDSHAKE, retry_unresponsive=0.5
            )
            elapsed = time.perf_counter() - started
            assert topic.peers == ("agent-b",) and router.peers == ("agent-b",)
            assert topic.skipped == {
                "alice": f"no answer to initialize and tools/list within {HANDSHAKE:g} s"
            }
            assert elapsed >= HANDSHAKE  # alice's handshake was given its whole time before she was skipped
            first = await alice.recv_mcp()
            assert first["payload"]["method"] == "initialize"

            async with raw_peer(url, TOPIC, "bob", gw) as bob:  # a second one, joining later
                assert (await bob.recv_mcp())["payload"]["method"] == "initialize"
                # its handshake is pending, and calls to others are answered meanwhile
                [answer] = await router.dispatch([call("agent-b__add", {"a": 1, "b": 2})])
                assert answer["content"] == "3"
                assert "bob" not in topic.peers and "bob" not in topic.skipped

                # alice is asked again after retry_unresponsive; this time she answers
                async with anyio.create_task_group() as tg:
                    tg.start_soon(play_server, alice)
                    joined = await next_event(events, PeerJoined, lambda e: e.peer == "alice")
                    assert joined.tools == ("alice__whoami",) and "alice" not in topic.skipped
                    tg.cancel_scope.cancel()
                await eventually(lambda: "bob" in topic.skipped, HANDSHAKE + 10)
            await eventually(lambda: "bob" not in topic.skipped)  # gone: no longer listed


async def test_a_participant_that_reconnects_is_handshaken_again(
    gateway: tuple[Gateway, str], agents: Agents
) -> None:
    _, url = gateway
    await agents.start("agent-b", make_server("first"))
    async with Router() as router:
        with router.events() as events:
            await router.join_topic(url, TOPIC, "router")
            before = router.status("agent-b").tools
            second = make_server("second")

            @second.tool()
            def mul(a: int, b: int) -> int:
                """Multiply two numbers."""
                return a * b

            async with anyio.create_task_group() as tg:  # the same id from a new connection
                newcomer = Agents(tg, url)
                served = await newcomer.start("agent-b", second)
                seen = await until_all(events, is_(HealthChanged, "agent-b", healthy=True))
                assert not any(isinstance(e, PeerLeft) for e in seen)
                assert served.sessions == {"router"}  # the new connection got its own handshake
                status = router.status("agent-b")
                assert status.tools == (*before, "agent-b__mul") and status.healthy
                [answer] = await router.dispatch([call("agent-b__mul", {"a": 6, "b": 7})])
                assert answer["content"] == "42"
                tg.cancel_scope.cancel()


async def test_a_participant_leaving_mid_call(gateway: tuple[Gateway, str], agents: Agents) -> None:
    _, url = gateway
    started = anyio.Event()
    await agents.start("agent-b")
    await agents.start("worker", blocking_server("worker", started))
    async with Router() as router:
        with router.events() as events:
            await router.join_topic(url, TOPIC, "router")
            answers: list[dict[str, Any]] = []
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    answers.extend(
                        await router.dispatch(
                            [call("worker__block", {}, "c1"), call("agent-b__add", {"a": 1, "b": 1}, "c2")]
                        )
                    )

                tg.start_soon(ask)
                with anyio.fail_after(5):
                    await started.wait()
                await agents.stop("worker")
            left = await next_event(events, PeerLeft, lambda e: e.peer == "worker")
            assert left.reason == "peer 'worker' left topic 'room'"
        [blocked, added] = answers
        assert blocked["tool_call_id"] == "c1" and blocked["content"].startswith("Error: ")
        assert "peer 'worker'" in blocked["content"]
        assert "may or may not have taken effect" in blocked["content"]
        assert added["content"] == "2"
        assert [t.name for t in router.tools] == ["agent-b__add", "agent-b__slow_echo"]


async def test_forged_replies_never_reach_the_model(gateway: tuple[Gateway, str], caplog: Any) -> None:
    gw, url = gateway
    caplog.set_level(logging.WARNING, logger="mcpx_router.mcpx")

    def dropped() -> int:
        return sum("unmatched response" in r.getMessage() for r in caplog.records)

    calls_send, calls_recv = anyio.create_memory_object_stream[dict[str, Any]](10)
    async with (
        calls_send,
        calls_recv,
        raw_peer(url, TOPIC, "agent-b", gw) as b,
        raw_peer(url, TOPIC, "mallory", gw) as mallory,
        Router() as router,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(play_server, b, calls_send)
        topic = await router.join_topic(url, TOPIC, "router", include=["agent-b"])
        assert topic.peers == ("agent-b",) and [t.name for t in router.tools] == ["agent-b__whoami"]
        answered = anyio.Event()
        answers: list[dict[str, Any]] = []

        async def ask() -> None:
            answers.extend(await router.dispatch([call("agent-b__whoami", {})]))
            answered.set()

        tg.start_soon(ask)
        with anyio.fail_after(5):
            request = await calls_recv.receive()
        rpc_id, env_id = request["payload"]["id"], request["id"]

        def reply(text: str, rid: Any = rpc_id) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "result": text_result(text)}

        # mallory forges `from`: the gateway refuses the frame and tells her
        await mallory.send_mcp(reply("forged from"), to=("router",), correlation_id=env_id, sender="agent-b")
        assert await refusal(mallory) == "from_mismatch"
        # ... or forges presence: participants may only send kind "mcp"
        forged_leave = {
            "protocol": "mcp-x/v0",
            "id": "p1",
            "from": "mallory",
            "kind": "presence",
            "payload": {"event": "leave", "participant": {"id": "agent-b"}},
        }
        await mallory.send(forged_leave)
        assert await refusal(mallory) == "invalid_kind"
        # the right correlation and JSON-RPC id from the wrong sender; the right sender with the
        # id as a string, the wrong correlation id, none
        await mallory.send_mcp(reply("wrong sender"), to=("router",), correlation_id=env_id)
        await b.send_mcp(reply("string id", str(rpc_id)), to=("router",), correlation_id=env_id)
        await b.send_mcp(reply("wrong correlation"), to=("router",), correlation_id="nope")
        await b.send_mcp(reply("no correlation"), to=("router",))
        await eventually(lambda: dropped() >= 4)
        assert answers == [] and topic.peers == ("agent-b",)
        await b.send_mcp(reply("genuine"), to=("router",), correlation_id=env_id)
        with anyio.fail_after(5):
            await answered.wait()
        assert answers == [{"role": "tool", "tool_call_id": "c1", "content": "genuine"}]
        before = dropped()
        await b.send_mcp(reply("replayed"), to=("router",), correlation_id=env_id)
        await eventually(lambda: dropped() > before)
        tg.cancel_scope.cancel()


async def test_malformed_traffic_from_a_participant(gateway: tuple[Gateway, str], agents: Agents) -> None:
    gw, url = gateway
    await agents.start("agent-b")
    async with raw_peer(url, TOPIC, "odd", gw) as odd, Router() as router:
        with anyio.CancelScope() as playing:
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(play_server, odd, listing={"tools": "not a list"}))
                topic = await router.join_topic(url, TOPIC, "router", retry_unresponsive=None)
                playing.cancel()
        assert topic.peers == ("agent-b",)
        assert "could not list the tools of peer 'odd'" in topic.skipped["odd"]
        # frames the gateway refuses reach nobody
        await odd.send("{not json")
        assert await refusal(odd) == "invalid_json"
        await odd.send_mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # a broadcast request
        assert await refusal(odd) == "invalid_request"
        # frames the gateway passes that mean nothing to the Router
        await odd.send_mcp({"jsonrpc": "2.0", "id": 77, "result": {}}, to=("router",))  # an answer to nothing
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": 5}
        await odd.send_mcp(progress, to=("router",))
        await odd.send_mcp({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, to=("router",))
        sent = await odd.send_mcp(
            {"jsonrpc": "2.0", "id": "q", "method": "tools/call", "params": {"name": "x"}}, to=("router",)
        )
        answer = await odd.recv_mcp()  # the Router serves nothing here: "method not found"
        assert answer["correlation_id"] == sent["id"] and answer["payload"]["error"]["code"] == -32601
        assert topic.peers == ("agent-b",) and topic.connected
        [answer] = await router.dispatch([call("agent-b__add", {"a": 20, "b": 22})])
        assert answer["content"] == "42"


async def test_two_agents_call_each_other(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
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

        with alice.events() as events:
            await alice.join_topic(url, TOPIC, "alice", serve=alice_server)
            bob_topic = await bob.join_topic(url, TOPIC, "bob", serve=bob_server)
            assert bob.peers == ("alice",) and [t.name for t in bob.tools] == ["alice__plan"]
            await next_event(events, PeerJoined, lambda e: e.peer == "bob")
        assert [t.name for t in alice.tools] == ["bob__research"]
        # alice's model calls bob's tool, which calls alice's tool back through bob's Router
        [answer] = await alice.dispatch([call("bob__research", {"goal": "a release"})])
        assert answer["content"] == "bob researched (plan for a release: research, then write)"
        [answer] = await bob.dispatch([call("alice__plan", {"goal": "lunch"})])
        assert answer["content"] == "plan for lunch: research, then write"
        assert bob_topic.server is not None and bob_topic.server.sessions == {"alice"}


async def test_gateway_restart_reconnects_and_reconciles() -> None:
    port = free_port()
    tokens = GatedTokens(f"http://127.0.0.1:{port}", "router")
    async with anyio.create_task_group() as tg:
        gateway = RestartableGateway(tg, port)
        await gateway.start()
        agents = Agents(tg, gateway.url)
        await agents.start("stay", reconnect=FAST)
        await agents.start("goes")  # no reconnect policy: gone with the first gateway
        # Each failed attempt of a participant's session waits ten times longer: 0.02, 0.2, 2, 20 s.
        slowing = Reconnect(initial_delay=0.02, multiplier=10, max_delay=60, jitter=0)
        async with Router(reconnect=slowing) as router:
            with router.events() as events:
                topic = await router.join_topic(gateway.url, TOPIC, "router", token_provider=tokens)
                names = router.status("stay").tools
                assert names == ("stay__add", "stay__slow_echo") and set(topic.peers) == {"stay", "goes"}
                async with agents.clients["stay"].subscribe() as stay_events:
                    await gateway.stop()
                    lost = [is_(HealthChanged, pid, healthy=False) for pid in ("stay", "goes")]
                    await until_all(events, *lost)
                    assert router.tools == () and not topic.connected  # withdrawn, names kept
                    [answer] = await router.dispatch([call("stay__add", {"a": 1, "b": 1})])
                    unavailable = "peer 'stay' is unavailable (its connection was lost; reconnecting)"
                    assert unavailable in answer["content"]
                    # `stay`'s session has failed to reopen long enough to wait 20 s before trying again
                    await next_event(
                        events, HealthChanged, lambda e: e.peer == "stay" and (e.retry_in or 0) >= 20
                    )
                    await gateway.start()
                    await lost_and_back(stay_events)  # `stay` reconnects by itself
                await agents.start("new")
                with anyio.fail_after(10):
                    await tokens.waiting.wait()  # the Router is trying; let it in now
                tokens.gate.set()
                seen = await until_all(  # `stay` is not left waiting out its 20 s: the topic says it's back
                    events,
                    is_(PeerLeft, "goes"),
                    is_(PeerJoined, "new"),
                    is_(HealthChanged, "stay", healthy=True),
                    within=10,
                )
                assert not any(isinstance(e, PeerLeft) and e.peer == "stay" for e in seen)
                assert topic.connected and set(topic.peers) == {"stay", "new"}
                assert router.status("stay").tools == names  # the same names back
                [answer] = await router.dispatch([call("stay__add", {"a": 2, "b": 3})])
                assert answer["content"] == "5"
        tg.cancel_scope.cancel()


async def test_giving_up_on_the_gateway_removes_the_topic_peers(
    gateway: tuple[Gateway, str], agents: Agents
) -> None:
    gw, url = gateway
    await agents.start("agent-b")
    async with Router() as router:
        with router.events() as events:
            policy = Reconnect(initial_delay=0.05, jitter=0.0, max_attempts=2)
            topic = await router.join_topic(url, TOPIC, "router", reconnect=policy)
            gw.close_all()  # every connection closed, and no new one admitted
            left = await next_event(events, PeerLeft, lambda e: e.peer == "agent-b")
        with anyio.fail_after(5):
            await topic.done.wait()
        assert topic.closed_reason == "gave up reconnecting to topic 'room' after 2 failed attempt(s)"
        assert left.reason == f"peer 'agent-b' left: topic 'room' closed ({topic.closed_reason})"
        assert router.peers == () and not topic.connected


async def test_joining_fails_cleanly(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    async with Router() as router:
        with pytest.raises(MCPxAuthError):
            await router.join_topic(url, TOPIC, "router", token_provider=static_token("bogus"))
        with pytest.raises(MCPxConnectionError):
            await router.join_topic(f"http://127.0.0.1:{free_port()}", TOPIC, "router")
        with pytest.raises(ValueError, match="handshake_timeout"):
            await router.join_topic(url, TOPIC, "router", handshake_timeout=0)
        assert router.peers == ()


async def test_a_participant_joined_by_hand(gateway: tuple[Gateway, str], agents: Agents) -> None:
    _, url = gateway
    await agents.start("agent-b")
    async with TopicClient(url, TOPIC, "router") as topic, Router() as router:
        names = await router.join("b", ParticipantPeer(topic, "agent-b"))
        assert names == ("b__add", "b__slow_echo")
        assert router.status("b").spec.describe() == "participant 'agent-b' of topic 'room'"
        [answer] = await router.dispatch([call("b__add", {"a": 3, "b": 4})])
        assert answer["content"] == "7"


async def test_fifty_participants_with_ten_tools_each(capsys: Any) -> None:
    gw = Gateway()  # its default rate limit: 50 frames a second per participant, bursts of 100
    async with run_gateway(gw) as url, anyio.create_task_group() as tg:
        agents = Agents(tg, url)
        pids = [f"agent-{i:02d}" for i in range(50)]
        few_at_a_time = anyio.CapacityLimiter(10)  # fifty connecting at once can starve a busy machine

        async def start(pid: str) -> None:
            async with few_at_a_time:
                await agents.start(pid, numbered_server(pid, 10))

        async with anyio.create_task_group() as starting:
            for pid in pids:
                starting.start_soon(start, pid)
        async with Router() as router:
            started = time.perf_counter()
            topic = await router.join_topic(url, TOPIC, "router")  # 150 frames, paced at 50 a second
            joined = time.perf_counter() - started
            assert sorted(topic.peers) == pids and topic.skipped == {}
            tools = router.tools
            names = [t.name for t in tools]
            assert len(names) == 500 and len(set(names)) == 500 and all(map(is_legal_name, names))
            assert len(router.get_openai_tools(max_tools=None)) == 500
            for tool in tools:
                if tool.tool.startswith("tool_"):
                    assert tool.name == f"{tool.peer}__{tool.tool}"
                else:  # `tool.09` is not legal: a sanitised name that ends in a hash of the pair
                    assert (
                        tool.name.startswith(f"{tool.peer}__tool_09_")
                        and len(tool.name) == len(f"{tool.peer}__tool_09_") + 8
                    )
                assert router.adapter.resolve(tool.name) == ToolKey(tool.peer, tool.tool)
            before = {(t.peer, t.tool): t.name for t in tools}

            started = time.perf_counter()
            batch = [call(f"{pid}__tool_03", {"x": i}, f"c{i}") for i, pid in enumerate(pids)]
            answers = await router.dispatch(batch)
            dispatched = time.perf_counter() - started
            assert [a["content"] for a in answers] == [f"{pid}:3:{i}" for i, pid in enumerate(pids)]

            with router.events() as events:  # one leaves, one comes back: nobody else's name moves
                await agents.stop("agent-07")
                await next_event(events, PeerLeft, lambda e: e.peer == "agent-07")
                await agents.start("agent-07", numbered_server("agent-07", 10))
                await next_event(events, PeerJoined, lambda e: e.peer == "agent-07")
            assert {(t.peer, t.tool): t.name for t in router.tools} == before
        with capsys.disabled():
            print(f"\n  50 participants x 10 tools: joined in {joined:.2f} s, 50 calls in {dispatched:.2f} s")
        tg.cancel_scope.cancel()


async def test_sending_is_paced_below_the_gateways_rate_limit(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway  # the gateway allows 50 frames a second per participant, in bursts of 100
    note = {"level": "info", "data": "x"}
    async with raw_peer(url, TOPIC, "reader", gw) as reader:
        async with TopicClient(url, TOPIC, "unpaced", send_rate=None) as writer, writer.subscribe() as events:
            for _ in range(120):
                await writer.notify("notifications/message", note, to=("reader",))
            with anyio.fail_after(5):  # the gateway drops what exceeds its burst, and says so
                async for event in events:
                    if isinstance(event, GatewayErrorEvent) and event.error == "rate_limited":
                        break
        async with TopicClient(url, TOPIC, "paced", send_rate=50) as writer, writer.subscribe() as events:
            started = time.perf_counter()  # before the first send: a slow machine only adds to it
            for _ in range(120):
                await writer.notify("notifications/message", note, to=("reader",))
            await reader.recv_until(lambda f: f["from"] == "paced" and f["kind"] == "mcp")
            for _ in range(119):  # every frame arrives: they waited their turn
                frame = await reader.recv_mcp()
                assert frame["from"] == "paced"
            elapsed = time.perf_counter() - started
            assert elapsed > 1.0  # paced: after the first 50 at once, 50 a second
            seen = []
            with contextlib.suppress(anyio.WouldBlock):
                while True:
                    seen.append(events.receive_nowait())
            assert seen and not any(isinstance(e, GatewayErrorEvent) for e in seen)


async def test_a_client_replaced_under_its_id_does_not_push_back(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with TopicClient(url, TOPIC, "agent-b", reconnect=FAST) as first, first.subscribe() as events:
        async with TopicClient(url, TOPIC, "agent-b", reconnect=FAST) as second:
            with anyio.fail_after(5):
                async for event in events:
                    if isinstance(event, ConnectionEvent) and event.state is ConnectionState.CLOSED:
                        break
            assert event.reason == "replaced by another connection under our id"
            assert first.state is ConnectionState.CLOSED and second.state is ConnectionState.CONNECTED
            assert [p["id"] for p in gw.participants(TOPIC)] == ["agent-b"]
