"""Peers from a config in the `mcpServers` convention of desktop MCP hosts (pure, no I/O but the read).

    {"mcpServers": {
        "time":  {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "cwd": "."},
        "notes": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}

`"servers"` (VS Code's name for the same table) is read too. Per entry, besides the standard
keys: `"type"` ("stdio", "http", "streamable-http", "sse"; a `url` whose path ends in `/sse` is
SSE without it), `"disabled": true` (skipped), tool filters as hosts write them (`includeTools`,
`excludeTools`, Roo Code's `disabledTools`), and the router's own `"timeout"` (seconds per call),
`"toolTimeouts"` ({tool: seconds}), `"maxConcurrency"` and `"strict"`. `${VAR}`,
`${VAR:-default}` and `${env:VAR}` are expanded in `command`, `args`, `env` and `headers`
values, `cwd` and `url` (see `_expand`). A relative `cwd` is taken relative to the config file.

What a variable gives, every header value, the `auth` entry's token and client secret, and the
values named like credentials in a URL's query, the `args` and the `env` are kept among the
secrets (`_errors.remember_secret`) as the config is read: no message shows them. A header value
HTTP cannot send (a token read with the `\r` of a Windows line ending) is refused here, naming the
header and never its value. A file that others can write (group or world) is used with a warning.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..._errors import ConfigError, InvalidPeerIdError, remember_secret
from ..._naming import check_peer_id
from .._specs import HttpPeer, PeerSpec, SsePeer, StdioPeer, check_headers, is_sse_url
from ..auth._auth_config import auth_from_config
from ..auth._token_file import warn_if_others_can_write
from ._expand import ExpansionError, expand

__all__ = ["load_config", "parse_config"]

logger = logging.getLogger("mcpx_router")

_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers", "auth", "oauth"}
_COMMON_KEYS = {"type", "disabled", "timeout", "toolTimeouts", "maxConcurrency", "strict"}
_FILTER_KEYS = {
    "includeTools": "include_tools",  # Gemini CLI
    "excludeTools": "exclude_tools",  # Gemini CLI
    "disabledTools": "exclude_tools",  # Roo Code, Kilo Code
}
_APPROVAL_KEYS = {"alwaysAllow", "autoApprove"}
"""Which tools a host runs without asking a person (Roo Code, Cline): no filter, and nothing to do
here, where no person is asked; ignored without a warning."""
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse"}


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> dict[str, PeerSpec]:
    """Read an `mcpServers` JSON file; return its enabled peers by id.

    Example:
        ```python
        async with Router() as router:
            await router.join_all(load_config("mcp.json"))
        ```

    Args:
        path: The JSON file.
        environ: Where `${VAR}` references are looked up (by default `os.environ`).

    Raises:
        ConfigError: The file cannot be read, is not JSON, or an entry is unusable (named in
            the message and in `.peer`), a variable it uses among them.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read the peer config {str(file)!r}: {exc.strerror or exc}", peer=""
        ) from exc
    warn_if_others_can_write(file, "the peer config", "it decides which commands run")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"the peer config {str(file)!r} is not valid JSON: {exc}", peer="") from None
    return parse_config(data, source=str(file), base_dir=file.resolve().parent, environ=environ)


def parse_config(
    data: Any,
    *,
    source: str = "the peer config",
    base_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, PeerSpec]:
    """Validate an already parsed `mcpServers` mapping; return its enabled peers by id."""
    if not isinstance(data, Mapping):
        raise ConfigError(f'{source} must be a JSON object with an "mcpServers" object', peer="")
    table = data.get("mcpServers", data.get("servers"))
    if table is None:
        raise ConfigError(
            f'{source} has no "mcpServers" object; expected '
            '{"mcpServers": {"name": {"command": ..., "args": [...]} or {"url": ...}}}',
            peer="",
        )
    if not isinstance(table, Mapping):
        raise ConfigError(f'"mcpServers" in {source} must be an object of named servers', peer="")
    peers: dict[str, PeerSpec] = {}
    for name, entry in table.items():
        spec = _entry(name, entry, source, base_dir, os.environ if environ is None else environ)
        if spec is not None:
            peers[name] = spec
    return peers


def _entry(
    name: Any, entry: Any, source: str, base_dir: Path | None, environ: Mapping[str, str]
) -> PeerSpec | None:
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{source}: every server needs a non-empty name, not {name!r}", peer=str(name))
    try:
        check_peer_id(name)
    except InvalidPeerIdError as exc:
        raise ConfigError(f"{source}: the server name is not usable as a peer id: {exc}", peer="") from None

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{source}: server {name!r}: {problem}", peer=name)

    def expanded(value: str, where: str) -> str:
        used: list[str] = []
        try:
            text = expand(value, environ, used=used)
        except ExpansionError as exc:
            raise fail(f"{where} {exc}") from None
        for secret in used:
            remember_secret(secret)
        return text

    if not isinstance(entry, Mapping):
        raise fail('must be an object with "command" (stdio) or "url" (streamable HTTP or SSE)')
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise fail(f'"disabled" must be true or false, not {disabled!r}')
    if disabled:
        return None
    kind = entry.get("type")
    if kind is not None and kind not in _TYPES:
        raise fail(f'"type" must be one of {", ".join(map(repr, _TYPES))}, not {kind!r}')
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise fail('needs exactly one of "command" (a stdio server) and "url" (an HTTP or SSE server)')
    if kind is not None and (_TYPES[kind] == "stdio") != has_command:
        raise fail(f'"type" is {kind!r} but the entry has "{"command" if has_command else "url"}"')
    known = _COMMON_KEYS | _FILTER_KEYS.keys() | _APPROVAL_KEYS
    unknown = set(entry) - known - (_STDIO_KEYS if has_command else _HTTP_KEYS)
    if unknown:
        logger.warning("%s: server %r: ignoring unknown keys %s", source, name, ", ".join(sorted(unknown)))
    options = _options(entry, fail)
    if has_command:
        command = entry["command"]
        if not isinstance(command, str) or not command.strip():
            raise fail(f'"command" must be a non-empty string, not {command!r}')
        command = expanded(command, '"command"')
        if not command.strip():
            raise fail(f'"command" is empty once its variables are expanded ({entry["command"]!r})')
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise fail(f'"args" must be a list of strings, not {args!r}')
        args = [expanded(arg, f'"args"[{index}]') for index, arg in enumerate(args)]
        cwd = entry.get("cwd")
        if cwd is not None and (not isinstance(cwd, str) or not cwd):
            raise fail(f'"cwd" must be a non-empty string, not {cwd!r}')
        if cwd is not None:
            cwd = expanded(cwd, '"cwd"')
            if not cwd:
                raise fail(f'"cwd" is empty once its variables are expanded ({entry["cwd"]!r})')
            if base_dir is not None and not os.path.isabs(cwd):
                cwd = str(base_dir / cwd)
        env = _strings(entry.get("env"), '"env"', fail, expanded)
        return StdioPeer(command, args, env=env, cwd=cwd, **options)
    url = entry["url"]
    if isinstance(url, str):
        url = expanded(url, '"url"')
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise fail(f'"url" must be an http:// or https:// URL, not {url!r}')
    headers = _strings(entry.get("headers"), '"headers"', fail, expanded)
    try:
        check_headers(headers)
    except (TypeError, ValueError) as exc:
        raise fail(f'"headers": {exc}') from None
    auth = auth_from_config(_expanded_auth(entry, expanded), url, fail, base_dir)
    if kind == "sse" or (kind is None and is_sse_url(url)):
        return SsePeer(url, headers=headers, auth=auth, **options)
    return HttpPeer(url, headers=headers, auth=auth, **options)


def _expanded_auth(entry: Mapping[str, Any], expanded: Any) -> Mapping[str, Any]:
    """The entry with the strings (and lists of strings) of its "auth" / "oauth" object expanded."""
    out = dict(entry)
    for key in ("auth", "oauth"):
        value = entry.get(key)
        if isinstance(value, Mapping):
            out[key] = {
                name: _expanded_value(item, f'"{key}"[{name!r}]', expanded) for name, item in value.items()
            }
    return out


def _expanded_value(item: Any, where: str, expanded: Any) -> Any:
    if isinstance(item, str):
        return expanded(item, where)
    if isinstance(item, list):
        return [expanded(x, f"{where}[{i}]") if isinstance(x, str) else x for i, x in enumerate(item)]
    return item


def _strings(value: Any, what: str, fail: Any, expanded: Any) -> dict[str, str] | None:
    """An object of strings, its values expanded (its keys are names, and kept as they are)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):  # its values may be secrets: named by their type only
        raise fail(f"{what} must be an object of strings, not {_kind(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise fail(f"{what}[{_quoted(key)}] must be a string (quote it), not {_kind(item)}")
    return {key: expanded(item, f"{what}[{_quoted(key)}]") for key, item in value.items()}


def _kind(value: Any) -> str:
    """What JSON calls the type of `value` (an array, a number...), with an article."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "a string" if isinstance(value, str) else "an object"


def _quoted(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def _options(entry: Mapping[str, Any], fail: Any) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if "timeout" in entry:
        options["call_timeout"] = _seconds(entry["timeout"], '"timeout"', fail)
    if "toolTimeouts" in entry:
        table = entry["toolTimeouts"]
        if not isinstance(table, Mapping):
            raise fail(f'"toolTimeouts" must be an object of seconds by tool name, not {table!r}')
        options["tool_timeouts"] = {
            tool: _seconds(limit, f'"toolTimeouts"[{tool!r}]', fail) for tool, limit in table.items()
        }
    for key, option in _FILTER_KEYS.items():
        if key in entry:
            patterns = entry[key]
            if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
                raise fail(f'"{key}" must be a list of tool names or glob patterns, not {patterns!r}')
            options[option] = [*options.get(option, ()), *patterns]
    if "strict" in entry:
        if not isinstance(entry["strict"], bool):
            raise fail(f'"strict" must be true or false, not {entry["strict"]!r}')
        options["strict"] = entry["strict"]
    if "maxConcurrency" in entry:
        limit = entry["maxConcurrency"]
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise fail(f'"maxConcurrency" must be a positive integer, not {limit!r}')
        options["max_concurrency"] = limit
    return options


def _seconds(value: Any, what: str, fail: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise fail(f"{what} must be a positive number of seconds or null, not {value!r}")
    return float(value)
