"""Small JSON-RPC helpers shared by the topic client, the participant side and the bridge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter

RpcKind = Literal["request", "notification", "response"]
IdKey = tuple[str, int | str]

CONNECTION_CLOSED = -32000
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603

NOT_DELIVERED: dict[str, Any] = {"mcpx": "not_delivered"}
"""The `error.data` of the error that answers one of our requests whose frame never reached its
peer: the gateway refused it (an unknown recipient, the gateways cut off from each other, a frame
too large) or it never left our outbox."""


def not_delivered(exc: BaseException) -> bool:
    """Whether a request's error says its frame never reached the peer (see `NOT_DELIVERED`)."""
    data = getattr(getattr(exc, "error", None), "data", None)
    return isinstance(data, dict) and data.get("mcpx") == NOT_DELIVERED["mcpx"]


def id_key(value: Any) -> IdKey | None:
    """A dict key that keeps 42 and "42" apart; None for anything that is not a JSON-RPC id."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    return None


def same_id(a: Any, b: Any) -> bool:
    key = id_key(a)
    return key is not None and key == id_key(b)


def classify(payload: Mapping[str, Any]) -> RpcKind | None:
    """What a JSON-RPC 2.0 payload is, or None if it is none of the three."""
    if payload.get("jsonrpc") != "2.0":
        return None
    method = payload.get("method")
    if isinstance(method, str):
        if "id" not in payload:
            return "notification"
        return "request" if id_key(payload["id"]) is not None else None
    if ("result" in payload) != ("error" in payload) and "id" in payload:
        return "response"
    return None


def to_payload(message: JSONRPCMessage) -> dict[str, Any]:
    """The wire form of an SDK message, exactly as the SDK's stdio transport writes it."""
    return message.model_dump(by_alias=True, exclude_unset=True, mode="json")


def to_session_message(payload: Mapping[str, Any]) -> SessionMessage:
    """Validate a wire payload into an SDK message (raises pydantic's ValidationError)."""
    return SessionMessage(jsonrpc_message_adapter.validate_python(payload, by_name=False))


def error_response(request_id: int | str, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
