"""The Router with our own peers: in-process servers and a standard-library stdio server."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest

from mcpx_router import (
    CallProgress,
    DuplicatePeerError,
    HealthChanged,
    InProcessPeer,
    InvalidPeerIdError,
    PeerJoined,
    PeerLeft,
    PeerUnavailableError,
    Reconnect,
    Router,
    RouterEvent,
    StdioPeer,
    ToolsChanged,
    UnknownPeerError,
    UnknownToolError,
)

from ..support.router_support import WAIT, growing_server, next_event, tiny

pytestmark = pytest.mark.anyio

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0)


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


async def test_join_publishes_and_dispatches() -> None:
    seen: list[RouterEvent] = []
    async with Router(on_event=seen.append) as router:
        names = await router.join("grower", growing_server())
        assert names == ("grower__echo", "grower__grow", "grower__wait")
        assert seen == [PeerJoined("grower", router.version, names)]
        assert [tool["function"]["name"] for tool in router.get_openai_tools()] == list(names)
        answers = await router.dispatch([chat_call("c1", "grower__echo", {"text": "hello"})])
        assert answers == [{"role": "tool", "tool_call_id": "c1", "content": "hello"}]
        assert router.peers == ("grower",)
        status = router.status("grower")
        assert status.healthy and status.tools == names and status.attempts == 0
    assert isinstance(seen[-1], PeerLeft)


async def test_a_failed_join_leaves_nothing_behind(tmp_path: Path) -> None:
    async with Router() as router:
        with pytest.raises(PeerUnavailableError, match="could not connect to peer 'ghost'") as caught:
            await router.join("ghost", StdioPeer(str(tmp_path / "no-such-server")))
        assert caught.value.peer == "ghost"
        assert "check that the command exists" in str(caught.value)
        assert router.peers == () and router.adapter.peers == () and router.tools == ()
        await router.join("ghost", growing_server())  # the id is free again
        with pytest.raises(DuplicatePeerError):
            await router.join("ghost", growing_server())
        with pytest.raises(InvalidPeerIdError):
            await router.join("", growing_server())
        with pytest.raises(UnknownPeerError):
            await router.leave("nobody")


async def test_a_connect_timeout_fails_the_join(tmp_path: Path) -> None:
    silent = StdioPeer("sh", ["-c", "cat > /dev/null"])  # starts, never speaks MCP, exits with its stdin
    async with Router(connect_timeout=0.5) as router:
        with pytest.raises(PeerUnavailableError, match=r"no handshake and tool list within 0\.5 s"):
            await router.join("silent", silent)
        assert router.peers == ()


async def test_leaving_withdraws_and_calls_get_a_clear_answer() -> None:
    async with Router() as router:
        await router.join("a", growing_server("a"))
        await router.join("b", growing_server("b"))
        with router.events() as events:
            await router.leave("a")
            left = await next_event(events, PeerLeft)
        assert left == PeerLeft("a", router.version, "peer 'a' left")
        assert [t.name for t in router.tools] == ["b__echo", "b__grow", "b__wait"]
        outcome = await router.call("a__echo", {"text": "x"})
        assert outcome.is_error
        assert (
            outcome.text
            == "Error: 'a__echo' is not available now: peer 'a' left. Call only the functions offered now."
        )


async def test_join_all_is_all_or_nothing(tmp_path: Path) -> None:
    async with Router() as router:
        with pytest.raises(PeerUnavailableError, match="'broken'"):
            await router.join_all(
                {"one": growing_server("one"), "broken": StdioPeer(str(tmp_path / "nothing")), "two": tiny()}
            )
        assert router.peers == () and router.tools == ()
        joined = await router.join_all({"one": growing_server("one"), "two": tiny()})
        assert set(joined) == {"one", "two"} and "two__echo" in joined["two"]


async def test_join_config(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    entry = {
        "command": tiny().command,
        "args": list(tiny().args),
        "cwd": "work",  # relative to the config file
        "env": {"TINY_SERVER_LOG": "received.jsonl"},  # relative to the server's cwd
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"small": entry}}))
    async with Router() as router:
        joined = await router.join_config(config)
        assert joined["small"] == (
            "small__echo",
            "small__pid",
            "small__sleep",
            "small__add_tool",
            "small__remove_tool",
        )
        assert (await router.call("small__echo", {"text": "from config"})).text == "from config"
        # The handshake's `notifications/initialized` was logged where cwd and env said.
        log = (tmp_path / "work" / "received.jsonl").read_text()
        assert json.loads(log.splitlines()[0])["method"] == "notifications/initialized"


async def test_every_page_of_tools_is_listed() -> None:
    async with Router() as router:
        names = await router.join("paged", tiny("--page-size", "2", "--tools", "7"))
    assert len(names) == 12 and names[-1] == "paged__t6"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_changed_tool_list_is_followed(mode: str) -> None:
    """On 2026-07-28 ("auto" in process) through subscriptions/listen; on older versions through
    notifications/tools/list_changed."""
    async with Router() as router:
        await router.join("other", growing_server("other"))
        names = await router.join("g", InProcessPeer(growing_server(), mode=mode))
        assert (await router.call("g__grow", {"name": "fresh"})).text == "grown"
        with router.events() as events:
            changed = await next_event(events, ToolsChanged)
        assert changed == ToolsChanged("g", router.version, added=("g__fresh",))
        assert [t.name for t in router.adapter.tools_of("g")] == [*names, "g__fresh"]
        assert (await router.call("g__fresh", {"text": "new"})).text == "new"


async def test_legacy_notifications_from_a_stdio_peer_and_removed_tools() -> None:
    async with Router() as router:
        before = await router.join("s", tiny("--page-size", "2"))  # every re-listing reads 3 pages
        with router.events() as events:
            await router.call("s__add_tool", {"name": "extra"})
            added = await next_event(events, ToolsChanged)
            await router.call("s__remove_tool", {"name": "echo"})
            removed = await next_event(events, ToolsChanged)
        assert added.added == ("s__extra",) and removed.removed == ("s__echo",)
        # Names of tools that still exist never change.
        assert [t.name for t in router.tools] == [n for n in before if n != "s__echo"] + ["s__extra"]
        outcome = await router.call("s__echo", {"text": "x"})
        assert outcome.text.startswith(
            "Error: 's__echo' is not available now: tool 'echo' is no longer offered"
        )


async def test_a_burst_of_notifications_costs_one_listing() -> None:
    listings = 0
    async with Router(refresh_debounce=0.2) as router:
        await router.join("s", tiny())
        adapter_refresh = router.adapter.refresh_peer

        async def counting(peer_id: str) -> bool:
            nonlocal listings
            listings += 1
            return await adapter_refresh(peer_id)

        router.adapter.refresh_peer = counting  # type: ignore[method-assign]
        with router.events() as events:
            for i in range(5):
                await router.call("s__add_tool", {"name": f"n{i}"})
            changed = await next_event(events, ToolsChanged)
        assert changed.added == ("s__n0", "s__n1", "s__n2", "s__n3", "s__n4")
        await anyio.sleep(0.4)  # the absence of a second listing can only be shown by waiting
        assert listings == 1


async def test_manual_refresh_for_a_session_that_cannot_say() -> None:
    server = growing_server()
    async with mcp.Client(server, mode="legacy") as client, Router() as router:
        await router.join("given", client)  # a session we do not own: its notifications go to its owner
        server.add_tool(lambda: "ok", name="quiet", description="Added without a word.")
        assert await router.refresh("given") is True
        assert "given__quiet" in [t.name for t in router.tools]
        assert await router.refresh() is False
        with pytest.raises(UnknownPeerError):
            await router.refresh("nobody")


async def test_a_killed_stdio_peer_comes_back_under_the_same_names() -> None:
    async with Router(reconnect=FAST) as router:
        await router.join("bystander", growing_server("bystander"))
        names = await router.join("s", tiny())
        version = router.version
        pid = int((await router.call("s__pid", {})).text)
        with router.events() as events:
            async with anyio.create_task_group() as tg:

                async def kill_soon() -> None:
                    await next_event(events, CallProgress)  # the call is running
                    os.kill(pid, signal.SIGKILL)

                tg.start_soon(kill_soon)
                in_flight = await router.call("s__sleep", {"seconds": 10})
            # The in-flight call is answered with an error, and the tools are already withdrawn.
            assert in_flight.text.startswith(
                "Error: s__sleep: the call was sent, but the connection to peer 's' failed (MCPError: "
            ) and in_flight.text.endswith("before it answered; it may or may not have taken effect")
            assert router.adapter.tools_of("s") == ()
            lost = await next_event(events, HealthChanged)
            assert not lost.healthy and lost.attempt == 0 and lost.retry_in == 0.05
            assert lost.version > version
            while_away = await router.call("s__echo", {"text": "x"})
            assert "peer 's' is unavailable (its connection was lost; reconnecting)" in while_away.text
            # Other peers are not affected.
            assert (await router.call("bystander__echo", {"text": "still here"})).text == "still here"
            back = await next_event(events, HealthChanged)
        assert back.healthy and back.version > lost.version
        assert [t.name for t in router.adapter.tools_of("s")] == list(names)
        new_pid = int((await router.call("s__pid", {})).text)
        assert new_pid != pid
        assert router.status("s").healthy


async def test_giving_up_makes_the_peer_leave(tmp_path: Path) -> None:
    marker = tmp_path / "started-once"
    # Starts the first time only: every reconnect attempt fails.
    script = f'test -e "{marker}" && exit 3; touch "{marker}"; exec "$0" "$@"'
    peer = StdioPeer("sh", ["-c", script, tiny().command, *tiny().args])
    async with Router(reconnect=Reconnect(initial_delay=0.01, jitter=0, max_attempts=2)) as router:
        await router.join("once", peer)
        pid = int((await router.call("once__pid", {})).text)
        with router.events() as events:
            os.kill(pid, signal.SIGKILL)
            left = await next_event(events, PeerLeft)
        assert left.reason.startswith("gave up reconnecting to peer 'once' after 2 failed attempt(s)")
        assert router.peers == () and router.adapter.peers == ()
        outcome = await router.call("once__echo", {"text": "x"})
        assert "gave up reconnecting" in outcome.text


async def test_timeouts_per_call_tool_and_peer_cancel_the_call(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    peer = tiny(env={"TINY_SERVER_LOG": str(log)}, call_timeout=0.3, tool_timeouts={"echo": 5})
    async with Router(call_timeout=30) as router:
        await router.join("s", peer)
        by_peer = await router.call("s__sleep", {"seconds": 5})
        by_call = await router.call("s__echo", {"text": "fast"}, call_timeout=WAIT)
        assert by_peer.text == "Error: s__sleep did not answer within 0.3 s; the call was abandoned"
        assert by_call.text == "fast"
        # The server reads its input in order: once `echo` is answered, the cancellation was read.
        assert (await router.call("s__echo", {"text": "sync"})).text == "sync"
        received = [json.loads(line) for line in log.read_text().splitlines()]
        cancelled = [m for m in received if m["method"] == "notifications/cancelled"]
        assert len(cancelled) == 1 and isinstance(cancelled[0]["params"]["requestId"], int)


async def test_concurrency_limit_per_peer_and_parallel_peers() -> None:
    async with Router() as router:
        await router.join("one", tiny(max_concurrency=1))
        await router.join("two", tiny())
        calls = [
            chat_call(f"c{i}", f"{peer}__sleep", {"seconds": 0.4}) for i, peer in enumerate(["one", "one"])
        ]
        start = anyio.current_time()
        answers = await router.dispatch(calls)
        serial = anyio.current_time() - start
        assert [a["content"] for a in answers] == ["slept", "slept"] and serial >= 0.8
        calls = [
            chat_call(f"c{i}", f"{peer}__sleep", {"seconds": 0.4}) for i, peer in enumerate(["one", "two"])
        ]
        start = anyio.current_time()
        await router.dispatch(calls)
        assert anyio.current_time() - start < 0.75


async def test_progress_of_a_long_call_is_observable() -> None:
    async with Router() as router:
        await router.join("s", tiny())
        with router.events() as events:
            answer = await router.dispatch([chat_call("long-1", "s__sleep", {"seconds": 0.3})])
            progress = await next_event(events, CallProgress)
        assert answer[0]["content"] == "slept"
        assert progress.call_id == "long-1" and progress.name == "s__sleep" and progress.peer == "s"
        assert progress.progress == 1 and progress.message == "step 1"


async def test_events_end_with_the_router() -> None:
    collected: list[RouterEvent] = []
    async with anyio.create_task_group() as tg:
        async with Router() as router:
            events = router.events()
            events.__enter__()

            async def collect() -> None:
                async for event in events:
                    collected.append(event)

            tg.start_soon(collect)
            await router.join("g", growing_server())
        # Leaving the Router closes the stream: `collect` ends by itself.
    assert [type(e) for e in collected] == [PeerJoined, PeerLeft]


async def test_a_given_session_that_fails_makes_its_peer_leave() -> None:
    params = mcp.StdioServerParameters(command=tiny().command, args=list(tiny().args))
    async with mcp.Client(params) as client, Router(health_interval=0.1) as router:
        await router.join("given", client)
        pid = int((await router.call("given__pid", {})).text)
        with router.events() as events:
            os.kill(pid, signal.SIGKILL)
            left = await next_event(events, PeerLeft)
        assert left.reason.startswith("the session of peer 'given' failed")
        assert router.peers == () and router.tools == ()


class _PlainSession:
    """A session of our own making: `list_tools` and `call_tool`, no timeout or progress support."""

    def __init__(self, client: mcp.Client) -> None:
        self._client = client

    async def list_tools(self, cursor: str | None = None) -> Any:
        return await self._client.list_tools(cursor=cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self._client.call_tool(name, arguments)


async def test_a_plain_session_is_bounded_by_the_router() -> None:
    async with mcp.Client(growing_server()) as client, Router() as router:
        await router.join("plain", _PlainSession(client))
        assert (await router.call("plain__echo", {"text": "plain"})).text == "plain"
        outcome = await router.call("plain__wait", {"seconds": 30}, call_timeout=0.2)
        assert outcome.text == "Error: plain__wait did not answer within 0.2 s; the call was abandoned"


async def test_the_blocks_own_exception_is_not_wrapped() -> None:
    with pytest.raises(LookupError, match="from the block"):
        async with Router() as router:
            await router.join("g", growing_server())
            raise LookupError("from the block")


async def test_a_router_is_used_once() -> None:
    router = Router()
    with pytest.raises(RuntimeError, match="inside `async with Router"):
        await router.join("g", growing_server())
    async with router:
        pass
    with pytest.raises(RuntimeError, match="entered only once"):
        async with router:
            pass


async def test_leaving_the_block_stops_everything_even_mid_call() -> None:
    with anyio.fail_after(WAIT):
        async with Router() as router:
            await router.join("s", tiny())
            await router.join("g", growing_server())
            with anyio.move_on_after(0.2):
                await router.call("s__sleep", {"seconds": 30})
    assert router.peers == ()


async def test_resolve_public_name_and_rejected_tools_as_the_sync_facade_has_them() -> None:
    odd = Path(__file__).parents[1] / "support" / "odd_listing_server.py"
    async with Router() as router:
        await router.join("grower", growing_server())
        await router.join("odd", StdioPeer(sys.executable, [str(odd)]))
        key = router.resolve("grower__echo")
        assert (key.peer, key.tool) == ("grower", "echo")
        assert router.public_name("grower", "echo") == "grower__echo"
        assert router.public_name("odd", "fine") == "odd__fine"
        with pytest.raises(UnknownToolError, match="grower__nothing"):
            router.resolve("grower__nothing")
        with pytest.raises(UnknownToolError, match="'nothing'"):
            router.public_name("grower", "nothing")
        assert router.rejected_tools("grower") == {}
        assert set(router.rejected_tools("odd")) == {"nan_bound", "huge", "infinite_default"}
        assert router.rejected_tools("odd") == router.adapter.rejected_tools("odd")
