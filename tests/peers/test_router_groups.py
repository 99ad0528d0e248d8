"""Groups through the Router: stdio and HTTP peers dying, joining, leaving and changing their tools.

The stdio search peers (tests/support/search_stdio_server.py) log every `tools/call` they read
before running it: that log, not our own account, proves how often a call ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpx_router import (
    ConfigError,
    GroupChanged,
    GroupFailover,
    HealthChanged,
    HttpPeer,
    OpenAIPeerToolAdapter,
    PeerLeft,
    Reconnect,
    Router,
    RouterEvent,
    StdioPeer,
    ToolKey,
)
from mcpx_router.peers._link import PeerLink

from ..support._model_peers import RecordingPeer, connected
from ..support.router_support import ABANDONED_HTTP_STREAMS, HERE, WAIT, http_server, next_event

pytestmark = [pytest.mark.anyio, *ABANDONED_HTTP_STREAMS]

SEARCH = HERE / "search_stdio_server.py"
SLOW = Reconnect(initial_delay=30, max_delay=30, jitter=0)
"""A lost peer stays lost for the length of a test."""


def search_peer(name: str, log: Path, *, read_only: bool = True) -> StdioPeer:
    args = [str(SEARCH), "--name", name, *(["--read-only"] if read_only else [])]
    return StdioPeer(sys.executable, args, env={"TINY_SERVER_LOG": str(log)})


def calls_in(log: Path, tool: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [
        line["params"]["arguments"]
        for line in lines
        if line.get("method") == "tools/call" and line["params"]["name"] == tool
    ]


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def served_by(content: str) -> str:
    return content.rsplit("(served by ", 1)[1].split(";")[0].rstrip(")")


async def test_three_search_peers_one_dies_mid_conversation(tmp_path: Path) -> None:
    logs = {name: tmp_path / f"{name}.log" for name in ("web", "news", "docs")}
    aliases = {"search": [f"{name}/search" for name in logs]}
    seen: list[RouterEvent] = []
    options: dict[str, Any] = {"reconnect": SLOW, "health_interval": None, "on_event": seen.append}
    async with Router(aliases=aliases, hide_members=True, **options) as router:
        await router.join_all({name: search_peer(name, log) for name, log in logs.items()})
        tools = [tool["function"]["name"] for tool in router.get_openai_tools()]
        assert tools[0] == "search" and "web__search" not in tools and "web__book" in tools
        [first] = await router.dispatch([chat_call("c1", "search", {"query": "mcp", "peer": "web"})])
        assert first["content"] == "web: results for mcp\n\n(served by web)"
        # The model asks web again; web crashes with the call in hand. search is read-only: news or
        # docs answers, and the answer says that web failed first and that it may have run there.
        [second] = await router.dispatch([chat_call("c2", "search", {"query": "die@web", "peer": "web"})])
        [failover] = [event for event in seen if isinstance(event, GroupFailover)]
        assert (failover.peer, failover.error_type, failover.maybe_ran) == ("web", "peer_unavailable", True)
        assert served_by(second["content"]) == failover.next_peer != "web"
        assert "web failed first: web__search: the call was sent, but the connection" in second["content"]
        assert "may or may not have taken effect" in second["content"]
        # web's tools are withdrawn: the group now offers news and docs only.
        with anyio.fail_after(WAIT):
            while not any(isinstance(e, HealthChanged) and e.peer == "web" for e in seen):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        group = router.get_openai_tools()[0]["function"]
        assert group["parameters"]["properties"]["peer"]["enum"] == ["news", "docs"]
        [third] = await router.dispatch([chat_call("c3", "search", {"query": "anyio", "peer": "web"})])
        assert served_by(third["content"]) in ("news", "docs")
        assert [record.peer for record in router.groups()[0].members] == ["news", "docs"]
        report = router.stats()
        assert report.peers["web"].errors["peer_unavailable"] == 1
        assert report.peers["web"].last_failure is not None
        # Each call ran where the logs say, and only there.
        assert calls_in(logs["web"], "search") == [{"query": "mcp"}, {"query": "die@web"}]
        others = calls_in(logs["news"], "search") + calls_in(logs["docs"], "search")
        assert sorted(call["query"] for call in others) == ["anyio", "die@web"]


async def test_a_call_that_may_have_run_is_not_run_again(tmp_path: Path) -> None:
    """`book` declares no hints: after a peer died with the call in hand, no other member gets it."""
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    aliases = {"book": ["a/book", "b/book"]}
    async with Router(aliases=aliases, reconnect=SLOW, health_interval=None) as router:
        await router.join_all({name: search_peer(name, log, read_only=False) for name, log in logs.items()})
        outcome = await router.call("book", {"item": "die", "peer": "a"})
        assert outcome.is_error and outcome.error_type == "peer_unavailable"
        assert outcome.text.startswith("Error: a__book: the call was sent, but the connection to peer 'a'")
        assert outcome.text.endswith(
            "(tried on a; not tried on b: the call may have taken effect on a, and book is not marked "
            "read-only or idempotent)"
        )
    assert calls_in(logs["a"], "book") == [{"item": "die"}]
    assert calls_in(logs["b"], "book") == []


async def test_the_host_may_allow_running_it_again_and_is_told(tmp_path: Path) -> None:
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    async with Router(auto_groups=True, failover="always", reconnect=SLOW, health_interval=None) as router:
        await router.join_all({name: search_peer(name, log, read_only=False) for name, log in logs.items()})
        outcome = await router.call("book", {"item": "die", "peer": "a"})
        # b dies too (the same item): both ran it, and the answer lists both failures.
        assert outcome.is_error and "a failed first" in outcome.text
    assert calls_in(logs["a"], "book") == calls_in(logs["b"], "book") == [{"item": "die"}]


async def test_membership_follows_joining_leaving_and_changed_schemas(tmp_path: Path) -> None:
    async with Router(auto_groups=True, reconnect=SLOW, health_interval=None) as router:
        with router.events() as events:
            await router.join("a", search_peer("a", tmp_path / "a.log"))
            assert [g.name for g in router.groups()] == []
            await router.join("b", search_peer("b", tmp_path / "b.log"))
            formed = await next_event(events, GroupChanged, lambda e: e.group == "search")
            assert (formed.kind, formed.members) == ("formed", ("a__search", "b__search"))
            await router.join("c", search_peer("c", tmp_path / "c.log"))
            grown = await next_event(events, GroupChanged, lambda e: e.group == "search")
            assert (grown.kind, grown.members) == ("changed", ("a__search", "b__search", "c__search"))
            await router.leave("c")
            shrunk = await next_event(events, GroupChanged, lambda e: e.group == "search")
            assert (shrunk.kind, shrunk.members) == ("changed", ("a__search", "b__search"))
            # a's search takes a new parameter: the schemas differ, the group splits.
            await router.call("a__reshape", {})
            split = await next_event(events, GroupChanged, lambda e: e.group == "search")
            assert split.kind == "split" and "a/search" in (split.reason or "")
            assert "search" not in [tool["function"]["name"] for tool in router.get_openai_tools()]
            [answer] = await router.dispatch([chat_call("c1", "search", {"query": "q"})])
            assert "'search' is not available now" in answer["content"]
            await router.leave("b")
            await next_event(events, PeerLeft)
            assert router.groups() == ()  # one peer left: no tool is offered twice


async def test_a_refused_connection_is_safe_to_send_elsewhere() -> None:
    """An HTTP peer whose server is gone refuses the connection: the call was never sent, so even a
    tool without hints goes on to the next member. (If the Router notices the loss first, the
    member has left the group and the call goes to the other one directly.)"""
    seen: list[RouterEvent] = []
    async with http_server() as one, http_server() as two:
        aliases = {"echo": ["one/echo", "two/echo"]}
        async with Router(
            aliases=aliases, reconnect=SLOW, health_interval=None, on_event=seen.append
        ) as router:
            await router.join_all({"one": HttpPeer(one.url), "two": HttpPeer(two.url)})
            await one.kill()
            outcome = await router.call("echo", {"text": "hi", "peer": "one"})
            assert not outcome.is_error and outcome.text.startswith("hi\n\n(served by two")
            failovers = [event for event in seen if isinstance(event, GroupFailover)]
            if failovers:
                assert [(f.peer, f.error_type, f.maybe_ran) for f in failovers] == [
                    ("one", "not_sent", False)
                ]
                assert "one failed first: one__echo: the call was not sent" in outcome.text
                assert router.stats().peers["one"].errors["not_sent"] == 1
            else:
                assert any(isinstance(e, HealthChanged) and e.peer == "one" for e in seen)


async def test_a_call_not_sent_goes_to_the_next_member_whatever_the_tool() -> None:
    """A Router peer's link whose connection is lost (and not yet withdrawn) says the call was not
    sent: the next member runs it, although the tool declares no hints, and the lost one never did."""
    web, docs = RecordingPeer("web"), RecordingPeer("docs")
    for peer in (web, docs):
        peer.tool("book", {"type": "object", "properties": {"item": {"type": "string"}}})
    async with (
        connected(web=web, docs=docs) as clients,
        OpenAIPeerToolAdapter(aliases={"book": ["web/book", "docs/book"]}) as adapter,
    ):
        link = PeerLink("web")
        link.attach(clients["web"])
        await adapter.add_peer("web", link)
        await adapter.add_peer("docs", clients["docs"])
        link.detach("lost")
        outcome = await adapter.call("book", {"item": "x", "peer": "web"})
        assert not outcome.is_error and outcome.tool is not None and outcome.tool.peer == "docs"
        assert "web failed first: web__book: peer 'web' is not connected" in outcome.text
        assert web.calls == [] and docs.calls == [("book", {"item": "x"})]
        assert adapter.stats().peers["web"].errors["not_sent"] == 1


def test_the_worked_example_runs_as_docs_many_peers_shows() -> None:
    example = HERE.parent.parent / "docs" / "examples" / "three_search_peers.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "offered: search: Search for documents matching a query. (offered by web, news, docs)"
    assert "  -> news found 3 results for 'peer reputation'" in lines
    assert "     (served by docs; web, which was asked for, is not available now)" in lines
    assert lines[-3:] == [
        "  web: 2 calls, failures {'peer_unavailable': 1}, connected False",
        "  news: 2 calls, failures none, connected True",
        "  docs: 1 calls, failures none, connected True",
    ]
    docs = (HERE.parent.parent / "docs" / "many-peers.md").read_text(encoding="utf-8")
    shown = docs.split("printed:\n\n```\n", 1)[1].split("```", 1)[0].splitlines()
    # The page shows the output as it is (the events may interleave differently on a busy machine).
    assert [line for line in shown if "[event]" not in line] == [
        line for line in lines if "[event]" not in line
    ]
    assert sorted(line for line in shown if "[event]" in line) == sorted(
        line for line in lines if "[event]" in line
    )


async def test_a_config_file_names_groups_next_to_its_servers(tmp_path: Path) -> None:
    servers = {
        name: {"command": sys.executable, "args": [str(SEARCH), "--name", name, "--read-only"]}
        for name in ("a", "b")
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers, "aliases": {"find": ["a/search", "b/search"]}}))
    async with Router(reconnect=SLOW, health_interval=None) as router:
        await router.join_config(config)
        [group] = router.groups()
        assert (group.name, group.published, group.members) == (
            "find",
            True,
            (ToolKey("a", "search"), ToolKey("b", "search")),
        )
        outcome = await router.call("find", {"query": "q", "peer": "b"})
        assert outcome.text == "b: results for q\n\n(served by b)"
    config.write_text(json.dumps({"mcpServers": servers, "aliases": {"a__b": ["a/search"]}}))
    async with Router() as router:
        with pytest.raises(ConfigError, match=r'"aliases": the group name .a__b. contains'):
            await router.join_config(config)
        assert router.peers == ()
