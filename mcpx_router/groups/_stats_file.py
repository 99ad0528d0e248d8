"""Reputation statistics kept in a JSON file, so that they outlive a process (`stats_file=`).

    {"version": 1, "window": 256,
     "peers": {"web": RECORD, ...},
     "tools": [{"peer": "web", "tool": "search", ...RECORD}, ...]}

    RECORD: {"calls": 3, "errors": {"timeout": 1, ...}, "latencies": [0.12, ...],
             "last_failure": {"kind": "timeout", "message": "...", "at": 1767225600.0} | null,
             "good": 0.0, "bad": 0.0, "consecutive_failures": 1}

`latencies` are the last `window` calls' seconds, oldest first; `errors` are counted by the kinds
of `ERROR_KINDS`. The file is written whole into a new file that then replaces the old one, so
a reader never sees half a file. A file that cannot be read, is not JSON or does not have this
shape is never overwritten: loading it raises `ConfigError` naming it, and deleting it is the
fix. A missing file is no statistics yet. Two processes that record into one file at the same
time each write what they loaded plus their own calls; the last to close wins.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .._naming import ToolKey
from ._reputation import ERROR_KINDS, LastFailure, Reputation, _Record

__all__ = ["load_stats", "save_stats"]

_VERSION = 1


def load_stats(path: str | os.PathLike[str], reputation: Reputation) -> bool:
    """Add the statistics in the file at `path` to `reputation` (which has no calls yet).

    Returns:
        Whether there was a file.

    Raises:
        ConfigError: The file cannot be read, or is not a statistics file (it is left as it is).
    """
    where = Path(path).expanduser()
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read the statistics file {str(where)!r}: {reason}", peer="") from None
    try:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"it is not valid JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError(f'expected {{"version": {_VERSION}, "peers": {{...}}, "tools": [...]}}')
        peers, tools = data.get("peers"), data.get("tools")
        if not isinstance(peers, dict) or not isinstance(tools, list):
            raise ValueError('"peers" must be an object and "tools" a list')
        for peer, record in peers.items():
            reputation._peers[peer] = _record(record, reputation.window, f"peer {peer!r}")
        for entry in tools:
            if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k), str) for k in ("peer", "tool")
            ):
                raise ValueError('each entry of "tools" must be an object with "peer" and "tool" strings')
            key = ToolKey(entry["peer"], entry["tool"])
            reputation._tools[key] = _record(entry, reputation.window, f"tool {key.peer}/{key.tool}")
    except ValueError as exc:
        reputation._peers.clear()
        reputation._tools.clear()
        raise ConfigError(
            f"the statistics file {str(where)!r} is unusable: {exc}; it was left as it is: delete it "
            "(or pass another file) to start the statistics afresh",
            peer="",
        ) from None
    return True


def save_stats(path: str | os.PathLike[str], reputation: Reputation) -> None:
    """Write `reputation`'s statistics to the file at `path`, replacing it whole.

    Raises:
        ConfigError: The file cannot be written.
    """
    where = Path(path).expanduser()
    data = {
        "version": _VERSION,
        "window": reputation.window,
        "peers": {peer: _dump(record) for peer, record in reputation._peers.items()},
        "tools": [
            {"peer": key.peer, "tool": key.tool, **_dump(record)} for key, record in reputation._tools.items()
        ],
    }
    text = json.dumps(data, indent=1) + "\n"
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{where.name}.", dir=where.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, where)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ConfigError(
            f"cannot write the statistics file {str(where)!r}: {exc.strerror or exc}", peer=""
        ) from None


def _dump(record: _Record) -> dict[str, Any]:
    last = record.last_failure
    return {
        "calls": record.calls,
        "errors": {kind: n for kind, n in zip(ERROR_KINDS, record.errors, strict=True) if n},
        "latencies": list(record.latencies),
        "last_failure": None if last is None else {"kind": last.kind, "message": last.message, "at": last.at},
        "good": record.good,
        "bad": record.bad,
        "consecutive_failures": record.consecutive,
    }


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a whole number of at least 0, not {value!r}")
    return value


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"{what} must be a finite number of at least 0, not {value!r}")
    return float(value)


def _record(data: object, window: int, what: str) -> _Record:
    if not isinstance(data, dict):
        raise ValueError(f"the record of {what} must be an object")
    record = _Record(window)
    record.calls = _count(data.get("calls", 0), f"{what}: calls")
    errors = data.get("errors", {})
    if not isinstance(errors, dict) or not set(errors) <= set(ERROR_KINDS):
        raise ValueError(f"{what}: errors must be an object with keys among {', '.join(ERROR_KINDS)}")
    record.errors = [_count(errors.get(kind, 0), f"{what}: errors.{kind}") for kind in ERROR_KINDS]
    if sum(record.errors) > record.calls:
        raise ValueError(f"{what}: more errors than calls")
    record.failed = sum(record.errors) - record.errors[ERROR_KINDS.index("invalid_arguments")]
    latencies = data.get("latencies", [])
    if not isinstance(latencies, list):
        raise ValueError(f"{what}: latencies must be a list of seconds")
    record.latencies.extend(_number(s, f"{what}: a latency") for s in latencies)
    last = data.get("last_failure")
    if last is not None:
        if not isinstance(last, dict) or not isinstance(last.get("kind"), str):
            raise ValueError(f'{what}: last_failure must be null or an object with "kind", "message", "at"')
        message = last.get("message")
        if not isinstance(message, str):
            raise ValueError(f"{what}: last_failure.message must be a string")
        record.last_failure = LastFailure(last["kind"], message, _number(last.get("at"), f"{what}: at"))
    record.good = _number(data.get("good", 0.0), f"{what}: good")
    record.bad = _number(data.get("bad", 0.0), f"{what}: bad")
    record.consecutive = _count(data.get("consecutive_failures", 0), f"{what}: consecutive_failures")
    return record
