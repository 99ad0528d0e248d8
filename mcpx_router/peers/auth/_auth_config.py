"""The `"auth"` key of an `mcpServers` entry (pure, no I/O): a bearer token or OAuth.

    "notes": {"url": "https://notes.example/mcp", "auth": {"type": "bearer", "token": "${NOTES_TOKEN}"}}
    "docs":  {"url": "https://docs.example/mcp",
              "auth": {"type": "oauth", "clientId": "...", "clientSecret": "...",
                       "scopes": ["read"], "callbackPort": 33418, "tokenStore": "tokens.json"}}

An OAuth entry's keys are all optional: without `clientId` the client registers itself
(dynamic client registration). The same keys under `"oauth"` (Claude Code's and Gemini CLI's
name) mean the same, and Cursor's `"CLIENT_ID"`/`"CLIENT_SECRET"` are read as `clientId` and
`clientSecret`. `tokenStore` is a JSON file, relative to the config file, or `"memory"`;
by default `$XDG_CONFIG_HOME/mcpx-router/tokens.json` (`~/.config/...`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from ..._errors import ConfigError, remember_secret

if TYPE_CHECKING:
    from mcp.client.auth import TokenStorage

from ._auth import DEFAULT_CALLBACK_PORT, BearerAuth, FileTokenStore, MemoryTokenStore, oauth_provider

__all__ = ["auth_from_config", "default_token_store"]

Fail = Callable[[str], ConfigError]

_OAUTH_KEYS = {"type", "clientId", "clientSecret", "scopes", "callbackPort", "tokenStore", "clientName"}
_ALIASES = {"CLIENT_ID": "clientId", "CLIENT_SECRET": "clientSecret"}


def default_token_store() -> Path:
    """Where OAuth tokens are kept when a config entry does not say: the user's config directory."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcpx-router" / "tokens.json"


def auth_from_config(
    entry: Mapping[str, Any], url: str, fail: Fail, base_dir: Path | None = None
) -> httpx2.Auth | None:
    """The `httpx2.Auth` an entry's `"auth"` (or `"oauth"`) key asks for; None if it has neither.

    Raises:
        ConfigError: (made by `fail`) The key is malformed; the message says what is wrong.
    """
    if "auth" in entry and "oauth" in entry:
        raise fail('give either "auth" or "oauth", not both')
    if "oauth" in entry:
        value = entry["oauth"]
        if not isinstance(value, Mapping):
            raise fail(f'"oauth" must be an object of OAuth settings, not {value!r}')
        if "type" in value:
            raise fail('"oauth" takes no "type"; it is always OAuth')
        return _oauth({"type": "oauth", **value}, url, fail, base_dir, '"oauth"')
    value = entry.get("auth")
    if value is None:
        return None
    if not isinstance(value, Mapping):  # perhaps the token itself: never shown
        remember_secret(value)
        raise fail(
            '"auth" must be an object such as {"type": "bearer", "token": "..."}, '
            f"not {type(value).__name__}"
        )
    kind = value.get("type", "bearer" if "token" in value else "oauth")
    if kind == "bearer":
        unknown = set(value) - {"type", "token"}
        if unknown:
            raise fail(f'"auth" of type "bearer" takes only "token", not {_names(unknown)}')
        token = value.get("token")
        if not isinstance(token, str) or not token.strip():
            raise fail(f'"auth"."token" must be a non-empty string, not {token!r}')
        try:
            return BearerAuth(token)
        except ValueError as exc:
            raise fail(f'"auth"."token": {exc}') from None
    if kind == "oauth":
        return _oauth(value, url, fail, base_dir, '"auth"')
    raise fail(f'"auth"."type" must be "bearer" or "oauth", not {kind!r}')


def _oauth(value: Mapping[str, Any], url: str, fail: Fail, base_dir: Path | None, where: str) -> httpx2.Auth:
    settings = {_ALIASES.get(key, key): item for key, item in value.items()}
    if len(settings) < len(value):
        raise fail(f'{where} names the client id or secret twice (say "clientId" and "clientSecret" once)')
    unknown = set(settings) - _OAUTH_KEYS
    if unknown:
        raise fail(
            f"{where} has unknown keys {_names(unknown)}; OAuth takes {_names(_OAUTH_KEYS - {'type'})}"
        )
    client_id = _text(settings, "clientId", where, fail)
    secret = _text(settings, "clientSecret", where, fail)
    if secret is not None and client_id is None:
        raise fail(f'{where}: "clientSecret" needs the "clientId" it belongs to')
    name = _text(settings, "clientName", where, fail) or "mcpx-router"
    port = settings.get("callbackPort", DEFAULT_CALLBACK_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise fail(f'{where}."callbackPort" must be a port number (1 to 65535), not {port!r}')
    return oauth_provider(
        url,
        scopes=_scopes(settings.get("scopes"), where, fail),
        client_id=client_id,
        client_secret=secret,
        client_name=name,
        redirect_uri=f"http://127.0.0.1:{port}/callback",
        store=_store(settings.get("tokenStore"), url, where, fail, base_dir),
    )


def _text(settings: Mapping[str, Any], key: str, where: str, fail: Fail) -> str | None:
    value = settings.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise fail(f'{where}."{key}" must be a non-empty string, not {value!r}')
    return value


def _scopes(value: Any, where: str, fail: Fail) -> list[str] | None:
    if value is None:
        return None
    scopes = value.split() if isinstance(value, str) else value
    if not isinstance(scopes, list) or not all(
        isinstance(scope, str) and scope and all(_scope_character(c) for c in scope) for scope in scopes
    ):
        raise fail(f'{where}."scopes" must be a list of scope names (no spaces or quotes), not {value!r}')
    return scopes or None


def _scope_character(c: str) -> bool:
    """RFC 6749 section 3.3: a scope is printable ASCII without spaces, quotes or backslashes."""
    return "!" <= c <= "~" and c not in '"\\'


def _store(value: Any, url: str, where: str, fail: Fail, base_dir: Path | None) -> TokenStorage:
    if value == "memory":
        return MemoryTokenStore()
    if value is None:
        return FileTokenStore(default_token_store(), url)
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise fail(f'{where}."tokenStore" must be a file path or "memory", not {value!r}')
    path = Path(value).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return FileTokenStore(path, url)


def _names(keys: set[str]) -> str:
    return ", ".join(repr(key) for key in sorted(keys))
