"""Presence across gateways sharing a topic through a real NATS server (`-m nats`): a participant
that asks for batches hears the joins and leaves of the other gateways' participants in batches,
one that asks nothing hears them one frame each, as before."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from ....support.mcpx_nats import GatewayProcess, NatsServer, gateways, nats_server, token
from ....support.mcpx_support import RawPeer, raw_peer
from ....support.router_support import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.nats]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NatsServer, list[GatewayProcess]]]:
    tmp = tmp_path_factory.mktemp("nats")
    with nats_server(tmp / "jetstream") as server, gateways(server.url, tmp, rate=50) as procs:
        yield server, procs


async def batched_until(peer: RawPeer, present: set[str], expected: set[str]) -> set[str]:
    """Apply `peer`'s batches to `present` until it is `expected`."""
    with anyio.fail_after(WAIT):
        while present != expected:
            frame: dict[str, Any] = await peer.recv()
            assert frame.get("kind") != "presence" or frame["payload"]["event"] == "batch"
            if frame.get("kind") == "presence":
                present -= {e["id"] for e in frame["payload"]["left"]}
                present |= {e["id"] for e in frame["payload"]["joined"]} - {peer.participant_id}
    return present


async def single_until(peer: RawPeer, event: str, pids: set[str]) -> None:
    """Read until `peer` has had a single `event` frame for each of `pids` (in any order)."""
    waiting = set(pids)
    with anyio.fail_after(WAIT):
        while waiting:
            frame = await peer.recv_until(lambda f: f.get("kind") == "presence")
            assert frame["payload"]["event"] in ("join", "leave"), (
                "a participant that asked nothing got a batch"
            )
            if frame["payload"]["event"] == event:
                waiting.discard(frame["payload"]["participant"]["id"])


async def test_batched_and_single_presence_across_gateways(
    cluster: tuple[NatsServer, list[GatewayProcess]],
) -> None:
    urls = [g.url for g in cluster[1]]
    topic = f"room-{uuid.uuid4().hex[:8]}"
    async with (
        raw_peer(urls[0], topic, "old", token=token("old", topic)) as old,
        raw_peer(urls[0], topic, "new", token=token("new", topic), presence="batched") as new,
    ):
        present = {p["id"] for p in new.welcome["payload"]["participants"]} - {"new"}
        async with (
            raw_peer(urls[1], topic, "b1", token=token("b1", topic), presence="batched"),
            raw_peer(urls[2], topic, "b2", token=token("b2", topic)),
        ):
            await single_until(old, "join", {"b1", "b2"})
            present = await batched_until(new, present, {"old", "b1", "b2"})
        await single_until(old, "leave", {"b1", "b2"})
        await batched_until(new, present, {"old"})
