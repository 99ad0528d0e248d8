"""Why an HTTP peer's handshake failed when authorization is the reason, in words a person can act on.

The `mcp` SDK turns a 401 answer to `initialize` into a bare "Server returned an error
response", and an OAuth flow that cannot finish into an exception deep in a task group; both
become one `PeerUnavailableError` that says what the server wants and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2

from ..._errors import ConfigError, PeerUnavailableError
from ._auth import AuthorizationRequired, BearerAuth

__all__ = ["authorization_failure"]

_LOGIN_HINT = (
    'give it credentials: an "auth" entry in its config (a bearer token, or OAuth and then '
    "`mcpx-router login`), or HttpPeer(url, auth=BearerAuth(token) or oauth_provider(url, ...))"
)


def authorization_failure(
    peer: str, url: str, auth: httpx2.Auth | None, exc: BaseException, refusal: httpx2.Response | None
) -> PeerUnavailableError | None:
    """The join error for a handshake that failed for want of authorization; None if that is not why.

    `refusal` is the last 401 or 403 the peer's endpoint answered (None if its last answer was
    not one).
    """
    from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    causes = list(_leaves(exc))
    for cause in causes:
        if isinstance(cause, AuthorizationRequired):
            return _error(
                peer,
                f"the server at {url} needs a person to authorize this client ({cause}); log in "
                "first (`mcpx-router login`), or give oauth_provider(...) a redirect_handler and "
                "callback_handler",
            )
        if isinstance(cause, ConfigError):
            return _error(peer, str(cause))
        if isinstance(cause, OAuthFlowError | OAuthRegistrationError | OAuthTokenError):
            return _error(peer, f"the authorization with the server at {url} failed: {cause}")
    if refusal is None:
        return None
    status = refusal.status_code
    challenge = refusal.headers.get("www-authenticate", "")
    said = f"HTTP {status}" + (f", {_short(challenge)}" if challenge else "")
    if status == 403:
        return _error(peer, f"the server at {url} refused access ({said}); the credentials lack a permission")
    if auth is None:
        return _error(peer, f"the server at {url} requires authorization ({said}); {_LOGIN_HINT}")
    what = "bearer token" if isinstance(auth, BearerAuth) else "credentials"
    return _error(
        peer,
        f"the server at {url} refused the {what} ({said}); they may be wrong, expired or revoked",
    )


def _error(peer: str, problem: str) -> PeerUnavailableError:
    return PeerUnavailableError(f"peer {peer!r}: {problem}", peer=peer)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exception and, through groups and causes, what is behind it."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)


_CHALLENGE = 160
"""Characters of a WWW-Authenticate header shown in the error."""


def _short(text: str) -> str:
    return text if len(text) <= _CHALLENGE else text[: _CHALLENGE - 1] + "…"
