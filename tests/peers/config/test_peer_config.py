"""Peer specs, `mcpServers` config files and the reconnect policy: pure, no I/O but temp files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer

from mcpx_router import ConfigError, Reconnect
from mcpx_router._errors import SHORTEST_SECRET, redact
from mcpx_router.peers import (
    HttpPeer,
    InProcessPeer,
    SessionPeer,
    SsePeer,
    StdioPeer,
    as_peer_spec,
    load_config,
    parse_config,
)
from mcpx_router.peers._specs import header_value_problem
from mcpx_router.peers.config._expand import escape


def test_config_with_both_transports(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {
                        "command": "uvx",
                        "args": ["mcp-server-time", "--local-timezone", "UTC"],
                        "env": {"TZ": "UTC"},
                        "cwd": "work",
                        "timeout": 5,
                        "toolTimeouts": {"slow": 120, "forever": None},
                        "maxConcurrency": 2,
                    },
                    "notes": {
                        "type": "streamable-http",
                        "url": "http://127.0.0.1:8000/mcp",
                        "headers": {"Authorization": "Bearer x"},
                    },
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    peers = load_config(file)
    assert list(peers) == ["time", "notes"]
    assert peers["time"] == StdioPeer(
        "uvx",
        ["mcp-server-time", "--local-timezone", "UTC"],
        env={"TZ": "UTC"},
        cwd=str(tmp_path / "work"),  # relative to the config file, not to the process
        call_timeout=5.0,
        tool_timeouts={"slow": 120.0, "forever": None},
        max_concurrency=2,
    )
    assert peers["notes"] == HttpPeer("http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer x"})


def test_vscode_servers_key_and_absolute_cwd() -> None:
    peers = parse_config({"servers": {"a": {"type": "stdio", "command": "run-a", "cwd": "/srv/a"}}})
    assert peers == {"a": StdioPeer("run-a", [], cwd="/srv/a")}


def test_unknown_keys_are_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    peers = parse_config({"mcpServers": {"a": {"command": "run-a", "arg": ["typo"]}}})
    assert peers == {"a": StdioPeer("run-a")}
    assert "ignoring unknown keys arg" in caplog.text


BAD_ENTRIES: list[tuple[Any, str]] = [
    ("not an object", "must be an object"),
    ({}, 'needs exactly one of "command"'),
    ({"command": "x", "url": "http://h/mcp"}, 'needs exactly one of "command"'),
    ({"command": ""}, '"command" must be a non-empty string'),
    ({"command": "x", "args": "--flag"}, '"args" must be a list of strings'),
    ({"command": "x", "args": [1]}, '"args" must be a list of strings'),
    ({"command": "x", "env": {"PORT": 8080}}, '"env"["PORT"] must be a string (quote it)'),
    ({"command": "x", "env": ["A=1"]}, '"env" must be an object of strings'),
    ({"command": "x", "cwd": 3}, '"cwd" must be a non-empty string'),
    ({"url": "127.0.0.1:8000"}, '"url" must be an http:// or https:// URL'),
    ({"url": "http://h/mcp", "headers": {"X": None}}, '"headers"["X"] must be a string'),
    ({"type": "websocket", "url": "ws://h/"}, "\"type\" must be one of 'stdio', 'http'"),
    ({"type": "sse", "command": "x"}, '"type" is \'sse\' but the entry has "command"'),
    ({"command": "x", "includeTools": "read_*"}, '"includeTools" must be a list of tool names or glob'),
    ({"command": "x", "disabledTools": [3]}, '"disabledTools" must be a list of tool names or glob'),
    ({"command": "x", "strict": "yes"}, '"strict" must be true or false'),
    ({"type": "stdio", "url": "http://h/mcp"}, '"type" is \'stdio\' but the entry has "url"'),
    ({"command": "x", "disabled": "yes"}, '"disabled" must be true or false'),
    ({"command": "x", "timeout": 0}, '"timeout" must be a positive number of seconds'),
    ({"command": "x", "timeout": True}, '"timeout" must be a positive number of seconds'),
    ({"command": "x", "toolTimeouts": {"t": -1}}, "\"toolTimeouts\"['t'] must be a positive number"),
    ({"command": "x", "maxConcurrency": 0}, '"maxConcurrency" must be a positive integer'),
]


@pytest.mark.parametrize(("entry", "message"), BAD_ENTRIES)
def test_a_bad_entry_is_named(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"good": {"command": "ok"}, "broken": entry}}, source="mcp.json")
    assert caught.value.peer == "broken"
    assert str(caught.value).startswith("mcp.json: server 'broken': ")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"servers_list": {}}, 'has no "mcpServers" object'),
        ({"mcpServers": []}, "must be an object of named servers"),
        ({"mcpServers": {"": {"command": "x"}}}, "needs a non-empty name"),
        ({"mcpServers": {"tab\tname": {"command": "x"}}}, "not usable as a peer id"),
        ({"mcpServers": {"x" * 129: {"command": "x"}}}, "not usable as a peer id"),
    ],
)
def test_a_bad_file_says_what_is_expected(data: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_unreadable_or_broken_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the peer config"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {')
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_config(broken)


def test_as_peer_spec() -> None:
    server = MCPServer("s")
    assert as_peer_spec("https://example.test/mcp") == HttpPeer("https://example.test/mcp")
    for sse in ["http://h/sse", "http://h/app/sse/", "https://h/sse?key=1"]:
        assert as_peer_spec(sse) == SsePeer(sse)  # the path ends in /sse: the hosts' convention
    for http in ["http://h/mcp", "http://h/sse/mcp", "http://h/assets", "http://sse/", "http://h/x?p=/sse"]:
        assert as_peer_spec(http) == HttpPeer(http)
    assert as_peer_spec(server) == InProcessPeer(server)
    params = mcp.StdioServerParameters(command="run", args=["-v"], env={"A": "1"}, cwd="/tmp")
    assert as_peer_spec(params) == StdioPeer("run", ["-v"], env={"A": "1"}, cwd="/tmp")
    client = mcp.Client(server)
    assert as_peer_spec(client) == SessionPeer(client)
    spec = StdioPeer("run")
    assert as_peer_spec(spec) is spec
    with pytest.raises(ValueError, match="not an http"):
        as_peer_spec("run-my-server")
    with pytest.raises(TypeError, match="cannot make a peer of int"):
        as_peer_spec(3)


@pytest.mark.parametrize(
    "options",
    [{"call_timeout": 0}, {"call_timeout": "soon"}, {"tool_timeouts": {"t": 0}}, {"max_concurrency": 0}],
)
def test_spec_options_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        StdioPeer("run", **options)


def test_backoff_grows_to_the_cap() -> None:
    policy = Reconnect(initial_delay=0.5, multiplier=3, max_delay=4, jitter=0, max_attempts=5)
    assert list(policy.delays()) == [0.5, 1.5, 4, 4, 4]


def test_jitter_takes_off_up_to_its_fraction() -> None:
    policy = Reconnect(initial_delay=2, multiplier=2, max_delay=8, jitter=0.25, max_attempts=3)
    assert list(policy.delays(rand=lambda: 1.0)) == [1.5, 3.0, 6.0]
    assert list(policy.delays(rand=lambda: 0.0)) == [2, 4, 8]
    delays = list(Reconnect(max_attempts=50).delays())
    assert all(0 < d <= 30 for d in delays) and len(set(delays)) > 1


def test_give_up_rules() -> None:
    assert list(Reconnect.never().delays()) == []
    assert list(Reconnect(initial_delay=1, jitter=0, give_up_after=7).delays()) == [1, 2, 4]
    forever = Reconnect(initial_delay=1, max_delay=1, jitter=0).delays()
    assert [next(forever) for _ in range(1000)] == [1] * 1000


@pytest.mark.parametrize(
    "options",
    [
        {"initial_delay": -1},
        {"multiplier": 0.5},
        {"initial_delay": 5, "max_delay": 1},
        {"jitter": 1.5},
        {"max_attempts": -1},
        {"give_up_after": -1},
    ],
)
def test_backoff_options_are_checked(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Reconnect(**options)


# -- what hosts write: variables, tool filters, strict, SSE -------------------------------------


def test_a_config_as_hosts_write_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fs": {
                        "command": "${TOOLS:-/opt/tools}/fs-server",
                        "args": ["--root", "${env:HOME}", "--price", "$5", "$${literal}"],
                        "env": {"API_KEY": "${KEY}", "EMPTY": "${UNSET_OR_EMPTY:-fallback}"},
                        "cwd": "${HOME}/work",
                        "includeTools": ["read_*", "list_*"],
                        "disabledTools": ["read_secret"],
                        "excludeTools": ["list_all"],
                        "alwaysAllow": ["read_file"],  # an approval list, not a filter: no warning
                        "autoApprove": [],
                        "strict": False,
                    },
                    "notes": {
                        "url": "https://${HOST}/mcp",
                        "headers": {"Authorization": "Bearer ${KEY}"},
                        "strict": True,
                    },
                    "legacy": {"url": "http://127.0.0.1:9000/sse", "headers": {"X-Key": "${KEY}"}},
                    "typed": {"type": "sse", "url": "http://127.0.0.1:9000/events"},
                    "forced": {"type": "http", "url": "http://127.0.0.1:9000/sse"},
                }
            }
        )
    )
    environ = {"HOME": "/home/me", "KEY": "k-123", "HOST": "notes.test", "UNSET_OR_EMPTY": ""}
    peers = load_config(file, environ=environ)
    assert peers["fs"] == StdioPeer(
        "/opt/tools/fs-server",
        ["--root", "/home/me", "--price", "$5", "${literal}"],
        env={"API_KEY": "k-123", "EMPTY": "fallback"},
        cwd="/home/me/work",
        include_tools=["read_*", "list_*"],
        exclude_tools=["list_all", "read_secret"],
        strict=False,
    )
    assert peers["notes"] == HttpPeer(
        "https://notes.test/mcp", headers={"Authorization": "Bearer k-123"}, strict=True
    )
    assert peers["legacy"] == SsePeer("http://127.0.0.1:9000/sse", headers={"X-Key": "k-123"})
    assert peers["typed"] == SsePeer("http://127.0.0.1:9000/events")
    assert peers["forced"] == HttpPeer("http://127.0.0.1:9000/sse")
    assert caplog.text == ""


def test_variables_come_from_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPX_CONFIG_TOKEN", "from-env")
    peers = parse_config(
        {"mcpServers": {"n": {"url": "http://h/mcp", "headers": {"A": "${MCPX_CONFIG_TOKEN}"}}}}
    )
    assert peers["n"] == HttpPeer("http://h/mcp", headers={"A": "from-env"})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            '"headers"["Authorization"] uses ${TOKEN}, which is not set',
        ),
        ({"command": "x", "args": ["a", "${env:TOKEN}"]}, '"args"[1] uses ${env:TOKEN}, which is not set'),
        ({"command": "${BIN}/x"}, '"command" uses ${BIN}, which is not set'),
        ({"command": "${EMPTY}"}, '"command" is empty once its variables are expanded'),
        ({"command": "x", "cwd": "${EMPTY}"}, '"cwd" is empty once its variables are expanded'),
        ({"command": "x", "env": {"K": "${input:api-key}"}}, '"env"["K"] uses ${input:api-key}, a VS Code'),
        ({"url": "${URL}"}, '"url" uses ${URL}, which is not set'),
        ({"url": "${EMPTY:-ftp://h}"}, "\"url\" must be an http:// or https:// URL, not 'ftp://h'"),
        (
            {"command": "x", "cwd": "${workspaceFolder}"},
            '"cwd" uses ${workspaceFolder}, which is not set (${workspaceFolder} is a VS Code variable',
        ),
    ],
)
def test_a_variable_that_cannot_be_expanded_is_named(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"notes": entry}}, source="mcp.json", environ={"EMPTY": ""})
    assert caught.value.peer == "notes"
    assert str(caught.value).startswith(f"mcp.json: server 'notes': {message}")


VALUES = st.text(max_size=20)
VARIABLES = st.dictionaries(st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,8}\Z"), VALUES, min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(literals=st.lists(VALUES, min_size=4, max_size=4), environ=VARIABLES, data=st.data())
def test_every_expanded_field_holds_the_values(
    literals: list[str], environ: dict[str, str], data: st.DataObject
) -> None:
    """Whatever text and variables: a field written as escaped text and a `${NAME}` reads back as
    that text and the variable's value, in every field that is expanded (and only in values)."""
    name = data.draw(st.sampled_from(sorted(environ)), label="name")
    form = data.draw(st.sampled_from(["${%s}", "${env:%s}", "${%s:-unused}"]), label="form") % name
    value = environ[name] if "unused" not in form else (environ[name] or "unused")

    def field(i: int) -> str:
        text = escape(literals[i])
        return text + text[len(text.rstrip("$")) :] + form  # before `${`, each `$$` is one `$`

    stdio = {
        "command": "run" + field(0),
        "args": [field(1)],
        "env": {"${KEY}": field(2)},
        "cwd": "/" + field(3),
    }
    http = {"url": "http://h/" + field(0), "headers": {"X-Key": field(1)}}
    header = literals[1] + value
    if header_value_problem(header) is not None:
        # A header HTTP cannot send is refused as the config loads, naming it and never its value.
        with pytest.raises(ConfigError) as refused:
            parse_config({"mcpServers": {"s": stdio, "h": http}}, environ=environ)
        assert "'X-Key'" in str(refused.value) or redact("'X-Key'") != "'X-Key'"  # a value "Key" is masked
        if len(header.strip()) >= SHORTEST_SECRET and header.strip().strip("*"):
            assert header.strip() not in str(refused.value)
        return
    peers = parse_config({"mcpServers": {"s": stdio, "h": http}}, environ=environ)
    s, h = peers["s"], peers["h"]
    assert isinstance(s, StdioPeer) and isinstance(h, HttpPeer | SsePeer)
    assert s.command == "run" + literals[0] + value
    assert list(s.args) == [literals[1] + value]
    assert s.env == {"${KEY}": literals[2] + value}  # names are not expanded
    assert s.cwd == "/" + literals[3] + value
    assert h.url == "http://h/" + literals[0] + value
    assert h.headers == {"X-Key": literals[1] + value}
