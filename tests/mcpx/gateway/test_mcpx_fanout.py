"""The gateway's write path: frames encoded once, a recipient's queued frames written together,
slow readers closed (1013), oversized frames refused; on a real gateway, real WebSockets."""

from __future__ import annotations

import json
import logging

import pytest
from wsproto.events import TextMessage
from wsproto.frame_protocol import FrameProtocol

from mcpx_router.mcpx import Gateway, GatewayConfig, envelope_to_dict, new_envelope, run_gateway
from mcpx_router.mcpx.gateway._wspeer import text_frame

from ...support.mcpx_support import eventually, is_error, raw_peer

pytestmark = pytest.mark.anyio

TOPIC = "room"
FAST = {"rate_per_second": 1e9, "rate_burst": 10**9}


def note(index: int, padding: int = 0) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"n": index, "pad": "é" + "x" * padding},
    }


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_text_frame_is_what_a_client_parses(size: int) -> None:
    text = "x" * size
    client = FrameProtocol(client=True, extensions=[])
    client.receive_bytes(text_frame(text) + text_frame("é"))
    frames = list(client.received_frames())
    assert [(f.payload, f.message_finished) for f in frames] == [(text, True), ("é", True)]


async def test_frames_queued_together_arrive_intact_and_in_order() -> None:
    """Many broadcasts arriving in one read are fanned out before anything is written, so each
    recipient's frames go out together; sizes straddle every frame-header length."""
    gw = Gateway(GatewayConfig(**FAST))  # type: ignore[arg-type]
    paddings = [0, 40, 60, 65_200, 65_300, 65_400, 70_000, 5]
    count = 200
    async with (
        run_gateway(gw) as url,
        raw_peer(url, TOPIC, "alice", gw) as alice,
        raw_peer(url, TOPIC, "bob", gw) as bob,
        raw_peer(url, TOPIC, "carol", gw) as carol,
    ):
        await alice.recv()  # bob's join
        await alice.recv()  # carol's join
        await bob.recv()  # carol's join
        # every frame in one TCP write: the gateway reads them together and queues all of them
        batch = [
            alice.ws._conn.send(TextMessage(data=_envelope(note(index, paddings[index % len(paddings)]))))
            for index in range(count)
        ]
        await alice.ws._write(b"".join(batch))
        for reader in (bob, carol):
            for index in range(count):
                frame = await reader.recv_mcp()
                assert frame["payload"]["params"] == note(index, paddings[index % len(paddings)])["params"]


def _envelope(payload: dict[str, object]) -> str:
    env = new_envelope(sender="alice", kind="mcp", payload=payload)
    return json.dumps(envelope_to_dict(env))


async def test_a_reader_too_slow_for_its_queue_is_closed_1013(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpx_router.mcpx.gateway")
    gw = Gateway(GatewayConfig(send_queue=4, **FAST))  # type: ignore[arg-type]
    big = note(0, 500_000)  # ~500 KB per frame
    async with (
        run_gateway(gw) as url,
        raw_peer(url, TOPIC, "slow", gw) as slow,
        raw_peer(url, TOPIC, "talker", gw) as talker,
    ):
        await slow.recv()  # talker's join; from now on slow reads nothing until it is closed

        def shut() -> bool:
            return any(
                "'slow'" in r.getMessage() and "does not read" in r.getMessage() for r in caplog.records
            )

        for _ in range(400):  # the kernel's buffers fill first (a few MB), then the queue of 4
            if shut():
                break
            await talker.send_mcp(big)
        await eventually(shut)
        assert await slow.close_code(limit=30) == 1013
        await eventually(lambda: [p["id"] for p in gw.participants(TOPIC)] == ["talker"])


async def test_a_frame_over_the_size_limit_is_refused_and_the_connection_stays() -> None:
    gw = Gateway(GatewayConfig(max_message_bytes=4_000, **FAST))  # type: ignore[arg-type]
    async with (
        run_gateway(gw) as url,
        raw_peer(url, TOPIC, "alice", gw) as alice,
        raw_peer(url, TOPIC, "bob", gw) as bob,
    ):
        await alice.recv()  # bob's join
        await alice.send_mcp(note(0, 200_000))  # 400 KB: far over the limit, in many reads
        refused = await alice.recv_until(is_error("too_large"))
        assert refused["payload"]["message"] == "frame exceeds the size limit"
        await alice.send_mcp(note(1))
        frame = await bob.recv_mcp()
        assert frame["payload"]["params"]["n"] == 1
