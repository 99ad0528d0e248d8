"""An MCPx topic in the inspector: its participants, who of them are peers, presence live."""

from __future__ import annotations

import anyio
import pytest

from mcpx_router import Router
from mcpx_router.inspector import serve
from mcpx_router.mcpx import Gateway, TopicClient, run_gateway

from ..support.inspector_support import page, session
from ..support.mcpx_router_support import TOPIC, agent
from ..support.mcpx_support import eventually

pytestmark = pytest.mark.anyio


async def test_a_topics_participants_and_presence() -> None:
    async with run_gateway(Gateway()) as url, Router(stats=True) as router:
        topic = await router.join_topic(url, TOPIC, "router", handshake_timeout=0.5)
        async with (
            serve(router, topic=topic) as (_, address),
            session(address) as client,
            page(client) as live,
        ):
            async with agent(url, "alice"):
                await live.wait_for("PeerJoined", peer="alice")
                quiet = TopicClient(url, TOPIC, "bob")
                async with quiet:  # present, but no MCP server: skipped, with the reason
                    await eventually(lambda: "bob" in topic.skipped)
                    view = (await client.get("/api/overview")).json()
                    shown = view["topic"]
                    assert shown["topic"] == TOPIC and shown["connected"] is True
                    assert shown["participant_id"] == "router" and shown["gateway"] == url
                    present = {p["id"]: p for p in shown["present"]}
                    assert present["alice"]["peer"] is True and present["bob"]["peer"] is False
                    assert shown["skipped"]["bob"]
                    (alice,) = [p for p in view["peers"] if p["id"] == "alice"]
                    assert alice["transport"] == {
                        "kind": "mcpx",
                        "detail": f"participant alice of topic {TOPIC}",
                    }
            await live.wait_for("PeerLeft", peer="alice")

            async def present() -> set[str]:
                return {p["id"] for p in (await client.get("/api/overview")).json()["topic"]["present"]}

            with anyio.fail_after(10):
                while "alice" in await present():  # noqa: ASYNC110 - presence has no event of its own here
                    await anyio.sleep(0.05)
