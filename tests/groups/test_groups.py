"""Groups of equivalent tools through the adapter, with real in-process MCP servers.

The default catalogue is pinned: the file under tests/support/fixtures/pinned was written by the
code before groups existed (tests/support/default_catalogue.py), and an adapter given no group
options (or only `stats=True`) must publish it byte for byte. Its `relevant` list was written
again when ranking began to spread copies of one tool apart (tests/relevance/test_copies.py): of
the two peers listing the time server's tools, one copy of `convert_time` now makes room.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as mt
import pytest
from openai import AsyncOpenAI

from mcpx_router import GroupChanged, OpenAIPeerToolAdapter, ToolKey, UsageError, as_aliases
from mcpx_router._dispatch import NOT_SENT
from mcpx_router.groups._spec import auto_group_name
from mcpx_router.loop import run_chat
from mcpx_router.testing import HashingEmbedder

from ..support._model_peers import RecordingPeer, connected, text_result
from ..support._openai_replay import CHAT, chat_completion, replay_openai, tool_call
from ..support.default_catalogue import PINNED, catalogue

pytestmark = pytest.mark.anyio

QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
LIMITED = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}


def search_peer(name: str, schema: dict[str, Any] = QUERY, tool: str = "search") -> RecordingPeer:
    async def answer(arguments: dict[str, Any]) -> mt.CallToolResult:
        return text_result(f"{name}: {json.dumps(arguments, sort_keys=True)}")

    return RecordingPeer(name).tool(tool, schema, answer, description="Search for a query.")


def names(tools: Any) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def chat_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.mark.parametrize(
    "options", [{}, {"stats": True}, {"aliases": {}}], ids=["none", "stats", "no-aliases"]
)
async def test_the_default_catalogue_is_byte_for_byte_what_it_was(options: dict[str, Any]) -> None:
    published = json.dumps(await catalogue(**options), indent=1, sort_keys=False) + "\n"
    assert published == PINNED.read_text(encoding="utf-8")


async def test_auto_groups_join_tools_of_one_name_and_schema_and_leave_the_others() -> None:
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))["chat"]
    grouped = (await catalogue(auto_groups=True))["chat"]
    # mcp-server-time and its copy list the same tools: each pair is one function more.
    assert names(grouped)[:2] == ["get_current_time", "convert_time"]
    assert names(grouped)[2:] == names(pinned)  # the members stay callable by their own names
    first = grouped[0]["function"]
    assert first["description"].endswith("(offered by mcp-server-time, time-copy)")
    assert first["parameters"]["properties"]["peer"]["enum"] == ["mcp-server-time", "time-copy"]
    assert "peer" not in first["parameters"].get("required", [])
    # search-agent and docs both have `search`, with different schemas: no group.
    assert "search" not in names(grouped)


def test_an_automatic_group_is_named_as_the_many_peers_guide_says() -> None:
    # docs/many-peers.md: "an automatic group takes the tool's name when it is such a name, else
    # the name made legal with runs of `_` collapsed, and when that is taken, `_` and eight hex
    # digits of the tool's name."
    guide = " ".join(
        (Path(__file__).parents[2] / "docs" / "many-peers.md").read_text(encoding="utf-8").split()
    )
    assert (
        "an automatic group takes the tool's name when it is such a name, else the name made legal "
        "with runs of `_` collapsed, and when that is taken, `_` and eight hex digits of the tool's name"
    ) in guide
    assert auto_group_name("search", set()) == "search"
    assert auto_group_name("find.docs", set()) == "find_docs"
    assert auto_group_name("find..docs/v2", set()) == "find_docs_v2"
    assert auto_group_name("a__b", set()) == "a_b"
    assert re.fullmatch(r"find_docs_[0-9a-f]{8}", auto_group_name("find.docs", {"find_docs"}))
    assert re.fullmatch(r"search_[0-9a-f]{8}", auto_group_name("search", {"search"}))


async def test_tools_named_find_docs_on_two_peers_group_as_find_docs() -> None:
    web, docs = search_peer("web", tool="find.docs"), search_peer("docs", tool="find.docs")
    async with connected(web=web, docs=docs) as clients, OpenAIPeerToolAdapter(auto_groups=True) as adapter:
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        assert [group.name for group in adapter.groups()] == ["find_docs"]
        assert names(adapter.get_openai_tools())[0] == "find_docs"
        [answer] = await adapter.dispatch([chat_call("c1", "find_docs", {"query": "x", "peer": "docs"})])
        assert answer["content"].startswith('docs: {"query": "x"}')


async def test_a_group_call_goes_to_one_member_without_the_peer_parameter() -> None:
    web, docs = search_peer("web"), search_peer("docs")
    async with (
        connected(web=web, docs=docs) as clients,
        OpenAIPeerToolAdapter(aliases={"search": ["web/search", "docs/search"]}) as adapter,
    ):
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        assert names(adapter.get_openai_tools()) == ["search", "web__search", "docs__search"]
        [answer] = await adapter.dispatch([chat_call("c1", "search", {"query": "mcp", "peer": "docs"})])
        assert answer["content"] == 'docs: {"query": "mcp"}\n\n(served by docs)'
        assert docs.calls == [("search", {"query": "mcp"})] and web.calls == []
        outcome = await adapter.call("search", {"query": "x"})
        assert outcome.group == "search" and outcome.tool is not None
        assert outcome.text.endswith(f"(served by {outcome.tool.peer})")
        assert adapter.stats().tools[ToolKey("docs", "search")].calls == 2 - (outcome.tool.peer == "web")


async def test_members_are_hidden_only_while_their_group_is_published() -> None:
    async with connected(web=search_peer("web"), docs=search_peer("docs", LIMITED)) as clients:
        async with OpenAIPeerToolAdapter(
            aliases={"search": ["web/search", "docs/search"]}, hide_members=True
        ) as a:
            seen: list[Any] = []
            a.on_event = seen.append
            for peer, client in clients.items():
                await a.add_peer(peer, client)
            # Their schemas differ: the group is split, and its members are offered as themselves.
            assert names(a.get_openai_tools()) == ["web__search", "docs__search"]
            [info] = a.groups()
            assert not info.published and "schemas of its members differ" in (info.reason or "")
            assert [e.kind for e in seen if isinstance(e, GroupChanged)] == ["formed", "split"]
            [answer] = await a.dispatch([chat_call("c1", "search", {"query": "q"})])
            assert answer["content"].startswith("Error: 'search' is not available now: the group 'search'")
            await a.remove_peer("docs")
            assert names(a.get_openai_tools()) == ["search"]
            assert [e.kind for e in seen if isinstance(e, GroupChanged)][-1] == "formed"


async def test_accepting_a_suggestion_is_passing_it_as_aliases() -> None:
    async with connected(a=search_peer("a", tool="find"), b=search_peer("b")) as clients:
        async with OpenAIPeerToolAdapter() as adapter:
            for peer, client in clients.items():
                await adapter.add_peer(peer, client)
            before = adapter.version
            suggestion = {"lookup": {"members": ["a/find", "b/search"], "score": 0.91}}
            adapter.set_aliases(suggestion)
            assert adapter.version > before
            assert names(adapter.get_openai_tools()) == ["lookup", "a__find", "b__search"]
            adapter.set_aliases({"lookup": []})
            assert names(adapter.get_openai_tools()) == ["a__find", "b__search"]


async def test_strict_groups_take_a_null_peer() -> None:
    async with connected(web=search_peer("web"), docs=search_peer("docs")) as clients:
        async with OpenAIPeerToolAdapter(strict=True, auto_groups=True) as adapter:
            for peer, client in clients.items():
                await adapter.add_peer(peer, client)
            group = adapter.get_openai_tools()[0]["function"]
            assert group["name"] == "search" and group["strict"] is True
            assert group["parameters"]["required"] == ["query", "peer"]
            assert group["parameters"]["properties"]["peer"]["enum"] == ["web", "docs", None]
            outcome = await adapter.call("search", {"query": "q", "peer": None})
            assert not outcome.is_error, outcome.text


async def test_feedback_moves_calls_to_the_better_member() -> None:
    async with connected(web=search_peer("web"), docs=search_peer("docs")) as clients:
        async with OpenAIPeerToolAdapter(auto_groups=True) as adapter:
            for peer, client in clients.items():
                await adapter.add_peer(peer, client)
            [first] = await adapter.dispatch([chat_call("c1", "search", {"query": "q"})])
            served = adapter.feedback("c1", ok=False, weight=3)
            assert served.peer in first["content"].rsplit("(served by ", 1)[1]
            for index in range(4):
                outcome = await adapter.call("search", {"query": str(index)})
                assert outcome.tool is not None and outcome.tool.peer != served.peer
            report = adapter.stats()
            assert report.peers[served.peer].bad == 3 and report.peers[served.peer].score < 0.5
            with pytest.raises(UsageError, match="no call with id 'nope'"):
                adapter.feedback("nope", ok=True)


async def test_statistics_are_asked_for() -> None:
    async with OpenAIPeerToolAdapter() as adapter:
        with pytest.raises(UsageError, match="stats=True"):
            adapter.stats()


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ({"web__search": ["web/search"]}, "contains '__'"),
        ({"bad name": ["web/search"]}, "must be 1 to 64 characters"),
        ({"search": ["websearch"]}, "is not 'peer/tool'"),
        ({"search": "web/search"}, "must be a list"),
        ({"search": []}, "has no members"),
    ],
)
async def test_unusable_aliases_are_refused_with_what_to_write(aliases: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        OpenAIPeerToolAdapter(aliases=aliases)


async def test_a_member_whose_peer_closed_is_not_called_twice() -> None:
    """The session of `web` is closed under the adapter: its failure may have run the call, and
    the tool is not marked read-only, so `docs` is not tried."""
    web, docs = search_peer("web"), search_peer("docs")
    async with (
        connected(docs=docs) as clients,
        OpenAIPeerToolAdapter(
            aliases={"search": ["web/search", "docs/search"]}, policy="round_robin"
        ) as adapter,
    ):
        async with mcp.Client(web.server()) as gone:
            await adapter.add_peer("web", gone)
        await adapter.add_peer("docs", clients["docs"])
        outcome = await adapter.call("search", {"query": "q", "peer": "web"})
        assert outcome.is_error and outcome.error_type not in NOT_SENT, outcome.error_type
        assert docs.calls == []


async def test_run_chat_offers_the_group_and_answers_its_calls_through_the_sdk() -> None:
    web, docs = search_peer("web"), search_peer("docs")
    assistant = {
        "content": None,
        "tool_calls": [
            tool_call("call_1", "search", '{"query": "mcp", "peer": "docs"}'),
            tool_call("call_2", "search", '{"query": "anyio"}'),
        ],
    }
    script = [chat_completion(assistant), chat_completion({"content": "Found both."})]
    with replay_openai(script) as replay:
        async with (
            connected(web=web, docs=docs) as clients,
            OpenAIPeerToolAdapter(auto_groups=True, hide_members=True) as adapter,
            AsyncOpenAI(base_url=replay.base_url, api_key="sk-test", max_retries=0) as client,
        ):
            for peer, session in clients.items():
                await adapter.add_peer(peer, session)
            with anyio.fail_after(20):
                result = await run_chat(
                    client, adapter, model="m", messages=[{"role": "user", "content": "go"}]
                )
    assert (result.text, result.tool_calls) == ("Found both.", 2)
    first, second = replay.bodies(CHAT)
    assert [tool["function"]["name"] for tool in first["tools"]] == ["search"]
    offered = first["tools"][0]["function"]
    assert offered["parameters"]["properties"]["peer"]["enum"] == ["web", "docs"]
    answers = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert answers["call_1"] == 'docs: {"query": "mcp"}\n\n(served by docs)'
    assert answers["call_2"].startswith('web: {"query": "anyio"}') or answers["call_2"].startswith("docs:")
    assert sorted(call[1]["query"] for call in web.calls + docs.calls) == ["anyio", "mcp"]
    assert all(call[1].keys() == {"query"} for call in web.calls + docs.calls)


@pytest.mark.parametrize(
    "arguments",
    [
        '{"query": "q", "peer": "docs"}',
        '{"query": "q", "\\u0070eer": "docs"}',
        '"{\\"query\\": \\"q\\", \\"peer\\": \\"docs\\"}"',
    ],
    ids=["plain", "escaped-key", "encoded-twice"],
)
async def test_the_peer_parameter_never_reaches_the_peer(arguments: str) -> None:
    web, docs = search_peer("web"), search_peer("docs")
    async with connected(web=web, docs=docs) as clients, OpenAIPeerToolAdapter(auto_groups=True) as adapter:
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        outcome = await adapter.call("search", arguments)
        assert outcome.text == 'docs: {"query": "q"}\n\n(served by docs)'
        assert docs.calls == [("search", {"query": "q"})] and web.calls == []


async def test_suggested_groups_are_accepted_as_aliases_and_ranked_with_the_rest() -> None:
    web, docs = search_peer("web"), search_peer("docs", tool="find")
    async with (
        connected(web=web, docs=docs) as clients,
        OpenAIPeerToolAdapter(embedder=HashingEmbedder(), hide_members=True, max_tools=1) as adapter,
    ):
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        suggestions = await adapter.suggest_groups(min_score=0.1)
        adapter.set_aliases(as_aliases(suggestions, min_score=0.1))
        [group] = adapter.groups()
        assert group.published and set(group.members) == {ToolKey("web", "search"), ToolKey("docs", "find")}
        # The views, `tools`, the ranking and a selection with embeddings all see the group alone.
        assert [t.name for t in adapter.tools] == [group.name] == names(adapter.get_openai_tools())
        assert [t.name for t, _ in await adapter.rank_tools("search for a query")] == [group.name]
        assert names(await adapter.select_tools("chat", relevant_to="search for a query")) == [group.name]


@pytest.mark.parametrize("hide", [False, True])
async def test_a_misspelt_group_gets_the_group_suggested_and_only_names_the_lists_show(hide: bool) -> None:
    """Suggestions follow the tool lists: the group always; its members only while they are listed."""
    async with (
        connected(web=search_peer("web"), docs=search_peer("docs")) as clients,
        OpenAIPeerToolAdapter(
            aliases={"search": ["web/search", "docs/search"]}, hide_members=hide
        ) as adapter,
    ):
        for peer, client in clients.items():
            await adapter.add_peer(peer, client)
        listed = names(adapter.get_openai_tools())
        assert ("web__search" in listed) is not hide and listed[0] == "search"
        group = await adapter.call("serch", {"query": "q"})
        assert group.is_error and group.error_type == "unknown_tool"
        assert "Did you mean 'search'" in group.text
        member = await adapter.call("web__serch", {"query": "q"})
        assert member.is_error and member.error_type == "unknown_tool"
        assert ("'web__search'" in member.text) is not hide, member.text
        assert "__search" not in member.text if hide else "Did you mean 'web__search'?" in member.text
