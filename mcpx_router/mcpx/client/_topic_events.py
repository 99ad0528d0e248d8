"""What a topic client reports to its subscribers: presence, connection state, gateway errors."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._envelope import ParticipantInfo


class ConnectionState(enum.Enum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    LOST = "lost"
    """The connection ended; a client with a reconnect policy is trying again."""
    CLOSED = "closed"
    """For good: the client was closed, or it gave up reconnecting."""


@dataclass(frozen=True, slots=True)
class PresenceEvent:
    """`join` (with `rejoined=True` when a known id connected again) or `leave`."""

    event: str
    participant: ParticipantInfo
    rejoined: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionEvent:
    state: ConnectionState
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class GatewayErrorEvent:
    error: str
    message: str | None = None
    details: Any = None
    correlation_id: str | None = None


TopicEvent: TypeAlias = PresenceEvent | ConnectionEvent | GatewayErrorEvent
