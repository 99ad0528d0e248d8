"""Which servers a command uses: `--config FILE`, `--command CMD`, `--url URL`, or a config found.

- `--command 'uvx mcp-server-time'` (split as a shell would) and `--url URL` use one server each
  without a config file; both may be repeated, and combined with `--config`. The peer id comes
  from the command or URL (`uvx mcp-server-time` → `time`, `https://mcp.deepwiki.com/mcp` →
  `deepwiki`; see `command_id`, `url_id`), or from `--name` when there is one such server.
- Without any of these, the first config file of the usual places is used (see `_discover`),
  and a line on standard error says which.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import shlex
from collections.abc import Sequence
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from urllib.parse import urlsplit

from .._console import say
from .._errors import UsageError
from ..peers import HttpPeer, PeerSpec, SsePeer, StdioPeer, load_config
from ..peers._specs import check_headers, is_sse_url, remember_url_secrets
from ._discover import Candidate, discover, here

__all__ = ["add_source_options", "command_id", "peers_from", "url_id"]

_LAUNCHERS = frozenset(
    "uvx npx bunx pnpx pipx uv docker podman deno node nodejs bun pnpm yarn npm sh bash env exec "
    "run x dlx py python python3 cmd /c".split()
)
_VALUED = frozenset({"--from", "--with", "--package", "-p", "--python", "-e", "--env", "--name", "-v"})
"""Options of the launchers that take the next word as their value."""
_GENERIC_FILES = frozenset({"index", "main", "server", "__main__", "cli", "app", "run"})
_GENERIC_DIRS = frozenset({"dist", "build", "src", "lib", "bin", "out", "build_output"})
_AFFIXES = re.compile(r"^(?:mcp[-_]server[-_]|server[-_]|mcp[-_])|(?:[-_]mcp[-_]server|[-_]mcp|[-_]server)$")
_INTERPRETER = re.compile(r"python[0-9.]*(\.exe)?|node(\.exe)?")
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]+")
_LONGEST = 32


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """Add `--config`, `--command`, `--url`, `--name`, `--env` and `--header` to a command."""
    group = parser.add_argument_group(
        "servers",
        "Without --config, --command or --url: the first MCP config found of ./mcp.json, ./.mcp.json, "
        ".vscode/mcp.json, .cursor/mcp.json, ~/.cursor/mcp.json, ~/.claude.json, Claude Desktop's, "
        "Windsurf's and Gemini CLI's.",
    )
    group.add_argument("--config", metavar="FILE", help="an mcpServers JSON file, as MCP hosts use")
    group.add_argument(
        "--command",
        action="append",
        default=[],
        metavar="CMD",
        help="a stdio server's command line, e.g. 'uvx mcp-server-time' (repeatable)",
    )
    group.add_argument(
        "--url",
        action="append",
        default=[],
        help="a streamable HTTP server's URL, or an SSE server's ending in /sse (repeatable)",
    )
    group.add_argument(
        "--name", metavar="ID", help="the peer id of the one --command or --url server (default: from it)"
    )
    group.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the --command servers (repeatable)",
    )
    group.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for the --url servers, e.g. 'Authorization: Bearer …' (repeatable)",
    )


def peers_from(args: argparse.Namespace, places: list[Candidate] | None = None) -> dict[str, PeerSpec]:
    """The servers the options name, by peer id; UsageError or ConfigError if they cannot be used."""
    given: list[tuple[str, PeerSpec]] = []
    env = dict(_pair(item, "=", "--env", "KEY=VALUE") for item in args.env)
    headers = dict(_pair(item, ":", "--header", "'NAME: VALUE'") for item in args.header)
    try:
        check_headers(headers)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--header: {exc}") from None
    for line in args.command:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"--command {line!r} cannot be split into words: {exc}") from None
        if not argv:
            raise UsageError("--command needs a command line, e.g. 'uvx mcp-server-time'")
        given.append((command_id(argv), StdioPeer(argv[0], argv[1:], env=env or None)))
    for url in args.url:
        remember_url_secrets(url)
        if not _web_url(url):
            raise UsageError(f"--url must be an http:// or https:// URL, not {url!r}")
        kind = SsePeer if is_sse_url(url) else HttpPeer
        given.append((url_id(url), kind(url, headers=headers or None)))
    if args.name is not None:
        if len(given) != 1:
            raise UsageError("--name names the one server of --command or --url; give exactly one")
        given = [(args.name, given[0][1])]
    peers: dict[str, PeerSpec] = {}
    if args.config is not None:
        peers.update(load_config(args.config))
    elif not given:
        places = here() if places is None else places
        found = discover(places)
        if found is None:
            looked = ", ".join(str(place.path) for place in places)
            raise UsageError(
                f"no MCP config found; looked for {looked}. Give one with --config FILE, or a server "
                "with --command 'uvx mcp-server-time' or --url URL"
            )
        say(f"using {found.path} ({found.host})")
        peers.update(load_config(found.path))
    for peer_id, spec in given:
        unique, n = peer_id, 1
        while unique in peers:
            n += 1
            unique = f"{peer_id}-{n}"
        peers[unique] = spec
    return peers


def _web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


def _pair(item: str, sep: str, option: str, form: str) -> tuple[str, str]:
    key, found, value = item.partition(sep)
    if not found or not key.strip():
        raise UsageError(f"{option} expects {form}")  # not the item: it may be a secret
    return key.strip(), value.strip() if sep == ":" else value


def command_id(argv: Sequence[str]) -> str:
    """A peer id for a stdio command: its server's name without launcher, path, version or `mcp-server-`."""
    chosen: str | None = None
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        lowered = _path(word).name.lower()
        if word.startswith("-"):
            skip = word in _VALUED
            continue
        if lowered in _LAUNCHERS or _INTERPRETER.fullmatch(lowered) or "=" in word:
            continue
        chosen = word
        break
    return _cleaned(_server_name(chosen if chosen is not None else (argv[0] if argv else "")))


def _path(word: str) -> PurePath:
    return PureWindowsPath(word) if "\\" in word else PurePosixPath(word)


def _server_name(word: str) -> str:
    word = re.sub(r"(?<=.)@[^/@]*$|==.*$", "", word)  # a version: pkg@1.2, @scope/pkg@latest, pkg==1
    path = _path(word)
    name = re.sub(r"\.(py|js|mjs|cjs|ts|exe|jar)$", "", path.name, flags=re.IGNORECASE)
    parents = [p.name for p in path.parents if p.name]
    while name.lower() in _GENERIC_FILES | _GENERIC_DIRS and parents:
        name = parents.pop(0)
    return name


def url_id(url: str) -> str:
    """A peer id for a server's URL: its host's name (`mcp.deepwiki.com` → `deepwiki`)."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return "server"
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        if host in ("localhost", ""):
            return "local"
    else:
        return "local"
    labels = host.split(".")[:-1] or [host]
    while len(labels) > 1 and labels[0] in ("www", "mcp", "api", "app", "server"):
        labels.pop(0)
    return _cleaned(labels[0])


def _cleaned(name: str) -> str:
    stripped = _AFFIXES.sub("", name) or name
    legal = _ILLEGAL.sub("-", stripped).strip("-_")[:_LONGEST].strip("-_")
    return legal or "server"
