"""Who may reach the inspector: a session token, this machine's host names, same-origin pages,
and the host's own check.

The inspector can call every tool of every peer, so a request is refused unless all of these hold:

- its `Host` is one of the allowed names (by default the loopback names), so a page on a name
  that resolves to 127.0.0.1 (DNS rebinding) is refused even though the socket is reachable;
- an `Origin` it carries is the inspector's own (scheme, host and port), and a browser does not
  mark it `Sec-Fetch-Site: cross-site`, so no other site's page can script it;
- it carries the session token: once in the URL the inspector prints (`?token=`), which is then
  swapped for an HttpOnly, SameSite=Strict cookie and taken out of the address bar, or as
  `Authorization: Bearer <token>` for scripts;
- the host's own `auth` hook, when one is given, accepts it.

Every answer forbids framing, caching and referrers, and holds a content security policy that
allows nothing outside the inspector itself.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import Request

__all__ = ["LOOPBACK_HOSTS", "AuthHook", "Guard", "new_token"]

logger = logging.getLogger("mcpx_router.inspector")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
AuthHook = Callable[[Request], "bool | Awaitable[bool]"]
"""The host's own check: given the request, true to let it through (sync or async)."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The host names an inspector answers by default (`allowed_hosts`): this machine's own."""
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
        b"base-uri 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def new_token() -> str:
    """A fresh session token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def _host_name(host: str) -> str | None:
    """`host[:port]` → the lower-cased host name without brackets; None when it is malformed."""
    try:
        parts = urlsplit(f"//{host}")
        name = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return None
    return name


class Guard:
    """The ASGI middleware in front of the inspector's routes; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
        auth: AuthHook | None = None,
    ) -> None:
        if token is not None and len(token) < 16:
            raise ValueError("the inspector's token must be at least 16 characters")
        self._app = app
        self.token = token
        self._hosts = frozenset(host.lower().strip("[]") for host in allowed_hosts)
        if not self._hosts:
            raise ValueError("allowed_hosts must name at least one host")
        self._auth = auth
        # Named after the token, so that two inspectors on one machine (cookies ignore the port)
        # do not overwrite each other's cookie.
        digest = hashlib.sha256((token or "").encode()).hexdigest()[:12]
        self.cookie = f"mcpx_inspector_{digest}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":  # a WebSocket: the inspector speaks plain HTTP and SSE only
            await send({"type": "websocket.close", "code": 1008})
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        request = Request(scope, receive)
        refusal = self._refusal(request)
        if refusal is not None:
            await _plain(secured, *refusal)
            return
        if self._auth is not None:
            try:
                allowed = self._auth(request)
                if inspect.isawaitable(allowed):
                    allowed = await allowed
            except Exception:  # a check that fails never lets a request through
                logger.exception("the inspector's auth hook raised; the request is refused")
                await _plain(secured, 500, "the host's auth check failed; the request is refused")
                return
            if allowed is not True:
                await _plain(secured, 403, "refused by the host's auth check")
                return
        if self.token is not None:
            given = request.query_params.get("token")
            if given is not None and request.method == "GET" and _same(given, self.token):
                await self._swap_for_cookie(request, secured)
                return
            if not self._has_token(request):
                await _plain(
                    secured,
                    401,
                    "this inspector needs its session token: open the URL it printed (with ?token=)",
                )
                return
        await self._app(scope, receive, secured)

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        host = request.headers.get("host", "")
        if _host_name(host) not in self._hosts:
            return 403, f"host {host[:100]!r} is not allowed: open the inspector by the address it printed"
        origin = request.headers.get("origin")
        if origin is not None:
            if origin.lower() != f"{request.url.scheme}://{host.lower()}":
                return 403, "cross-origin requests are refused"
        if request.headers.get("sec-fetch-site", "same-origin") == "cross-site":
            return 403, "cross-site requests are refused"
        if request.method not in ("GET", "HEAD"):
            kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return 415, "send a JSON body (Content-Type: application/json)"
        return None

    def _has_token(self, request: Request) -> bool:
        assert self.token is not None
        cookie = request.cookies.get(self.cookie)
        if cookie is not None and _same(cookie, self.token):
            return True
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and _same(value.strip(), self.token)

    async def _swap_for_cookie(self, request: Request, send: Send) -> None:
        """Answer `?token=` with the cookie, and send the browser to the same URL without it."""
        assert self.token is not None
        root = request.scope.get("root_path", "") or ""
        query = urlencode([(k, v) for k, v in parse_qsl(request.url.query) if k != "token"])
        location = request.url.path + (f"?{query}" if query else "")
        cookie = f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path={root or '/'}"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


async def _plain(send: Send, status: int, text: str) -> None:
    body = f"{text}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
