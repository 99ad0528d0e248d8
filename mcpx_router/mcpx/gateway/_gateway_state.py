"""Gateway bookkeeping with no I/O: tokens, rooms, members, history, rate limits, frame checks."""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from .._envelope import GATEWAY_ID, PROTOCOL, Kind, envelope_to_dict, new_envelope
from .._rpc import classify
from .._welcome import participant_entry

logger = logging.getLogger("mcpx_router.mcpx.gateway")


@dataclass(frozen=True, slots=True)
class TokenGrant:
    """Who a token authenticates, and for which topics (None: any topic)."""

    participant_id: str
    topics: frozenset[str] | None = None
    expires_at: float | None = None  # time.monotonic() deadline; None: never

    def allows(self, topic: str, now: float) -> bool:
        if self.expires_at is not None and now >= self.expires_at:
            return False
        return self.topics is None or topic in self.topics


class TokenVerifier(Protocol):
    """Who a bearer token authenticates; None refuses it (the gateway then closes with 1008).

    Implemented by `JWTVerifier`; consulted for tokens the gateway did not issue or configure.
    """

    def verify(self, token: str) -> TokenGrant | None: ...


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    dev_tokens: bool = True
    """Serve `POST /v0/auth/token` (anyone may claim any id: for development only)."""
    tokens: Mapping[str, TokenGrant] = field(default_factory=dict)
    """Pre-shared tokens, always accepted (alongside dev tokens when those are on)."""
    verifier: TokenVerifier | None = None
    """Verifies the other tokens, e.g. `JWTVerifier`: signed tokens that outlive this process."""
    query_tokens: bool = False
    """Accept `?token=` on the WebSocket URL as well as the `Authorization` header. Off: URLs
    end up in access logs, proxies' included, and a token there is readable by whoever reads them."""
    token_ttl: float = 3600.0
    history_limit: int = 100
    rate_per_second: float = 50.0
    rate_burst: int = 100
    send_queue: int = 1024
    max_message_bytes: int = 1024 * 1024
    ping_interval: float | None = 20.0
    """Seconds between WebSocket pings to each participant (None: no pings, no dead-peer check)."""
    ping_timeout: float = 20.0
    """A participant from which nothing (not even a pong) arrives for `ping_interval` +
    `ping_timeout` seconds is disconnected, and its `leave` announced."""
    presence_interval: float = 0.25
    """Seconds between two presence batches of a topic, for the participants that ask for them
    (`?presence=batched`); the others get a frame per join and leave, as the draft says."""

    nats: str | Sequence[str] | None = None
    """NATS server URL(s): this gateway is one of many serving the same topics (asyncio only;
    needs nats-py, `pip install 'mcpx-router[nats]'`). None: a gateway on its own."""
    nats_prefix: str = "mcpx"
    """The subjects' prefix (and the history stream's name), so deployments can share a NATS."""
    nats_replicas: int = 1
    """Replicas of the history stream when this gateway creates it (3 on a 3-node NATS cluster
    keeps the history through the loss of a node); an existing stream keeps its own settings."""
    nats_heartbeat: float = 2.0
    """Seconds between this gateway's heartbeats; one silent for three is taken as dead and its
    participants leave every roster."""
    nats_handover: float = 5.0
    """Seconds a frame for a participant on another gateway, not delivered because that
    participant is moving (its gateway is stopping, or it is reconnecting elsewhere), waits for
    it to connect to any gateway; then it is refused, as for an unknown recipient (0: at once)."""

    def __post_init__(self) -> None:
        if isinstance(self.nats, str):
            object.__setattr__(self, "nats", (self.nats,))
        if self.nats is not None and not self.nats:
            raise ValueError("nats needs at least one NATS server URL (or None)")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", self.nats_prefix):
            raise ValueError(
                f"nats_prefix must be 1 to 32 letters, digits, '_' or '-', not {self.nats_prefix!r}"
            )
        if not 1 <= self.nats_replicas <= 5:
            raise ValueError(f"nats_replicas must be 1 to 5 (JetStream's range), not {self.nats_replicas!r}")
        if not self.nats_handover >= 0:
            raise ValueError(f"nats_handover must be seconds, 0 or more, not {self.nats_handover!r}")
        if not self.presence_interval >= 0:
            raise ValueError(f"presence_interval must be 0 or more seconds, not {self.presence_interval!r}")
        if not self.nats_heartbeat > 0:
            raise ValueError(f"nats_heartbeat must be positive seconds, not {self.nats_heartbeat!r}")
        for grant in self.tokens.values():
            if not valid_id(grant.participant_id):
                raise ValueError(
                    f"a pre-shared token binds the participant id {grant.participant_id!r}, which no "
                    "participant may have: 1 to 128 printable characters without spaces, not "
                    "starting with 'system' (the gateway's own namespace)"
                )


def valid_id(value: Any) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and not value.startswith("system")
        and all(c.isprintable() and not c.isspace() for c in value)
    )


class TokenStore:
    def __init__(self, config: GatewayConfig) -> None:
        self._config = config
        self._issued: dict[str, TokenGrant] = {}

    def issue(self, participant_id: str, topic: str) -> str:
        now = time.monotonic()
        for token in [t for t, g in self._issued.items() if g.expires_at is not None and g.expires_at <= now]:
            del self._issued[token]
        token = secrets.token_urlsafe(32)
        self._issued[token] = TokenGrant(participant_id, frozenset({topic}), now + self._config.token_ttl)
        return token

    def check(self, token: str | None, topic: str | None) -> TokenGrant | None:
        if not token:
            return None
        grant = self._config.tokens.get(token) or self._issued.get(token) or self._verify(token)
        if grant is None:
            return None
        if topic is None:
            return grant if grant.expires_at is None or time.monotonic() < grant.expires_at else None
        return grant if grant.allows(topic, time.monotonic()) else None

    def _verify(self, token: str) -> TokenGrant | None:
        verifier = self._config.verifier
        if verifier is None:
            return None
        try:
            return verifier.verify(token)
        except Exception:  # a verifier that fails refuses: never "valid"
            logger.exception("the token verifier failed; refusing the token")
            return None


class RateLimiter:
    """A token bucket per participant id."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1.0, now)
        return True

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may send one frame again."""
        tokens, last = self._buckets.get(key, (float(self.burst), time.monotonic()))
        tokens = min(float(self.burst), tokens + (time.monotonic() - last) * self.rate)
        return max(0.0, (1.0 - tokens) / self.rate) if self.rate > 0 else 60.0


class FrameRejected(Exception):
    def __init__(
        self,
        error: str,
        message: str,
        correlation_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.correlation_id = correlation_id
        self.extra = dict(extra or {})


def over_rate(text: str, limiter: RateLimiter, key: str) -> FrameRejected:
    """The refusal of a frame over the rate limit: the limit, when to try again, and which frame
    (its envelope id as `correlation_id`) so that the sender can send it again then."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    env_id = obj.get("id") if isinstance(obj, dict) else None
    retry_after = round(limiter.retry_after(key), 3)
    message = (
        f"rate limit: at most {limiter.rate:g} frames a second (bursts of {limiter.burst}); "
        f"this frame was dropped: send it again in {retry_after:g} s, and slow down"
    )
    limit = {"frames": limiter.rate, "per_seconds": 1, "burst": limiter.burst}
    ref = env_id if isinstance(env_id, str) and env_id else None
    return FrameRejected("rate_limited", message, ref, {"retry_after": retry_after, "limit": limit})


def check_client_frame(text: str, participant_id: str) -> dict[str, Any]:
    """Validate a frame a participant sent; return it parsed or raise `FrameRejected`."""
    try:
        obj = json.loads(text)
    except ValueError:
        raise FrameRejected("invalid_json", "frame is not JSON") from None
    if not isinstance(obj, dict):
        raise FrameRejected("invalid_envelope", "frame is not a JSON object")
    env_id = obj.get("id")
    ref = env_id if isinstance(env_id, str) and env_id else None
    if obj.get("protocol") != PROTOCOL:
        raise FrameRejected("invalid_envelope", f"protocol must be {PROTOCOL!r}", ref)
    if ref is None:
        raise FrameRejected("invalid_envelope", "envelope id must be a non-empty string")
    if obj.get("from") != participant_id:
        raise FrameRejected("from_mismatch", f"`from` must be your participant id {participant_id!r}", ref)
    if obj.get("kind") != "mcp":
        raise FrameRejected("invalid_kind", "participants may only send kind 'mcp'", ref)
    to = obj.get("to", [])
    if to is None:
        to = []
    if not isinstance(to, list) or not all(isinstance(r, str) and r for r in to):
        raise FrameRejected("invalid_envelope", "`to` must be a list of participant ids", ref)
    corr = obj.get("correlation_id")
    if corr is not None and not isinstance(corr, str):
        raise FrameRejected("invalid_envelope", "correlation_id must be a string", ref)
    payload = obj.get("payload")
    if not isinstance(payload, dict) or classify(payload) is None:
        raise FrameRejected("invalid_payload", "payload must be a JSON-RPC 2.0 message", ref)
    if classify(payload) == "request" and len(to) != 1:
        raise FrameRejected("invalid_request", "a request must be addressed to exactly one participant", ref)
    obj["to"] = to
    return obj


def system_frame(
    kind: Kind, payload: dict[str, Any], *, to: tuple[str, ...] = (), corr: str | None = None
) -> str:
    env = new_envelope(sender=GATEWAY_ID, kind=kind, payload=payload, to=to, correlation_id=corr)
    return json.dumps(envelope_to_dict(env), separators=(",", ":"), ensure_ascii=False)


def error_frame(participant_id: str, rejected: FrameRejected) -> str:
    payload = {"event": "error", "error": rejected.error, "message": rejected.message, **rejected.extra}
    return system_frame("system", payload, to=(participant_id,), corr=rejected.correlation_id)


@dataclass(slots=True)
class Member:
    participant_id: str
    name: str | None = None
    presence: str = "each"
    """How it hears presence: `each`, `batched` or `none` (see `_presence.py`)."""

    def info(self) -> dict[str, Any]:
        return participant_entry(self.participant_id, self.name)


class History:
    """Recent broadcast envelopes of one topic, oldest first. Addressed traffic never goes in."""

    def __init__(self, limit: int) -> None:
        self._items: deque[tuple[dict[str, Any], str | None]] = deque(maxlen=max(limit, 0) or None)
        self.enabled = limit > 0
        self._text: str | None = None
        """`text()` until the next `add`: every welcome of a storm shares it."""

    def add(self, envelope: dict[str, Any], text: str | None = None) -> None:
        """Keep `envelope` (`text`: its JSON, when the caller has it)."""
        if self.enabled and not envelope.get("to"):
            self._items.append((envelope, text))
            self._text = None

    def items(self) -> list[dict[str, Any]]:
        return [envelope for envelope, _ in self._items]

    def text(self) -> str:
        """The envelopes as one JSON array; each one is encoded once, the array once per change."""
        if self._text is None:
            items = self._items
            for index, (envelope, text) in enumerate(items):
                if text is None:
                    items[index] = (envelope, json.dumps(envelope, separators=(",", ":"), ensure_ascii=False))
            self._text = f"[{','.join(text for _, text in items if text is not None)}]"
        return self._text

    def page(self, limit: int, before: str | None) -> list[dict[str, Any]]:
        """Most recent first; `before` is an envelope id or a timestamp."""
        items = list(reversed(self.items()))
        if before:
            for index, item in enumerate(items):
                if item.get("id") == before:
                    items = items[index + 1 :]
                    break
            else:
                items = [i for i in items if isinstance(i.get("ts"), str) and i["ts"] < before]
        return items[: max(limit, 0)]
