"""Presence in the form each participant asks for, against the gateway served on 127.0.0.1:
one frame per join and leave (the draft's, for clients that ask nothing), batches
(`?presence=batched`), or none (`?presence=none`); and our topic client, which asks for batches,
against our gateway and against one that ignores the request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from mcpx_router import PeerJoined, PeerLeft, Router
from mcpx_router.mcpx import Gateway, GatewayConfig, PresenceEvent, TopicClient, run_gateway, static_token
from mcpx_router.mcpx.gateway._serve import _config, gateway_parser

from ...support.mcpx_permissive_gateway import permissive_gateway
from ...support.mcpx_router_support import Agents, until_all
from ...support.mcpx_support import RawPeer, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
NOTE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, str]]:
    gw = Gateway(GatewayConfig(presence_interval=0.05))
    async with run_gateway(gw) as url:
        yield gw, url


def is_batch(frame: dict[str, Any]) -> bool:
    return frame.get("kind") == "presence" and (frame.get("payload") or {}).get("event") == "batch"


class BatchedView:
    """A batched raw participant's roster: its welcome's, then every batch applied."""

    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer
        payload = peer.welcome["payload"]
        assert payload["presence"] == "batched"
        self.version: int = payload["roster_version"]
        self.present = {p["id"] for p in payload["participants"]} - {peer.participant_id}
        self.frames: list[dict[str, Any]] = []
        self.rejoined: set[str] = set()

    async def until(self, expected: set[str]) -> None:
        """Read batches until the roster is `expected` (each batch the one after the last)."""
        while self.present != expected:
            frame = await self.peer.recv()
            self.frames.append(frame)
            assert frame.get("kind") != "presence" or is_batch(frame), "a batched client got a single join"
            if is_batch(frame):
                payload = frame["payload"]
                assert payload["version"] == self.version + 1
                self.version = payload["version"]
                for entry in payload["left"]:
                    self.present.discard(entry["id"])
                for entry in payload["joined"]:
                    if entry["id"] in self.present:
                        self.rejoined.add(entry["id"])
                    self.present.add(entry["id"])
                self.present.discard(self.peer.participant_id)


async def test_clients_that_ask_nothing_see_one_join_and_leave_per_participant(
    gateway: tuple[Gateway, str],
) -> None:
    gw, url = gateway
    modes = ["batched", "none", None, "each", "something-new"] * 3
    pids = [f"p{i}" for i in range(len(modes))]
    async with raw_peer(url, TOPIC, "old", gw) as old:
        assert "roster_version" not in old.welcome["payload"]
        async with AsyncExitStack() as stack:
            for pid, mode in zip(pids, modes, strict=True):
                await stack.enter_async_context(raw_peer(url, TOPIC, pid, gw, presence=mode))
            joins = [await old.recv_until(lambda f: f.get("kind") == "presence") for _ in pids]
        leaves = [await old.recv_until(lambda f: f.get("kind") == "presence") for _ in pids]
    assert [(f["payload"]["event"], f["payload"]["participant"]["id"]) for f in joins] == [
        ("join", pid) for pid in pids
    ]
    assert sorted(f["payload"]["participant"]["id"] for f in leaves) == sorted(pids)
    assert {f["payload"]["event"] for f in leaves} == {"leave"}


async def test_batched_rosters_follow_a_storm_of_joins_leaves_and_reconnects(
    gateway: tuple[Gateway, str],
) -> None:
    gw, url = gateway
    pids = [f"p{i}" for i in range(30)]
    async with AsyncExitStack() as outer:
        first = BatchedView(
            await outer.enter_async_context(raw_peer(url, TOPIC, "obs1", gw, presence="batched"))
        )
        async with AsyncExitStack() as stack:
            peers: dict[str, AsyncExitStack] = {}
            late: BatchedView | None = None
            for index, pid in enumerate(pids):  # a storm: nobody waits for anyone
                peers[pid] = AsyncExitStack()
                await peers[pid].enter_async_context(raw_peer(url, TOPIC, pid, gw, presence="batched"))
                stack.push_async_callback(peers[pid].aclose)
                if index == 15:  # joins in the middle of it
                    peer = await outer.enter_async_context(
                        raw_peer(url, TOPIC, "obs2", gw, presence="batched")
                    )
                    late = BatchedView(peer)
            with anyio.fail_after(20):  # it knows every first connection
                await first.until(set(pids) | {"obs2"})
            for pid in pids[:10]:  # ten leave
                await peers[pid].aclose()
            for pid in pids[20:25]:  # five connect again: the old connections are replaced, no leave
                await stack.enter_async_context(raw_peer(url, TOPIC, pid, gw, presence="batched"))
            for pid in pids[:3]:  # three come back
                await stack.enter_async_context(raw_peer(url, TOPIC, pid, gw, presence="batched"))
            expected = set(pids[:3] + pids[10:])
            assert {p["id"] for p in gw.participants(TOPIC)} == expected | {"obs1", "obs2"}
            assert late is not None
            with anyio.fail_after(20):
                await first.until(expected | {"obs2"})
                await late.until(expected | {"obs1"})
            assert set(pids[20:25]) <= first.rejoined  # it started over with those that reconnected
            # The same batch is the same text for both: encoded once, queued to each.
            ids = {f["payload"]["version"]: f["id"] for f in first.frames if is_batch(f)}
            assert all(ids[f["payload"]["version"]] == f["id"] for f in late.frames if is_batch(f))
        with anyio.fail_after(20):
            await first.until({"obs2"})
            await late.until({"obs1"})


async def test_a_participant_that_opts_out_gets_no_presence(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with (
        raw_peer(url, TOPIC, "quiet", gw, presence="none") as quiet,
        raw_peer(url, TOPIC, "watcher", gw, presence="batched") as watcher,
    ):
        assert quiet.welcome["payload"]["presence"] == "none"
        assert quiet.welcome["payload"]["participants"] == []  # it reads no presence: O(1) bytes
        assert [e["id"] for e in watcher.welcome["payload"]["participants"]] == ["quiet"]
        view = BatchedView(watcher)
        async with raw_peer(url, TOPIC, "talker", gw) as talker:
            async with raw_peer(url, TOPIC, "passer", gw):
                with anyio.fail_after(20):
                    await view.until({"quiet", "talker", "passer"})
            with anyio.fail_after(20):
                await view.until({"quiet", "talker"})  # the batches are out: none of them went to `quiet`
            await talker.send_mcp(NOTE)
            await talker.send_mcp(NOTE, to=("quiet",))
            frames = [await quiet.recv(), await quiet.recv()]
        assert [(f["kind"], f["to"]) for f in frames] == [("mcp", []), ("mcp", ["quiet"])]


async def test_our_client_reads_batches_from_our_gateway(gateway: tuple[Gateway, str]) -> None:
    gw, url = gateway
    async with TopicClient(url, TOPIC, "me") as me, me.subscribe() as events:
        async with raw_peer(url, TOPIC, "bob", gw):
            await _next_presence(events, "join", "bob")
            assert set(me.participants) == {"bob"}
            async with raw_peer(url, TOPIC, "bob", gw):  # bob reconnects: we start over with him
                event = await _next_presence(events, "join", "bob")
                assert event.rejoined
        await _next_presence(events, "leave", "bob")
        assert dict(me.participants) == {}


async def test_our_client_reads_single_frames_from_a_gateway_that_ignores_the_request() -> None:
    async with permissive_gateway() as (_, url):
        client = TopicClient(url, TOPIC, "me", token_provider=static_token("me"), send_rate=None)
        async with client as me, me.subscribe() as events:
            bob = TopicClient(url, TOPIC, "bob", token_provider=static_token("bob"), presence="each")
            async with bob:
                await _next_presence(events, "join", "bob")
                assert set(me.participants) == {"bob"} and set(bob.participants) == {"me"}
            await _next_presence(events, "leave", "bob")
            assert dict(me.participants) == {}


async def test_a_router_follows_batched_presence(gateway: tuple[Gateway, str]) -> None:
    _, url = gateway
    names = [f"agent-{i}" for i in range(6)]
    async with anyio.create_task_group() as tg, Router() as router:
        agents = Agents(tg, url)
        with router.events() as events:
            topic = await router.join_topic(url, TOPIC, "router")
            async with anyio.create_task_group() as joining:  # all at once: their joins come in batches
                for name in names:
                    joining.start_soon(agents.start, name)
            await until_all(events, *(_is(PeerJoined, name) for name in names))
            assert set(topic.peers) == set(names)
            async with anyio.create_task_group() as leaving:
                for name in names[:3]:
                    leaving.start_soon(agents.stop, name)
            await until_all(events, *(_is(PeerLeft, name) for name in names[:3]))
            assert set(topic.peers) == set(names[3:])
            assert {t.name.split("__")[0] for t in router.tools} == set(names[3:])
        tg.cancel_scope.cancel()


def _is(kind: type[Any], peer: str) -> Any:
    return lambda event: isinstance(event, kind) and event.peer == peer


async def _next_presence(events: Any, event: str, pid: str) -> PresenceEvent:
    with anyio.fail_after(20):
        async for item in events:
            if isinstance(item, PresenceEvent) and item.event == event and item.participant.id == pid:
                return item
    raise AssertionError("the topic client closed")


def test_the_presence_interval_is_a_gateway_option() -> None:
    args = gateway_parser().parse_args(["--presence-interval", "0.5"])
    assert _config(args, {}, None).presence_interval == 0.5
    assert GatewayConfig().presence_interval == 0.25
    with pytest.raises(ValueError, match="presence_interval"):
        GatewayConfig(presence_interval=-1)
    with pytest.raises(ValueError, match="presence must be"):
        TopicClient("http://127.0.0.1:1", TOPIC, "me", presence="batch")  # type: ignore[arg-type]


async def test_a_batched_welcome_lists_everyone_present_before_any_batch() -> None:
    gw = Gateway(GatewayConfig(presence_interval=3600))  # the first join's batch goes, then none for an hour
    async with run_gateway(gw) as url, raw_peer(url, TOPIC, "first", gw, presence="batched"):
        async with (
            raw_peer(url, TOPIC, "second", gw),
            raw_peer(url, TOPIC, "third", gw, presence="batched") as third,
        ):
            listed = third.welcome["payload"]["participants"]
            assert [sorted(entry) for entry in listed] == [["connection", "id"]] * 2  # nothing said twice
            assert {entry["id"] for entry in listed} == {"first", "second"}


@pytest.mark.parametrize("broadcast", [False, True])
async def test_a_frame_never_overtakes_the_batch_that_tells_its_sender(broadcast: bool) -> None:
    # an hour between batches: only the sender's frame can send the batch that names it
    gw = Gateway(GatewayConfig(presence_interval=3600))
    async with run_gateway(gw) as url, raw_peer(url, TOPIC, "watcher", gw, presence="batched") as watcher:
        told: list[str] = []  # the connections of `sender` the batches named, in order
        for round_ in range(2):  # a join, then a reconnect of the same participant
            async with raw_peer(url, TOPIC, "sender", gw) as sender:
                await sender.send_mcp(NOTE, to=() if broadcast else ("watcher",))
                with anyio.fail_after(10):
                    frame = await watcher.recv()
                    while is_batch(frame):
                        told += [e["connection"] for e in frame["payload"]["joined"] if e["id"] == "sender"]
                        frame = await watcher.recv()
                assert frame["kind"] == "mcp" and frame["from"] == "sender"
                # before its frame, the watcher was told of this connection: a new one each round
                assert len(told) == len(set(told)) == round_ + 1
