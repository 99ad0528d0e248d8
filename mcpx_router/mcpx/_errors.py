"""Errors of the MCPx subpackage, all below the package's `RouterError`.

RouterError
└── MCPxError
    ├── EnvelopeError             (also ValueError)   a frame is not a usable envelope
    ├── MCPxConnectionError       (also ConnectionError) connecting failed or the link is down
    │   ├── MCPxAuthError         (also PermissionError) the gateway refused our credentials
    │   └── WebSocketClosed       the WebSocket was closed (code and reason of the close frame)
    ├── MCPxClosedError           a topic client or session was used outside its `async with`
    ├── MCPxClusterError          the gateway's NATS mode cannot run (trio, no nats-py, no NATS)
    └── BridgeError               the bridged stdio server could not be started or died
"""

from __future__ import annotations

from .._errors import RouterError


class MCPxError(RouterError):
    """Base class of every MCPx error."""


class EnvelopeError(MCPxError, ValueError):
    """A frame is not JSON, not an object, or misses what an envelope needs."""


class MCPxConnectionError(MCPxError, ConnectionError):
    """The gateway could not be reached, refused the upgrade, or the connection is down."""


class MCPxAuthError(MCPxConnectionError, PermissionError):
    """The gateway rejected the token (close code 1008, HTTP 401/403)."""


class WebSocketClosed(MCPxConnectionError):
    """The WebSocket is closed; `code` and `reason` are the peer's close frame (1006: no frame)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"websocket closed ({code}){': ' + reason if reason else ''}")
        self.code = code
        self.reason = reason


class MCPxClosedError(MCPxError):
    """The object was used before its `async with` block began or after it ended."""


class MCPxClusterError(MCPxError):
    """The gateway's NATS mode cannot run: on trio, without nats-py, or with NATS unreachable."""


class BridgeError(MCPxError):
    """The bridged stdio MCP server could not be started or exited."""
