"""Per-peer tool filters (`include_tools` / `exclude_tools`) and strict mode, on specs and on
`Router.join`, with in-process servers whose tool lists change."""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer

from mcpx_router import InProcessPeer, OpenAIPeerToolAdapter, Router, StdioPeer, ToolsChanged, load_config

from ..support.router_support import TINY, growing_server, next_event

pytestmark = pytest.mark.anyio


def published(router: Router, peer: str) -> list[str]:
    return [tool.tool for tool in router.adapter.tools_of(peer)]


@pytest.mark.parametrize(
    ("spec_options", "join_options", "expected"),
    [
        ({}, {}, ["echo", "grow", "wait"]),
        ({"include_tools": ["e*", "w*"]}, {}, ["echo", "wait"]),
        ({"exclude_tools": ["gr?w"]}, {}, ["echo", "wait"]),
        ({"include_tools": ["*"], "exclude_tools": ["echo"]}, {}, ["grow", "wait"]),  # exclude wins
        ({"include_tools": []}, {}, []),
        ({"exclude_tools": ["echo"]}, {"exclude_tools": ["wait"]}, ["echo", "grow"]),  # join replaces
        ({"include_tools": ["echo"]}, {"exclude_tools": ["echo"]}, []),  # one replaced, one kept
        ({"exclude_tools": ["*"]}, {"exclude_tools": []}, ["echo", "grow", "wait"]),
    ],
)
async def test_filters_on_the_spec_and_on_join(
    spec_options: dict[str, Any], join_options: dict[str, Any], expected: list[str]
) -> None:
    async with Router() as router:
        names = await router.join("g", InProcessPeer(growing_server(), **spec_options), **join_options)
        assert published(router, "g") == expected
        assert names == tuple(f"g__{tool}" for tool in expected)
        spec = router.status("g").spec
        for key in ("include_tools", "exclude_tools"):
            given = join_options.get(key, spec_options.get(key))
            assert getattr(spec, key) == (None if given is None else tuple(given))


async def test_a_newly_listed_tool_that_is_excluded_stays_hidden() -> None:
    async with Router() as router:
        await router.join("g", growing_server(), exclude_tools=["secret_*"])
        with router.events() as events:
            assert (await router.call("g__grow", {"name": "secret_key"})).text == "grown"
            assert (await router.call("g__grow", {"name": "public_page"})).text == "grown"
            changed = await next_event(events, ToolsChanged)
        # The listing that brought public_page also held secret_key: only the one was published.
        assert changed.added == ("g__public_page",)
        assert published(router, "g") == ["echo", "grow", "wait", "public_page"]
        outcome = await router.call("g__secret_key", {"text": "x"})
        assert outcome.is_error and "no tool named 'g__secret_key'" in outcome.text


NAMES = st.lists(st.from_regex(r"\A[ab_.-]{1,4}\Z"), min_size=1, max_size=6, unique=True)
PATTERNS = st.lists(st.from_regex(r"\A[ab_.*?-]{0,4}\Z"), max_size=3)


def server_with(names: list[str]) -> MCPServer:
    server = MCPServer("listed")
    for name in names:
        server.add_tool(lambda text: text, name=name, description=f"Tool {name}.")
    return server


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=NAMES,
    later=NAMES,
    include=st.none() | PATTERNS,
    exclude=st.none() | PATTERNS,
)
async def test_published_tools_are_exactly_those_the_patterns_pass(
    first: list[str], later: list[str], include: list[str] | None, exclude: list[str] | None
) -> None:
    """Whatever the names and patterns, the peer's published tools are those its patterns pass, on
    joining and after its tool list grows; no tool that an exclude pattern matches is ever published."""

    def passing(names: list[str]) -> list[str]:
        return [
            n
            for n in names
            if (include is None or any(fnmatchcase(n, p) for p in include))
            and not any(fnmatchcase(n, p) for p in exclude or ())
        ]

    server = server_with(first)
    async with Router() as router:
        await router.join("p", InProcessPeer(server, include_tools=include, exclude_tools=exclude))
        assert published(router, "p") == passing(first)
        added = [n for n in later if n not in first]
        for name in added:
            server.add_tool(lambda text: text, name=name, description="Added.")
        await router.refresh("p")
        assert published(router, "p") == passing(first + added)


def strictable_server(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def greet(who: str, greeting: str = "hello") -> str:
        """Greet someone."""
        return f"{greeting} {who}"

    return server


def strict_flags(router: Router) -> dict[str, bool]:
    return {
        tool["function"]["name"]: tool["function"].get("strict", False) for tool in router.get_openai_tools()
    }


@pytest.mark.parametrize("adapter_strict", [False, True, None])
@pytest.mark.parametrize("peer_strict", [False, True, None, "default"])
async def test_strict_per_peer_overrides_the_adapter(
    adapter_strict: bool | None, peer_strict: bool | str | None
) -> None:
    async with OpenAIPeerToolAdapter(strict=adapter_strict) as adapter, Router(adapter=adapter) as router:
        await router.join("own", InProcessPeer(strictable_server("own"), strict=peer_strict))  # type: ignore[arg-type]
        await router.join("plain", strictable_server("plain"))
        wanted = adapter_strict if peer_strict == "default" else peer_strict
        assert strict_flags(router) == {
            "own__greet": wanted is not False,
            "plain__greet": adapter_strict is not False,
        }
        # In strict mode the model must send the optional argument (null); the peer never sees it.
        answer = await router.call(
            "own__greet", {"who": "Ada", "greeting": None} if wanted is not False else {"who": "Ada"}
        )
        assert answer.text == "hello Ada"


async def test_strict_per_peer_holds_for_tools_listed_later_and_ends_with_the_peer() -> None:
    async with Router() as router:
        await router.join("g", InProcessPeer(growing_server(), strict=True))
        with router.events() as events:
            await router.call("g__grow", {"name": "later"})
            await next_event(events, ToolsChanged)
        assert all(strict_flags(router).values()) and "g__later" in strict_flags(router)
        await router.leave("g")
        await router.join("g", growing_server())  # the same id again: the adapter's strict (off)
        assert not any(strict_flags(router).values())


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"include_tools": "echo"}, TypeError),
        ({"exclude_tools": [1]}, TypeError),
        ({"exclude_tools": 3}, TypeError),
        ({"strict": "yes"}, ValueError),
        ({"strict": 1}, ValueError),
    ],
)
def test_spec_filter_and_strict_options_are_checked(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        StdioPeer("x", **options)


def test_patterns_are_kept_as_tuples() -> None:
    spec = StdioPeer("x", include_tools=(p for p in ["a*", "b"]), exclude_tools=["c"])
    assert spec.include_tools == ("a*", "b") and spec.exclude_tools == ("c",)


async def test_a_stdio_server_from_a_config_with_variables_filters_and_strict(tmp_path: Path) -> None:
    """The variables reach the process (its log file is named by one), the filters hold for tools
    it adds later, and strict mode is on for its tools alone."""
    config = tmp_path / "mcp.json"
    entry = {
        "command": "${PYTHON}",
        "args": ["${TINY}", "--tools", "${COUNT:-3}"],
        "env": {"TINY_SERVER_LOG": "${env:LOGS}/calls.log"},
        "cwd": "${LOGS}",
        "excludeTools": ["t1"],
        "disabledTools": ["remove_*"],
        "strict": True,
    }
    config.write_text(json.dumps({"mcpServers": {"tiny": entry}}))
    environ = {"PYTHON": sys.executable, "TINY": str(TINY), "LOGS": str(tmp_path)}
    async with Router() as router:
        await router.join_all(load_config(config, environ=environ))
        assert published(router, "tiny") == ["echo", "pid", "sleep", "add_tool", "t0", "t2"]
        assert all(strict_flags(router).values())
        with router.events() as events:
            assert (await router.call("tiny__add_tool", {"name": "remove_all"})).text == "done"
            assert (await router.call("tiny__add_tool", {"name": "t9"})).text == "done"
            changed = await next_event(events, ToolsChanged)
        assert changed.added == ("tiny__t9",)
        assert "remove_all" not in published(router, "tiny")
    calls = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert [c["params"]["name"] for c in calls if c.get("method") == "tools/call"] == ["add_tool", "add_tool"]
