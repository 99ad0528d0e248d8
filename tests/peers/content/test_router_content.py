"""Resources, resource templates and prompts of the Router's peers: names, reading, changes, tools."""

from __future__ import annotations

import logging
import re

import mcp
import mcp_types as mt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_router import (
    ContentChanged,
    ContentError,
    HealthChanged,
    HttpPeer,
    InProcessPeer,
    OpenAIPeerToolAdapter,
    Reconnect,
    Router,
    StdioPeer,
    ToolsChanged,
    UnknownContentError,
)

from ...support.content_peers import PagedContent, library, tools_only
from ...support.router_support import ABANDONED_HTTP_STREAMS, HERE, http_server, next_event

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]
LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAST = Reconnect(initial_delay=0.1, max_delay=0.5, jitter=0)


@pytest.mark.parametrize("mode", MODES)
async def test_resources_templates_and_prompts_are_published_under_peer_prefixed_names(mode: str) -> None:
    async with Router() as router:
        await router.join("lib", InProcessPeer(library(), mode=mode))
        assert [(r.name, r.peer, r.uri) for r in router.resources()] == [
            ("lib__readme", "lib", "doc://readme"),
            ("lib__notes", "lib", "doc://notes"),
        ]
        assert [(t.name, t.uri_template) for t in router.resource_templates()] == [
            ("lib__page", "doc://pages/{page}")
        ]
        assert [(p.name, p.prompt.name) for p in router.prompts()] == [("lib__greet", "greet")]
        assert router.resources("other") == ()

        by_name = await router.read_resource("lib__readme")
        assert [c.text for c in by_name.contents if isinstance(c, mt.TextResourceContents)] == [
            "Read me first."
        ]
        templated = await router.read_resource("lib", "doc://pages/7")
        assert [c.text for c in templated.contents if isinstance(c, mt.TextResourceContents)] == ["page 7"]
        prompt = await router.get_prompt("lib__greet", {"who": "Ada"})
        assert [m.content.text for m in prompt.messages if isinstance(m.content, mt.TextContent)] == [
            "Hello Ada, I am glad."
        ]

        with pytest.raises(UnknownContentError, match="no resource is published under 'lib__nothing'"):
            await router.read_resource("lib__nothing")
        with pytest.raises(UnknownContentError, match="no prompt"):
            await router.get_prompt("lib__readme")
        with pytest.raises(ContentError, match="peer 'lib' answered") as refused:
            await router.read_resource("lib", "doc://missing")
        assert refused.value.peer == "lib"
        with pytest.raises(ContentError, match="peer 'lib' answered"):
            await router.get_prompt("lib__greet", {})  # "who" is required


@pytest.mark.parametrize("mode", MODES)
async def test_list_changes_are_followed_with_events(mode: str) -> None:
    async with Router() as router:
        await router.join("lib", InProcessPeer(library(), mode=mode))
        with router.events() as events:
            assert (await router.call("lib__add_resource", {"name": "extra"})).text == "added"
            changed = await next_event(events, ContentChanged)
            assert (changed.kind, changed.added, changed.removed) == ("resources", ("lib__extra",), ())
            assert [r.uri for r in router.resources()][-1] == "doc://extra"
            read = await router.read_resource("lib__extra")
            assert [c.text for c in read.contents if isinstance(c, mt.TextResourceContents)] == [
                "text of extra"
            ]

            assert (await router.call("lib__add_prompt", {"name": "fresh"})).text == "added"
            changed = await next_event(events, ContentChanged)
            assert (changed.kind, changed.added) == ("prompts", ("lib__fresh",))


async def test_a_session_peer_is_followed_on_its_listen_stream() -> None:
    """A `SessionPeer`'s notifications go to its owner; at 2026-07-28 the Router listens itself."""
    async with mcp.Client(library(), mode="2026-07-28") as client, Router() as router:
        await router.join("own", client)
        assert [r.name for r in router.resources()] == ["own__readme", "own__notes"]
        with router.events() as events:
            await client.call_tool("add_resource", {"name": "late"})
            changed = await next_event(events, ContentChanged)
        assert changed.added == ("own__late",)


async def test_leaving_withdraws_everything_and_frees_the_names() -> None:
    async with Router() as router:
        await router.join("lib", library())
        await router.leave("lib")
        assert router.resources() == router.resource_templates() == router.prompts() == ()
        with pytest.raises(UnknownContentError):
            await router.read_resource("lib__readme")
        # The names are free: another peer under the same id takes them again.
        await router.join("lib", library("again"))
        assert [r.name for r in router.resources()] == ["lib__readme", "lib__notes"]


async def test_a_peer_without_the_capabilities_has_none_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpx_router")
    async with Router(resource_tools=True) as router:
        assert await router.join("bare", tools_only()) == ("bare__t",)  # no read_resource/get_prompt tools
        assert router.resources() == router.resource_templates() == router.prompts() == ()
    ours = [r for r in caplog.records if r.name.startswith("mcpx_router")]
    assert [r for r in ours if r.levelno >= logging.WARNING] == []
    assert [r for r in ours if re.search("resource|prompt", r.getMessage())] == []


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)


@settings(max_examples=100, deadline=None)
@given(
    uris=st.lists(_TEXT, min_size=0, max_size=9),
    names=st.lists(_TEXT, min_size=9, max_size=9),
    page_size=st.integers(1, 4),
    own_tools=st.lists(
        st.sampled_from(["read_resource", "mcp_read_resource", "get_prompt", "x"]), unique=True
    ),
)
async def test_every_page_of_resources_of_any_text_is_published_and_readable(
    uris: list[str], names: list[str], page_size: int, own_tools: list[str]
) -> None:
    resources = [mt.Resource(uri=uri, name=name) for uri, name in zip(uris, names, strict=False)]
    prompts = [mt.Prompt(name=name) for name in dict.fromkeys(names[:3])]
    peer = PagedContent(resources, prompts, page_size=page_size, tools=own_tools)
    async with Router(resource_tools=True) as router:
        published = await router.join("p", peer.server())
        listed = router.resources()
        # Every page, in the peer's order; a URI listed twice is one resource (the first entry).
        assert [r.uri for r in listed] == list(dict.fromkeys(uris))
        assert len({r.name for r in listed}) == len(listed)
        assert all(LEGAL.match(r.name) and r.peer == "p" for r in listed)
        for resource in listed:
            read = await router.read_resource(resource.name)
            assert [c.text for c in read.contents if isinstance(c, mt.TextResourceContents)] == [resource.uri]
        assert [p.prompt.name for p in router.prompts()] == list(dict.fromkeys(names[:3]))

        # The peer's own tools keep their names; the offered ones take names the peer does not use.
        tools = {t.tool: t.name for t in router.adapter.tools_of("p")}
        assert {f"p__{own}" for own in own_tools} <= set(published)
        offered = [t for t in tools if t not in own_tools]
        assert len(offered) == bool(uris) + bool(prompts)
        for tool in offered:
            if "read_resource" in tool and uris:
                outcome = await router.call(tools[tool], {"uri": uris[-1]})
                assert outcome.text == f"[resource {uris[-1]} (unknown type)]\n{uris[-1]}"
        for own in own_tools:
            assert (await router.call(f"p__{own}", {})).text == f"own {own}"


@settings(max_examples=100, deadline=None)
@given(
    arguments=st.dictionaries(
        _TEXT, st.text(st.characters(exclude_categories=["Cs"]), max_size=10), max_size=4
    )
)
async def test_prompt_arguments_of_any_text_reach_the_peer(arguments: dict[str, str]) -> None:
    declared = [mt.PromptArgument(name=name) for name in [*arguments, "unused"]]
    peer = PagedContent([], [mt.Prompt(name="echo", arguments=declared)])
    expected = f"echo: {sorted(arguments.items())}"
    async with Router(resource_tools=True) as router:
        await router.join("p", peer.server())
        got = await router.get_prompt("p__echo", arguments)
        assert [m.content.text for m in got.messages if isinstance(m.content, mt.TextContent)] == [expected]
        outcome = await router.call("p__get_prompt", {"name": "echo", "arguments": arguments})
        assert outcome.text == f"[user]\n{expected}"


async def test_resource_tools_are_off_by_default_and_answer_like_tools_when_on() -> None:
    async with Router() as router:
        assert await router.join("lib", library()) == ("lib__add_resource", "lib__add_prompt")
    async with Router(resource_tools=True) as router:
        await router.join("lib", library())
        tools = {t["function"]["name"]: t["function"] for t in router.get_openai_tools()}
        read = tools["lib__read_resource"]
        # A template makes any URI possible: no enum then, the templates are described.
        assert "enum" not in read["parameters"]["properties"]["uri"]
        assert "doc://pages/{page}" in read["description"] and "doc://readme" in read["description"]
        assert tools["lib__get_prompt"]["parameters"]["properties"]["name"]["enum"] == ["greet"]
        answers = await router.dispatch(
            [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "lib__read_resource", "arguments": '{"uri": "doc://notes"}'},
                },
                {
                    "id": "2",
                    "type": "function",
                    "function": {"name": "lib__read_resource", "arguments": '{"uri": "doc://gone"}'},
                },
                {
                    "id": "3",
                    "type": "function",
                    "function": {
                        "name": "lib__get_prompt",
                        "arguments": '{"name": "greet", "arguments": {"who": "Bo"}}',
                    },
                },
            ]
        )
        assert answers[0]["content"] == "[resource doc://notes (text/markdown)]\n# Notes"
        assert answers[1]["content"].startswith("Error: lib__read_resource reported a failure:")
        assert answers[2]["content"] == "Greet someone.\n[user]\nHello Bo, I am glad."
        with router.events() as events:
            await router.call("lib__add_resource", {"name": "more"})
            changed = await next_event(events, ToolsChanged)
        assert changed.updated == ("lib__read_resource",)
        assert "doc://more" in router.adapter.tools_of("lib")[2].description


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_content_is_withdrawn_while_lost_and_refreshed_after_reconnect(
    mode: str, transport: str
) -> None:
    async def pid_of(router: Router) -> str:
        read = await router.read_resource("web__pid")
        return next(c.text for c in read.contents if isinstance(c, mt.TextResourceContents))

    async with http_server() as server, Router(reconnect=FAST, health_interval=0.2) as router:
        if transport == "http":
            spec: HttpPeer | StdioPeer = HttpPeer(server.url, mode=mode)
        else:
            import sys

            spec = StdioPeer(sys.executable, [str(HERE / "stdio_peer_server.py")], mode=mode)
        await router.join("web", spec)
        assert [(r.name, r.uri) for r in router.resources()] == [("web__pid", "peer://pid")]
        assert [p.name for p in router.prompts()] == ["web__hello"]
        first = await pid_of(router)
        with router.events() as events:
            if transport == "http":
                await server.kill()
            else:
                import os
                import signal

                os.kill(int(first), signal.SIGKILL)
            await next_event(events, HealthChanged, lambda e: not e.healthy)
            assert router.resources() == router.prompts() == ()
            with pytest.raises(UnknownContentError):
                await router.read_resource("web__pid")
            if transport == "http":
                await server.start()
            await next_event(events, HealthChanged, lambda e: e.healthy)
        assert [r.name for r in router.resources()] == ["web__pid"]
        assert await pid_of(router) != first


for _marker in ABANDONED_HTTP_STREAMS:
    test_content_is_withdrawn_while_lost_and_refreshed_after_reconnect = _marker(
        test_content_is_withdrawn_while_lost_and_refreshed_after_reconnect
    )


async def test_the_offered_tools_are_strict_when_the_adapter_is() -> None:
    async with (
        OpenAIPeerToolAdapter(strict=True) as adapter,
        Router(adapter=adapter, resource_tools=True) as router,
    ):
        await router.join("lib", library())
        strict = {t["function"]["name"]: t["function"].get("strict") for t in router.get_openai_tools()}
        assert strict["lib__read_resource"] is strict["lib__get_prompt"] is True
        arguments = '{"name": "greet", "arguments": {"who": "Bo", "mood": null}}'
        call = {
            "id": "1",
            "type": "function",
            "function": {"name": "lib__get_prompt", "arguments": arguments},
        }
        (answer,) = await router.dispatch([call])
        assert answer["content"] == "Greet someone.\n[user]\nHello Bo, I am glad."


@settings(max_examples=100, deadline=None)
@given(
    count=st.integers(1, 130),
    uri=_TEXT,
    templated=st.booleans(),
    argument_names=st.lists(_TEXT, max_size=6),
)
async def test_the_offered_tools_are_accepted_whatever_the_peer_lists(
    count: int, uri: str, templated: bool, argument_names: list[str]
) -> None:
    """Any URIs, templates and argument names: both tools are published, strict, never withheld;
    the URIs are an enum exactly when there is no template and they are few."""
    resources = [mt.Resource(uri=f"{uri}{i}", name=uri) for i in range(count)]
    templates = [mt.ResourceTemplate(uri_template=uri + "{x}", name="t")] if templated else []
    arguments = [mt.PromptArgument(name=name, required=i % 2 == 0) for i, name in enumerate(argument_names)]
    peer = PagedContent(
        resources, [mt.Prompt(name=uri, arguments=arguments)], page_size=50, templates=templates
    )
    async with (
        OpenAIPeerToolAdapter(strict=True) as adapter,
        Router(adapter=adapter, resource_tools=True) as router,
    ):
        await router.join("p", peer.server())
        assert router.adapter.rejected_tools("p") == {}
        tools = {t["function"]["name"]: t["function"] for t in router.get_openai_tools()}
        assert tools["p__read_resource"].get("strict") is tools["p__get_prompt"].get("strict") is True
        enum = tools["p__read_resource"]["parameters"]["properties"]["uri"].get("enum")
        few = count <= 100 and sum(len(r.uri) for r in resources) <= 7_500
        assert enum == ([r.uri for r in resources] if few and not templated else None)
        answer = await router.call("p__read_resource", {"uri": resources[-1].uri})
        assert answer.text.endswith("\n" + resources[-1].uri)
