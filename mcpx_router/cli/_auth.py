"""`mcpx-router login SERVER`: authorize this client with an OAuth-protected server of a config.

    mcpx-router login notes --config mcp.json             # the authorization-code flow, in a browser
    mcpx-router login notes --config mcp.json --token -   # store a token obtained elsewhere (stdin)

The server's entry needs OAuth settings (`"auth": {"type": "oauth", ...}` or `"oauth": {...}`).
The command prints the authorization URL (and opens a browser when it runs on a terminal),
receives the redirect on the entry's loopback callback port, connects once to check the tokens
and leaves them in the entry's token store, where `tools`, `call` and `chat` find them.

The callback port answers only the redirect of the login in progress: a request for another
path gets 404, and one to the callback path without the `state` of the authorization URL
(missing, or another) gets 400; both leave the login waiting for the real redirect, and nothing
printed says which state was expected.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import sys
import webbrowser
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthToken

from .._console import add_verbose, fail, positive_seconds, run_command, say
from .._errors import RouterError, remember_secret
from ..peers import HttpPeer, SsePeer, load_config
from ..peers._router import Router
from ..peers.auth._auth import BearerAuth, token_file
from ._discover import discover, here

__all__ = ["add_login_command"]

_REQUEST_LIMIT = 16384
"""Bytes of the browser's request to the callback port that are read."""


def add_login_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register the `login` subcommand."""
    login = commands.add_parser(
        "login",
        help="authorize with an OAuth-protected server of a config file and keep its tokens",
        description="Run the OAuth authorization-code flow for one server of an mcpServers config file: "
        "print the authorization URL (and open a browser on a terminal), receive the redirect on "
        "127.0.0.1, and keep the tokens in the server's token store for the other commands.",
    )
    login.add_argument("server", help="the server's name in the config file")
    login.add_argument(
        "--config",
        metavar="FILE",
        help="an mcpServers JSON file (default: the first MCP config found, as for the other commands)",
    )
    login.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="store this access token instead of authorizing in a browser ('-': read it from standard input)",
    )
    login.add_argument("--no-browser", action="store_true", help="only print the URL, never open a browser")
    login.add_argument(
        "--timeout",
        type=positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long to wait for the authorization (default: 300)",
    )
    add_verbose(login)
    login.set_defaults(run=_run_login)


def _run_login(args: argparse.Namespace) -> int:
    if args.config is None:
        places = here()
        found = discover(places)
        if found is None:
            looked = ", ".join(str(place.path) for place in places)
            return fail(f"no MCP config found; looked for {looked}. Give one with --config FILE", 2)
        say(f"using {found.path} ({found.host})")
        args.config = str(found.path)
    try:
        spec = load_config(args.config).get(args.server)
    except RouterError as exc:
        return fail(str(exc), 2)
    if not isinstance(spec, HttpPeer | SsePeer) or not isinstance(spec.auth, OAuthClientProvider):
        return fail(
            f"server {args.server!r} of {args.config!r} has no OAuth settings; give its entry "
            '"url" and "auth": {"type": "oauth"} (see docs/peers.md)'
            if spec is not None
            else f"{args.config!r} has no enabled server {args.server!r}",
            2,
        )
    token = args.token
    if token == "-":
        token = sys.stdin.readline().strip()
    if token is not None:
        try:
            BearerAuth(token)
        except ValueError as exc:
            return fail(f"--token: {exc}", 2)
    browser = not args.no_browser and sys.stdin.isatty() and sys.stderr.isatty()
    auth = spec.auth
    return run_command(lambda: login(args.server, spec, auth, token, browser, args.timeout))


async def login(
    name: str,
    spec: HttpPeer | SsePeer,
    auth: OAuthClientProvider,
    token: str | None,
    browser: bool,
    wait: float,
) -> int:
    """Authorize (or store `token`), then connect once to check; 0 on success."""
    if token is not None:
        try:
            await auth.context.storage.set_tokens(OAuthToken(access_token=token))
        except RouterError as exc:  # a token store that is not one
            return fail(str(exc), 1)
        auth.context.redirect_handler = _refused
        return await _connect(name, spec, auth, wait)
    redirect_uris = auth.context.client_metadata.redirect_uris
    if not redirect_uris:
        return fail(f"server {name!r} has no redirect URI to receive the authorization on", 2)
    redirect_uri = str(redirect_uris[0])
    parts = urlsplit(redirect_uri)
    try:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=parts.port or 80)
    except OSError as exc:
        return fail(
            f"cannot receive the authorization on {redirect_uri}: {exc.strerror or exc}; "
            'free the port or choose another with "callbackPort" in the entry',
            1,
        )
    async with listener:
        expected: list[str | None] = []
        auth.context.redirect_handler = _show(name, browser, expected)
        auth.context.callback_handler = lambda: _receive(listener, parts.path or "/", expected[-1:])
        return await _connect(name, spec, auth, wait)


async def _connect(name: str, spec: HttpPeer | SsePeer, auth: OAuthClientProvider, wait: float) -> int:
    """Join the server once (authorizing as needed); say where its tokens are."""
    try:
        async with Router(connect_timeout=wait) as router:
            names = await router.join(name, spec)
    except RouterError as exc:
        return fail(str(exc), 1)
    where = token_file(auth)
    kept = f"; its tokens are in {where}" if where is not None else " (its tokens are kept in memory only)"
    print(f"Authorized with {name!r}: {len(names)} tools{kept}", file=sys.stderr)
    return 0


async def _refused(url: str) -> None:
    raise OAuthFlowError("the server did not accept the given token")


def _show(name: str, browser: bool, expected: list[str | None]) -> Callable[[str], Awaitable[None]]:
    """Show the authorization URL; keep its `state` in `expected`, for the callback to check."""

    async def show(url: str) -> None:
        expected.append(parse_qs(urlsplit(url).query).get("state", [None])[0])
        print(f"To authorize {name!r}, open this URL in a browser:\n{url}", file=sys.stderr, flush=True)
        if browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)

    return show


async def _receive(
    listener: anyio.abc.Listener[anyio.abc.SocketStream], path: str, expected: list[str | None]
) -> AuthorizationCodeResult:
    """Answer requests on the callback port until the redirect to `path` with the `expected` state
    (the one of the authorization URL shown) arrives; return its parameters."""
    state = expected[0] if expected else None
    outcome: list[AuthorizationCodeResult | OAuthFlowError] = []
    async with anyio.create_task_group() as tg:

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                result = await _callback(stream, path, state)
            if result is not None and not outcome:
                outcome.append(result)
                tg.cancel_scope.cancel()

        tg.start_soon(listener.serve, handle, tg)
    if isinstance(outcome[0], OAuthFlowError):
        raise outcome[0]
    return outcome[0]


async def _callback(
    stream: anyio.abc.SocketStream, path: str, state: str | None
) -> AuthorizationCodeResult | OAuthFlowError | None:
    """Answer one request; what it brought if it is the redirect to `path` with `state` (None otherwise)."""
    query = callback_query(await _request_target(stream), path)
    if query is None:
        await _answer(stream, 404, "Not the authorization callback.")
        return None
    if not same_state(query.get("state"), state):
        await _answer(stream, 400, "Not the redirect of the login in progress (its state does not match).")
        return None
    if "error" in query:
        await _answer(stream, 400, "The authorization was refused. You can close this window.")
        detail = query.get("error_description", [""])[0]
        return OAuthFlowError(
            f"the authorization server refused: {query['error'][0]}" + (f" ({detail})" if detail else "")
        )
    if "code" not in query:
        await _answer(stream, 400, "The redirect brought no authorization code.")
        return None
    remember_secret(query["code"][0])
    await _answer(stream, 200, "Authorized. You can close this window.")
    return AuthorizationCodeResult(
        code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
    )


def same_state(given: list[str] | None, state: str | None) -> bool:
    """Whether a redirect's `state` parameters are exactly the one `state` of the authorization URL."""
    if state is None:
        return not given
    return given is not None and len(given) == 1 and hmac.compare_digest(given[0].encode(), state.encode())


def callback_query(target: str | None, path: str) -> dict[str, list[str]] | None:
    """The query parameters of a request target (`/callback?code=...`) for `path`; None for another."""
    if target is None:
        return None
    try:
        parts = urlsplit(target)
    except ValueError:  # e.g. an unclosed "[" of an IPv6 host: not our redirect
        return None
    return parse_qs(parts.query) if parts.path == path else None


async def _request_target(stream: anyio.abc.SocketStream) -> str | None:
    """The target of an HTTP GET request (`/callback?code=...`), or None for anything else."""
    data = b""
    with anyio.move_on_after(10):
        while b"\r\n\r\n" not in data and len(data) < _REQUEST_LIMIT:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    line = data.split(b"\r\n", 1)[0].decode("latin-1").split()
    return line[1] if len(line) == 3 and line[0] == "GET" else None


async def _answer(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
    body = text.encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    # If the browser went away first, the code it brought still counts.
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head.encode() + body)
