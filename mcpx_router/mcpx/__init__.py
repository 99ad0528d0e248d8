"""MCPx v0: many MCP participants in one topic behind a realtime gateway.

Client side: `TopicClient` (one WebSocket per topic, presence, `participant_transport(id)` for
`mcp.Client`), `serve_participant` (answer requests addressed to us with an MCP server).
Gateway: `Gateway`, `run_gateway` (in-process, yields the base URL), `gateway_main`.
Bridge: `bridge_stdio_server`, `run_bridge`, `bridge_main` (make any stdio MCP server a participant).
"""

import importlib
from typing import TYPE_CHECKING

from ._auth import TokenProvider, dev_token_provider, static_token, token_endpoint, websocket_url
from ._bridge import StdioBridge, bridge_stdio_server
from ._bridge_cli import bridge_cli, bridge_main, run_bridge
from ._channel import ParticipantTransport
from ._envelope import (
    GATEWAY_ID,
    PROTOCOL,
    Envelope,
    ErrorFrame,
    ParticipantInfo,
    Presence,
    SystemErrorInfo,
    Welcome,
    encode_envelope,
    envelope_to_dict,
    new_envelope,
    parse_frame,
    parse_presence,
    parse_system_error,
    parse_welcome,
)
from ._errors import (
    BridgeError,
    EnvelopeError,
    MCPxAuthError,
    MCPxClosedError,
    MCPxConnectionError,
    MCPxError,
)
from ._gateway_state import GatewayConfig, TokenGrant, TokenVerifier
from ._participant import ParticipantServer, serve_participant
from ._topic import (
    ConnectionEvent,
    ConnectionState,
    GatewayErrorEvent,
    PresenceEvent,
    TopicClient,
    TopicEvent,
)

if TYPE_CHECKING:
    from ._gateway import Gateway
    from ._serve import gateway_cli, gateway_main, run_gateway, serve_gateway
    from ._tokens import JWTIssuer, JWTVerifier

_GATEWAY_SIDE = {
    "Gateway": "._gateway",
    "gateway_cli": "._serve",
    "gateway_main": "._serve",
    "run_gateway": "._serve",
    "serve_gateway": "._serve",
    "JWTIssuer": "._tokens",
    "JWTVerifier": "._tokens",
}
"""Names whose modules load Starlette, Hypercorn or PyJWT: imported when first used (see `__getattr__`)."""


def __getattr__(name: str) -> object:
    """The gateway side loads on first use, so that a topic client never imports an ASGI server."""
    module = _GATEWAY_SIDE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "GATEWAY_ID",
    "PROTOCOL",
    "BridgeError",
    "ConnectionEvent",
    "ConnectionState",
    "Envelope",
    "EnvelopeError",
    "ErrorFrame",
    "Gateway",
    "GatewayConfig",
    "GatewayErrorEvent",
    "JWTIssuer",
    "JWTVerifier",
    "MCPxAuthError",
    "MCPxClosedError",
    "MCPxConnectionError",
    "MCPxError",
    "ParticipantInfo",
    "ParticipantServer",
    "ParticipantTransport",
    "Presence",
    "PresenceEvent",
    "StdioBridge",
    "SystemErrorInfo",
    "TokenGrant",
    "TokenProvider",
    "TokenVerifier",
    "TopicClient",
    "TopicEvent",
    "Welcome",
    "bridge_cli",
    "bridge_main",
    "bridge_stdio_server",
    "dev_token_provider",
    "encode_envelope",
    "envelope_to_dict",
    "gateway_cli",
    "gateway_main",
    "new_envelope",
    "parse_frame",
    "parse_presence",
    "parse_system_error",
    "parse_welcome",
    "run_bridge",
    "run_gateway",
    "serve_gateway",
    "serve_participant",
    "static_token",
    "token_endpoint",
    "websocket_url",
]
