"""What a peer may ask of us: the `mcp.Client` callbacks a Router hands to every session it opens.

A server may ask its client to sample the host's model (`sampling/createMessage`), to ask the
user (`elicitation/create`), for the client's roots (`roots/list`), and may send log messages.
On 2026-07-28 connections such questions come embedded in an `InputRequiredResult` and the
`mcp` SDK routes them through the same callbacks, retrying the call with the answers.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, get_args

import mcp_types as mt
from mcp.client.session import ElicitationFnT, ListRootsFnT, LoggingFnT, SamplingFnT

from .._errors import UsageError

__all__ = ["PeerCallbacks", "check_callbacks", "client_options", "merge_callbacks"]

_CALLBACKS = ("sampling", "elicitation", "list_roots", "logging")


@dataclass(frozen=True, kw_only=True)
class PeerCallbacks:
    """The callbacks the `mcp.Client` of a peer answers the server's own requests with.

    Each is the `mcp` SDK's callback, called as the SDK calls it (with a `ClientRequestContext`
    whose `session` is the peer's). A callback left None is not offered: the capability is not
    advertised, and a server that asks anyway gets the SDK's "not supported" error.

    Example:
        ```python
        callbacks = PeerCallbacks(sampling=OpenAISampler(AsyncOpenAI(), model="gpt-4.1-mini"))
        async with Router(callbacks=callbacks) as router: ...
        ```
    """

    sampling: SamplingFnT | None = None
    """Answers `sampling/createMessage` (e.g. `OpenAISampler`)."""
    sampling_capabilities: mt.SamplingCapability | None = None
    """Sampling sub-capabilities advertised with `sampling` (e.g. tools); no effect without it."""
    elicitation: ElicitationFnT | None = None
    """Answers `elicitation/create` (form and URL modes are advertised)."""
    list_roots: ListRootsFnT | None = None
    """Answers `roots/list`."""
    logging: LoggingFnT | None = None
    """Receives `notifications/message` log records."""
    log_level: mt.LoggingLevel | None = None
    """The level to ask for on 2026-07-28 connections, where a server sends log records only to
    requests that opt in (the SDK stamps it on every request); None: no records there."""

    def __post_init__(self) -> None:
        for name in _CALLBACKS:
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise UsageError(
                    f"PeerCallbacks({name}=...) must be an async callable or None, not {value!r}"
                )
        levels = get_args(mt.LoggingLevel)
        if self.log_level is not None and self.log_level not in levels:
            raise UsageError(f"log_level must be one of {', '.join(levels)} or None, not {self.log_level!r}")
        capabilities = self.sampling_capabilities
        if capabilities is not None and not isinstance(capabilities, mt.SamplingCapability):
            raise UsageError(
                f"sampling_capabilities must be an mcp_types.SamplingCapability, not {capabilities!r}"
            )


def check_callbacks(value: object, where: str) -> None:
    """Raise UsageError unless `value` is a `PeerCallbacks` or None; `where` names the option."""
    if value is not None and not isinstance(value, PeerCallbacks):
        raise UsageError(f"{where} must be a PeerCallbacks or None, not {type(value).__name__}")


def merge_callbacks(own: PeerCallbacks | None, default: PeerCallbacks | None) -> PeerCallbacks | None:
    """A peer's callbacks over the Router's: each field the peer sets wins, the others are the Router's."""
    if own is None or default is None:
        return own if own is not None else default
    values = {f.name: getattr(own, f.name) for f in fields(own)}
    for name, value in values.items():
        if value is None:
            values[name] = getattr(default, name)
    return PeerCallbacks(**values)


def client_options(callbacks: PeerCallbacks | None) -> dict[str, Any]:
    """The `mcp.Client` keyword arguments for `callbacks` (only those set)."""
    if callbacks is None:
        return {}
    options = {
        "sampling_callback": callbacks.sampling,
        "sampling_capabilities": callbacks.sampling_capabilities,
        "elicitation_callback": callbacks.elicitation,
        "list_roots_callback": callbacks.list_roots,
        "logging_callback": callbacks.logging,
        "log_level": callbacks.log_level,
    }
    return {key: value for key, value in options.items() if value is not None}
