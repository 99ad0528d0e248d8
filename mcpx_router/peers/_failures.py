"""How a Router peer's failures are told: a join that failed, a lost connection, a cancelled exit."""

from __future__ import annotations

import anyio

from .._errors import PeerUnavailableError, redact
from ._specs import HttpPeer, PeerSpec, SsePeer, StdioPeer

__all__ = ["cancelled_with_errors", "describe_failure", "join_error"]


def cancelled_with_errors(group: BaseExceptionGroup[BaseException]) -> bool:
    """Whether `group` holds a cancellation and other errors too (a transport failing as we leave)."""
    cancelled, rest = group.split(anyio.get_cancelled_exc_class())
    return cancelled is not None and rest is not None


def describe_failure(exc: BaseException | None) -> str:
    """`Type: message` of an error (of the one error of a group), or that the connection closed;
    never a secret (it becomes a peer's `last_error`, shown in its status and events)."""
    if exc is None:
        return "the connection closed"
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return describe_failure(exc.exceptions[0])
    text = redact(str(exc)).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def join_error(peer: str, spec: PeerSpec, exc: Exception) -> PeerUnavailableError:
    """The error a failed first connection raises to the joiner, with a hint for its transport."""
    if isinstance(exc, PeerUnavailableError):
        return exc
    where = spec.describe()
    hint = ""
    if isinstance(spec, StdioPeer):
        hint = "; check that the command exists and starts an MCP server on stdio"
    elif isinstance(spec, HttpPeer | SsePeer):
        hint = "; check that the server is running and the URL is its MCP endpoint"
    return PeerUnavailableError(
        f"could not connect to peer {peer!r} ({where}): {describe_failure(exc)}{hint}", peer=peer
    )
