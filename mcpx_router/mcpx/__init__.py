"""MCPx v0: many MCP participants in one topic behind a realtime gateway.

Client side: `TopicClient` (one WebSocket per topic, presence, `participant_transport(id)` for
`mcp.Client`), `serve_participant` (answer requests addressed to us with an MCP server).
Gateway: `Gateway`, `run_gateway` (in-process, yields the base URL), `gateway_main`.
Bridge: `bridge_stdio_server`, `run_bridge`, `bridge_main` (make any stdio MCP server a participant).
"""

import importlib
from typing import TYPE_CHECKING

from ._errors import (
    BridgeError,
    EnvelopeError,
    MCPxAuthError,
    MCPxClosedError,
    MCPxClusterError,
    MCPxConnectionError,
    MCPxError,
)

if TYPE_CHECKING:
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
    from .bridge._bridge import StdioBridge, bridge_stdio_server
    from .bridge._bridge_cli import bridge_cli, bridge_main, run_bridge
    from .client._auth import TokenProvider, dev_token_provider, static_token, token_endpoint, websocket_url
    from .client._channel import ParticipantTransport
    from .client._participant import ParticipantServer, serve_participant
    from .client._topic import (
        ConnectionEvent,
        ConnectionState,
        GatewayErrorEvent,
        PresenceEvent,
        TopicClient,
        TopicEvent,
    )
    from .gateway._gateway import Gateway
    from .gateway._gateway_state import GatewayConfig, TokenGrant, TokenVerifier
    from .gateway._serve import gateway_cli, gateway_main, run_gateway, serve_gateway
    from .gateway._tokens import JWTIssuer, JWTVerifier

_LAZY = {
    **dict.fromkeys(
        ("TokenProvider", "dev_token_provider", "static_token", "token_endpoint", "websocket_url"),
        ".client._auth",
    ),
    **dict.fromkeys(("StdioBridge", "bridge_stdio_server"), ".bridge._bridge"),
    **dict.fromkeys(("bridge_cli", "bridge_main", "run_bridge"), ".bridge._bridge_cli"),
    "ParticipantTransport": ".client._channel",
    **dict.fromkeys(
        (
            "GATEWAY_ID",
            "PROTOCOL",
            "Envelope",
            "ErrorFrame",
            "ParticipantInfo",
            "Presence",
            "SystemErrorInfo",
            "Welcome",
            "encode_envelope",
            "envelope_to_dict",
            "new_envelope",
            "parse_frame",
            "parse_presence",
            "parse_system_error",
            "parse_welcome",
        ),
        "._envelope",
    ),
    "Gateway": ".gateway._gateway",
    **dict.fromkeys(("GatewayConfig", "TokenGrant", "TokenVerifier"), ".gateway._gateway_state"),
    **dict.fromkeys(("ParticipantServer", "serve_participant"), ".client._participant"),
    **dict.fromkeys(("gateway_cli", "gateway_main", "run_gateway", "serve_gateway"), ".gateway._serve"),
    **dict.fromkeys(
        (
            "ConnectionEvent",
            "ConnectionState",
            "GatewayErrorEvent",
            "PresenceEvent",
            "TopicClient",
            "TopicEvent",
        ),
        ".client._topic",
    ),
    **dict.fromkeys(("JWTIssuer", "JWTVerifier"), ".gateway._tokens"),
}
"""Where each public name lives. Each module loads on first use (see `__getattr__`): a Router that
joins no topic never imports the topic client, and a topic client never imports an ASGI server
(the gateway side loads Starlette and Hypercorn), nor PyJWT unless signed tokens are used."""


def __getattr__(name: str) -> object:
    """Import the module of a public name on first use."""
    module = _LAZY.get(name)
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
    "MCPxClusterError",
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
