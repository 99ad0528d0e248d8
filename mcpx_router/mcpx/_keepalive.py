"""Keepalive: WebSocket pings on an interval, so that a connection that died quietly is noticed.

A peer that vanishes without closing (a host switched off, a NAT that forgot the flow, a proxy
that stopped forwarding) leaves a half-open TCP connection that looks alive for ever. Both ends
ping: the topic client here, the gateway through its server (`GatewayConfig.ping_interval`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

import anyio

if TYPE_CHECKING:
    from ._ws import WebSocket

__all__ = ["DEFAULT_PING_INTERVAL", "DEFAULT_PING_TIMEOUT", "Keepalive", "keepalive_settings", "watch"]

DEFAULT_PING_INTERVAL: Final = 20.0
DEFAULT_PING_TIMEOUT: Final = 20.0


class Keepalive(NamedTuple):
    interval: float
    timeout: float


def keepalive_settings(interval: float | None, timeout: float) -> Keepalive | None:
    """Check the two settings; None when pinging is off (`interval` None)."""
    if interval is None:
        return None
    if not interval > 0 or not timeout > 0:
        raise ValueError(
            f"ping_interval and ping_timeout must be positive seconds (ping_interval None: no pings); "
            f"not {interval!r} and {timeout!r}"
        )
    return Keepalive(float(interval), float(timeout))


async def watch(ws: WebSocket, keepalive: Keepalive, scope: anyio.CancelScope) -> None:
    """Ping `ws`; cancel `scope` (the connection's task group) once the peer stops answering."""
    await ws.keepalive(keepalive.interval, keepalive.timeout)
    scope.cancel()
