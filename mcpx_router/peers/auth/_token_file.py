"""OAuth tokens and client registrations kept in a JSON file, one entry per MCP server URL.

    {"version": 1, "servers": {
      "https://notes.example/mcp": {
        "tokens": {"access_token": "...", "token_type": "Bearer", "refresh_token": "...",
                   "scope": "tools", "expires_at": 1767225600.0},
        "client": {"client_id": "...", "redirect_uris": ["http://127.0.0.1:33418/callback"], ...}}}}

The file is written whole into a new file (mode 0600, only its owner can read it) that then
replaces the old one, so a reader never sees half a file. A file that cannot be read, is not
JSON or does not have this shape is never overwritten: every use raises `ConfigError` naming it,
and deleting it (or the entry of the server) and logging in again is the fix. A missing file
is an empty store. A file others can read or write (group or world) is used with a warning, once,
and the tokens and client secret read or written are kept among the secrets no message shows.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from ..._errors import ConfigError, remember_secret

__all__ = [
    "FileTokenStore",
    "expires_at",
    "remember_token_secrets",
    "warn_if_others_can_write",
    "with_expires_in",
]

logger = logging.getLogger("mcpx_router")

_VERSION = 1
_warned: set[tuple[str, int]] = set()


def warn_if_others_can_write(path: Path, what: str, why: str, *, readable: bool = False) -> None:
    """Warn (once per file and mode) when users other than its owner can write `path` (or, with
    `readable`, read it); nothing when it cannot be looked at or on Windows, where modes say nothing."""
    if os.name == "nt":
        return
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    others = stat.S_IWGRP | stat.S_IWOTH | ((stat.S_IRGRP | stat.S_IROTH) if readable else 0)
    key = (str(path.resolve()), mode)
    if not mode & others or key in _warned:
        return
    _warned.add(key)
    who = "others can write it" if mode & (stat.S_IWGRP | stat.S_IWOTH) else "others can read it"
    logger.warning(
        "%s %r has mode %04o: %s, and %s; make it your own alone with: chmod %s %s",
        what, str(path), mode, who, why, "600" if readable else "go-w", str(path),
    )  # fmt: skip


def remember_token_secrets(
    tokens: OAuthToken | None = None, client: OAuthClientInformationFull | None = None
) -> None:
    """Keep OAuth tokens and a client's secret among the secrets no message shows."""
    if tokens is not None:
        remember_secret(tokens.access_token)
        remember_secret(tokens.refresh_token)
    if client is not None:
        remember_secret(client.client_secret)


def expires_at(tokens: OAuthToken, now: float) -> dict[str, Any]:
    """`tokens` as JSON data, with the expiry as a time (`expires_at`) instead of seconds from now."""
    record: dict[str, Any] = tokens.model_dump(mode="json", exclude_none=True, exclude={"expires_in"})
    if tokens.expires_in is not None:
        record["expires_at"] = now + tokens.expires_in
    return record


def with_expires_in(record: Mapping[str, Any], now: float) -> OAuthToken:
    """The tokens of `record` (from `expires_at`), with `expires_in` the whole seconds left at `now`.

    Raises:
        ValueError: The record is not a token record (pydantic's `ValidationError` included).
    """
    fields = {key: value for key, value in record.items() if key != "expires_at"}
    if "expires_at" in record:
        expiry = record["expires_at"]
        if isinstance(expiry, bool) or not isinstance(expiry, int | float) or not math.isfinite(expiry):
            raise ValueError(f'"expires_at" must be a number of seconds since the epoch, not {expiry!r}')
        fields["expires_in"] = math.floor(expiry - now)
    return OAuthToken.model_validate(fields)


class FileTokenStore:
    """The tokens and client registration of the MCP server at `server_url`, kept in a JSON file.

    Several servers (and processes) may share one file: each has its own entry, by URL.

    Example:
        ```python
        store = FileTokenStore("~/.config/mcpx-router/tokens.json", url)
        HttpPeer(url, auth=oauth_provider(url, store=store))
        ```

    Raises (from every method):
        ConfigError: The file cannot be read or written, or is not a token file (it is then
            left as it is).
    """

    def __init__(self, path: str | os.PathLike[str], server_url: str) -> None:
        self.path = Path(path).expanduser()
        self.server_url = server_url

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r}, {self.server_url!r})"

    async def get_tokens(self) -> OAuthToken | None:
        record = (await self._entry()).get("tokens")
        if record is None:
            return None
        try:
            tokens = with_expires_in(record, _now())
        except ValueError as exc:
            raise self._corrupt(
                f"the tokens of {self.server_url!r} are not valid: {_first_line(exc)}"
            ) from None
        remember_token_secrets(tokens)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        remember_token_secrets(tokens)
        await self._update("tokens", expires_at(tokens, _now()))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        record = (await self._entry()).get("client")
        if record is None:
            return None
        try:
            client = OAuthClientInformationFull.model_validate(record)
        except ValidationError as exc:
            raise self._corrupt(
                f"the client registration of {self.server_url!r} is not valid: {_first_line(exc)}"
            ) from None
        remember_token_secrets(client=client)
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        remember_token_secrets(client=client_info)
        await self._update("client", client_info.model_dump(mode="json", exclude_none=True))

    async def _entry(self) -> dict[str, Any]:
        servers = await anyio.to_thread.run_sync(self._read)
        entry: dict[str, Any] = servers.get(self.server_url, {})
        return entry

    async def _update(self, key: str, value: dict[str, Any]) -> None:
        def update() -> None:
            servers = self._read()
            servers.setdefault(self.server_url, {})[key] = value
            self._write(servers)

        await anyio.to_thread.run_sync(update)

    def _read(self) -> dict[str, Any]:
        """Every entry of the file, by URL ({} if there is no file)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"cannot read the token store {str(self.path)!r}: {reason}", peer="") from None
        warn_if_others_can_write(self.path, "the token store", "it holds your credentials", readable=True)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise self._corrupt(f"it is not valid JSON ({exc})") from None
        if (
            not isinstance(data, dict)
            or data.get("version") != _VERSION
            or not isinstance(data.get("servers"), dict)
        ):
            raise self._corrupt(f'expected {{"version": {_VERSION}, "servers": {{URL: entry}}}}')
        servers: dict[str, Any] = data["servers"]
        for url, entry in servers.items():
            if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k, {}), dict) for k in ("tokens", "client")
            ):
                raise self._corrupt(
                    f'the entry of {url!r} must be an object with "tokens" and "client" objects'
                )
        return servers

    def _write(self, servers: dict[str, Any]) -> None:
        text = json.dumps({"version": _VERSION, "servers": servers}, indent=2) + "\n"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as file:  # mkstemp makes it 0600
                    file.write(text)
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as exc:
            raise ConfigError(
                f"cannot write the token store {str(self.path)!r}: {exc.strerror or exc}", peer=""
            ) from None

    def _corrupt(self, problem: str) -> ConfigError:
        return ConfigError(
            f"the token store {str(self.path)!r} is unusable: {problem}; it was left as it is: delete it "
            "(or the server's entry) and authorize again (mcpx-router login)",
            peer="",
        )


def _now() -> float:
    return time.time()


def _first_line(exc: Exception) -> str:
    """What is wrong, in one line: for pydantic, the first field and its problem."""
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}" if where else str(error["msg"])
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
