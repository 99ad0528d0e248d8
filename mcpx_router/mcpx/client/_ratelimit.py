"""Recognising a gateway's rate-limit error, whatever its shape.

Gateways say "too many frames" in many ways: our own system envelope
(`{"event": "error", "error": "rate_limited", "retry_after": 0.5, "limit": {...}}` with the
dropped envelope's id as `correlation_id`), or bare objects that are not envelopes at all:
`{"error": "rate_limited", "retry_after": 2}`, `{"code": 429, "error": "Rate limit exceeded"}`,
`{"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 2000}`, `{"type": "error", "code":
"RATE_LIMITED", "retryAfter": 1}`, `{"status": 429, "error": "gateway:too.many.requests"}`,
`{"error": {"code": 429, "message": "Too Many Requests"}}`...
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RateLimited", "rate_limit_error"]

_WORDS = re.compile(r"rate.?limit|too.?many|limit.?exceeded|throttl|slow.?down|flood", re.IGNORECASE)
_CODE_KEYS = ("error", "code", "errcode", "error_code", "errorCode", "type", "reason", "status", "event")
_SECONDS_KEYS = (
    "retry_after",
    "retryAfter",
    "retry_after_seconds",
    "retryAfterSeconds",
    "retry_in",
    "reset_after",
)
_MS_KEYS = ("retry_after_ms", "retryAfterMs", "retry_after_millis", "retryAfterMillis")
_REF_KEYS = (
    "correlation_id",
    "correlationId",
    "envelope_id",
    "envelopeId",
    "ref",
    "message_id",
    "messageId",
    "id",
)
_WINDOW_KEYS = ("per_seconds", "window", "window_seconds", "period", "interval")
_MAX_PAUSE = 300.0


@dataclass(frozen=True, slots=True)
class RateLimited:
    """What a rate-limit error told us: when to try again, the limit, and the frame dropped."""

    retry_after: float | None = None
    limit: float | None = None
    """Frames a second the gateway allows, when it said."""
    ref: str | None = None
    """The id of the envelope it dropped, when it said."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _says_rate_limited(obj: Mapping[str, Any]) -> bool:
    for key in _CODE_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and _WORDS.search(value):
            return True
        if _number(value) == 429 and key in ("code", "status", "error", "error_code", "errorCode"):
            return True
        if isinstance(value, Mapping) and key == "error" and _says_rate_limited(value):
            return True
    message = obj.get("message")
    return isinstance(message, str) and bool(_WORDS.search(message))


def _retry_after(obj: Mapping[str, Any]) -> float | None:
    for key in _MS_KEYS:
        if (ms := _number(obj.get(key))) is not None:
            return min(ms / 1000, _MAX_PAUSE)
    for key in _SECONDS_KEYS:
        if (seconds := _number(obj.get(key))) is not None:
            return min(seconds, _MAX_PAUSE)
    return None


def _limit(obj: Mapping[str, Any]) -> float | None:
    """Frames a second from `{"limit": {"frames": 60, "per_seconds": 60}}` or
    `{"limit": 60, "window": 60}` (a bare number without a window says nothing usable)."""
    limit = obj.get("limit")
    if isinstance(limit, Mapping):
        frames = _number(limit.get("frames", limit.get("max", limit.get("count"))))
        window = next((w for k in _WINDOW_KEYS if (w := _number(limit.get(k))) is not None), None)
    else:
        frames = _number(limit)
        window = next((w for k in _WINDOW_KEYS if (w := _number(obj.get(k))) is not None), None)
    if frames is None or window is None or frames <= 0 or window <= 0:
        return None
    return frames / window


def _ref(obj: Mapping[str, Any]) -> str | None:
    for key in _REF_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def rate_limit_error(obj: Mapping[str, Any], correlation_id: str | None = None) -> RateLimited | None:
    """A `RateLimited` if `obj` (a bare error frame, or a system envelope's payload with its
    `correlation_id`) reports a rate limit; None for any other frame. Never raises."""
    layers: list[Mapping[str, Any]] = [obj]
    for key in ("error", "details", "data", "value"):
        inner = obj.get(key)
        if isinstance(inner, Mapping):
            layers.append(inner)
    if not any(_says_rate_limited(layer) for layer in layers):
        return None
    retry_after = next((r for layer in layers if (r := _retry_after(layer)) is not None), None)
    limit = next((x for layer in layers if (x := _limit(layer)) is not None), None)
    ref = correlation_id or next((i for layer in layers[1:] if (i := _ref(layer)) is not None), None)
    if ref is None and "protocol" not in obj:
        ref = _ref(obj)  # a bare error frame naming the frame it refused
    return RateLimited(retry_after, limit, ref)
