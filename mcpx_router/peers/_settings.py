"""How a Router keeps its peers: reconnect policy, handshake timeout, debounce and health probes."""

from __future__ import annotations

from dataclasses import dataclass

from .._backoff import Reconnect
from .._errors import UsageError
from ._callbacks import PeerCallbacks, check_callbacks

__all__ = ["Settings", "checked_settings"]


@dataclass(frozen=True, slots=True)
class Settings:
    reconnect: Reconnect
    connect_timeout: float
    refresh_debounce: float
    health_interval: float | None
    health_timeout: float = 10.0
    callbacks: PeerCallbacks | None = None
    """The Router's callbacks, under each peer's own (`merge_callbacks`)."""
    resource_tools: bool = False
    """Offer each peer's resources and prompts to the model as tools too."""

    def __post_init__(self) -> None:
        check_callbacks(self.callbacks, "callbacks")
        if not isinstance(self.resource_tools, bool):
            raise UsageError(f"resource_tools must be True or False, not {self.resource_tools!r}")


def checked_settings(
    *,
    reconnect: Reconnect | None,
    connect_timeout: float,
    refresh_debounce: float,
    health_interval: float | None,
    health_timeout: float,
    callbacks: PeerCallbacks | None = None,
    resource_tools: bool = False,
) -> Settings:
    """The Router's settings from its arguments; ValueError names the first one out of range."""
    if not connect_timeout > 0:
        raise ValueError(f"connect_timeout must be a positive number of seconds, not {connect_timeout!r}")
    if not refresh_debounce >= 0:
        raise ValueError(f"refresh_debounce must be >= 0 seconds, not {refresh_debounce!r}")
    if health_interval is not None and not health_interval > 0:
        raise ValueError(f"health_interval must be positive or None, not {health_interval!r}")
    if not health_timeout > 0:
        raise ValueError(f"health_timeout must be a positive number of seconds, not {health_timeout!r}")
    return Settings(
        reconnect=reconnect if reconnect is not None else Reconnect(),
        connect_timeout=connect_timeout,
        refresh_debounce=refresh_debounce,
        health_interval=health_interval,
        health_timeout=health_timeout,
        callbacks=callbacks,
        resource_tools=resource_tools,
    )
