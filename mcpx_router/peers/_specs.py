"""What a peer is and how to reach it: the specs `Router.join` accepts (plain data, no I/O)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias
from urllib.parse import parse_qsl, unquote, urlsplit

import mcp
from mcp.client import Transport
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

from .._errors import credential_name, remember_secret
from .._session import ToolSession
from ._callbacks import PeerCallbacks, check_callbacks

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "DEFAULT",
    "HttpPeer",
    "InProcessPeer",
    "ParticipantPeer",
    "ParticipantSource",
    "PeerSpec",
    "SessionPeer",
    "SsePeer",
    "StdioPeer",
    "as_peer_spec",
]

DEFAULT: Literal["default"] = "default"
"""A `call_timeout` of "default" uses the Router's own."""

Mode: TypeAlias = Literal["auto", "legacy"] | str
"""`mcp.Client` mode: "auto" (probe, fall back to the initialize handshake), "legacy", or a
protocol version such as "2026-07-28"."""


@dataclass(frozen=True, kw_only=True)
class _Options:
    call_timeout: float | Literal["default"] | None = DEFAULT
    """Seconds a call to this peer may take (None: no limit; "default": the Router's)."""
    tool_timeouts: Mapping[str, float | None] = field(default_factory=dict)
    """Per-tool limits, by the tool's name on the peer; they override `call_timeout`."""
    include_tools: Sequence[str] | None = None
    """Glob patterns of the peer's tool names to publish (None: all); followed on every listing."""
    exclude_tools: Sequence[str] | None = None
    """Glob patterns of the peer's tool names never to publish (they win over `include_tools`)."""
    strict: bool | Literal["default"] | None = DEFAULT
    """OpenAI strict mode for this peer's tools, as the adapter's `strict` ("default": the adapter's)."""
    max_concurrency: int | None = None
    """At most this many calls run on this peer at once (None: no limit)."""

    # -- what the peer may ask of us (docs/peers.md, "Resources, prompts and callbacks") --
    callbacks: PeerCallbacks | None = None
    """Sampling, elicitation, roots and logging callbacks for this peer; each one it sets
    overrides the Router's `callbacks` (not used for a `SessionPeer`, whose owner opened it)."""

    def __post_init__(self) -> None:
        _check_tool_options(self)
        _check_timeout("call_timeout", self.call_timeout)
        check_callbacks(self.callbacks, "callbacks")
        for tool, limit in self.tool_timeouts.items():
            _check_timeout(f"tool_timeouts[{tool!r}]", limit)
        if self.max_concurrency is not None and (
            isinstance(self.max_concurrency, bool)
            or not isinstance(self.max_concurrency, int)
            or self.max_concurrency < 1
        ):
            raise ValueError(
                f"max_concurrency must be a positive integer or None, not {self.max_concurrency!r}"
            )


@dataclass(frozen=True)
class StdioPeer(_Options):
    """A server the Router starts as a subprocess and talks to over stdin/stdout.

    Example:
        >>> StdioPeer("uvx", ["mcp-server-time"], env={"TZ": "UTC"}).describe()
        'uvx mcp-server-time'

    Args:
        command: The executable.
        args: Its arguments.
        env: Variables added to a minimal inherited environment (PATH, HOME, ...).
        cwd: Its working directory.
        mode: How to negotiate the protocol version (see `mcp.Client`).
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | os.PathLike[str] | None = None
    mode: Mode = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.args, str):
            raise TypeError(f"args must be a list of strings, not the string {self.args!r}")
        object.__setattr__(self, "args", tuple(self.args))
        remember_command_secrets(self.args, self.env)

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class HttpPeer(_Options):
    """A server reached over streamable HTTP.

    Args:
        url: The MCP endpoint, e.g. "http://127.0.0.1:8000/mcp".
        headers: Sent with every request (e.g. Authorization).
        mode: How to negotiate the protocol version (see `mcp.Client`).
        auth: Applied to every request: `BearerAuth(token)`, `oauth_provider(url, ...)` or any
            other `httpx2.Auth`.
    """

    url: str
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    mode: Mode = "auto"
    auth: httpx2.Auth | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        remember_url_secrets(self.url)
        check_headers(self.headers)

    def describe(self) -> str:
        return self.url


@dataclass(frozen=True)
class SsePeer(_Options):
    """A server reached over the legacy HTTP+SSE transport (the `mcp` SDK's SSE client).

    Example:
        >>> SsePeer("http://127.0.0.1:8000/sse").describe()
        'http://127.0.0.1:8000/sse (SSE)'

    Args:
        url: The SSE endpoint, e.g. "http://127.0.0.1:8000/sse"; the server names the endpoint
            messages are posted to.
        headers: Sent with every request, the event stream's and the posted messages'.
        mode: How to negotiate the protocol version (see `mcp.Client`).
        auth: Applied to every request, as on `HttpPeer`.
    """

    url: str
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    mode: Mode = "auto"
    auth: httpx2.Auth | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        remember_url_secrets(self.url)
        check_headers(self.headers)

    def describe(self) -> str:
        return f"{self.url} (SSE)"


@dataclass(frozen=True)
class InProcessPeer(_Options):
    """An `mcp` server object running in this process (`MCPServer` or lowlevel `Server`)."""

    server: MCPServer | Server[Any]
    mode: Mode = "auto"

    def describe(self) -> str:
        return f"in-process {self.server.name!r}"


@dataclass(frozen=True)
class SessionPeer(_Options):
    """A session someone else opened and keeps owning (`mcp.Client`, `mcp.ClientSession`, ...).

    The Router cannot reopen it: if it fails, the peer leaves. Tool-list changes are followed on
    2026-07-28 `mcp.Client` connections (through `subscriptions/listen`); otherwise call
    `Router.refresh`.
    """

    session: ToolSession

    def describe(self) -> str:
        return f"session {type(self.session).__name__}"


class ParticipantSource(Protocol):
    """What reaches the participants of a topic: a connected `mcpx.TopicClient`."""

    topic: str

    def participant_transport(self, participant_id: str) -> Transport: ...


@dataclass(frozen=True)
class ParticipantPeer(_Options):
    """A participant of an MCPx topic, reached over the topic's connection (see docs/mcpx.md).

    `Router.join_topic` makes these for every participant present; join one yourself with
    `router.join("agent-b", ParticipantPeer(topic_client, "agent-b"))`. A lost session is
    reopened over the same topic client (which reconnects itself if it was given a policy).

    Args:
        topic: A connected `TopicClient` (anything with `participant_transport(id)`).
        participant: The participant's id in the topic.
        mode: How to negotiate the protocol version; MCPx v0 participants expect the
            `initialize` handshake ("legacy").
    """

    topic: ParticipantSource
    participant: str
    mode: Mode = "legacy"

    def describe(self) -> str:
        return f"participant {self.participant!r} of topic {self.topic.topic!r}"


PeerSpec: TypeAlias = StdioPeer | HttpPeer | SsePeer | InProcessPeer | SessionPeer | ParticipantPeer
"""Any description of a peer that `Router.join` accepts: one of the spec classes above."""


def as_peer_spec(peer: object) -> PeerSpec:
    """Accept a spec, a URL, `StdioServerParameters`, an `mcp` server object or a connected session.

    A URL whose path ends in `/sse` is taken as an SSE endpoint (`SsePeer`), any other as
    streamable HTTP (`HttpPeer`); give the spec yourself to choose otherwise.
    """
    if isinstance(peer, StdioPeer | HttpPeer | SsePeer | InProcessPeer | SessionPeer | ParticipantPeer):
        return peer
    if isinstance(peer, str):
        if peer.startswith(("http://", "https://")):
            return SsePeer(peer) if is_sse_url(peer) else HttpPeer(peer)
        raise ValueError(
            f"{peer!r} is not an http(s) URL; for a command give StdioPeer(command, args) instead"
        )
    if isinstance(peer, mcp.StdioServerParameters):
        return StdioPeer(
            peer.command,
            list(peer.args),
            env=peer.env,
            cwd=None if peer.cwd is None else os.fspath(peer.cwd),
        )
    if isinstance(peer, MCPServer | Server):
        return InProcessPeer(peer)
    if callable(getattr(peer, "call_tool", None)) and callable(getattr(peer, "list_tools", None)):
        return SessionPeer(peer)  # type: ignore[arg-type]
    raise TypeError(
        f"cannot make a peer of {type(peer).__name__}: give a StdioPeer, HttpPeer, SsePeer, InProcessPeer, "
        "SessionPeer, an http(s) URL, StdioServerParameters, an MCPServer or a connected mcp.Client"
    )


def check_headers(headers: Mapping[str, str] | None) -> None:
    """Keep every header value among the secrets, and refuse one HTTP cannot send.

    Raises:
        ValueError: A header name or value cannot be sent; the message names the header and what
            is wrong with its value, never the value.
    """
    if headers is None:
        return
    if not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping of names to values, not {type(headers).__name__}")
    for value in headers.values():
        remember_secret(value)
        if isinstance(value, str):
            scheme, _, credentials = value.strip().partition(" ")
            if scheme and credentials:
                remember_secret(credentials)  # `Bearer <token>`: the token alone too
    for name, value in headers.items():
        if not isinstance(name, str) or not name or not all(c in _TOKEN for c in name):
            raise ValueError(
                f"the header name {name!r} is not a valid HTTP header name "
                "(letters, digits and !#$%&'*+-.^_`|~ only)"
            )
        if not isinstance(value, str):
            raise TypeError(f"the value of header {name!r} must be a string, not {type(value).__name__}")
        problem = header_value_problem(value)
        if problem is not None:
            raise ValueError(f"the value of header {name!r} {problem}")


_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The characters of an HTTP header name (RFC 9110, section 5.6.2)."""


def header_value_problem(value: str) -> str | None:
    """What makes `value` unsendable as an HTTP header value, in words that never show it (None: nothing)."""
    if "\r" in value or "\n" in value:
        if any(c in "\r\n" for c in value.rstrip("\r\n")):
            return "holds a line break (CR or LF), which HTTP headers cannot carry"
        return (
            "ends with a line break (CR or LF), as a value read from a file with Windows line endings "
            "does; remove it"
        )
    if any(ord(c) > 0x7E for c in value):
        return "holds a character that is not ASCII, which HTTP headers cannot carry"
    if any(c != "\t" and (ord(c) < 0x20 or ord(c) == 0x7F) for c in value):
        return "holds a control character"
    if value != value.strip(" \t"):
        return "starts or ends with a space or tab"
    return None


def remember_url_secrets(url: str) -> None:
    """Keep a URL's password, and its query values named like credentials (`?api_key=`), among the secrets."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except (ValueError, TypeError):
        return
    remember_secret(password)
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if credential_name(unquote(name)):
            remember_secret(value)  # as written, and decoded
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if credential_name(name):
            remember_secret(value)


def remember_command_secrets(args: Sequence[str], env: Mapping[str, str] | None) -> None:
    """Keep a command's credentials among the secrets: the values of options and `NAME=value` words named
    like credentials (`--api-key KEY`, `--token=KEY`, `API_KEY=KEY`), and of `env` variables so named."""
    for name, value in (env or {}).items():
        if credential_name(name):
            remember_secret(value)
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        name, equals, value = arg.partition("=")
        if equals and credential_name(name):
            remember_secret(value)
        elif arg.startswith("-") and credential_name(arg) and i + 1 < len(args):
            remember_secret(args[i + 1])
        elif arg.startswith(("http://", "https://")):
            remember_url_secrets(arg)


def is_sse_url(url: str) -> bool:
    """Whether `url` names an SSE endpoint by the convention hosts follow: its path ends in `/sse`."""
    return urlsplit(url).path.rstrip("/").endswith("/sse")


def adapter_options(spec: PeerSpec) -> dict[str, Any]:
    """The keyword arguments of `OpenAIPeerToolAdapter.add_peer` that `spec` asks for."""
    options: dict[str, Any] = {
        "max_concurrency": spec.max_concurrency,
        "tool_timeouts": dict(spec.tool_timeouts),
        "include": spec.include_tools,
        "exclude": spec.exclude_tools,
    }
    if spec.call_timeout != DEFAULT:
        options["call_timeout"] = spec.call_timeout
    if spec.strict != DEFAULT:
        options["strict"] = spec.strict
    return options


def with_tool_filter(
    spec: PeerSpec, include_tools: Sequence[str] | None, exclude_tools: Sequence[str] | None
) -> PeerSpec:
    """`spec` with the tool patterns that are given (not None) in place of its own."""
    if include_tools is not None:
        spec = dataclasses.replace(spec, include_tools=include_tools)
    if exclude_tools is not None:
        spec = dataclasses.replace(spec, exclude_tools=exclude_tools)
    return spec


def _check_tool_options(options: _Options) -> None:
    for what in ("include_tools", "exclude_tools"):
        patterns = getattr(options, what)
        if patterns is None:
            continue
        if isinstance(patterns, str | bytes) or not isinstance(patterns, Iterable):
            raise TypeError(f"{what} must be a list of glob patterns (strings), not {patterns!r}")
        patterns = tuple(patterns)
        if not all(isinstance(p, str) for p in patterns):
            raise TypeError(f"{what} must be a list of glob patterns (strings), not {patterns!r}")
        object.__setattr__(options, what, patterns)
    strict = options.strict
    if not (strict is None or isinstance(strict, bool) or (isinstance(strict, str) and strict == DEFAULT)):
        raise ValueError(f"strict must be True, False, None or 'default', not {options.strict!r}")


def _check_timeout(what: str, value: object) -> None:
    if value is None or value == DEFAULT:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{what} must be a positive number of seconds, None or 'default', not {value!r}")
