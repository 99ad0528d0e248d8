"""MCPx v0 envelopes: strict when we build them, liberal when we read them.

Pure functions only. `new_envelope` + `encode_envelope` produce exactly what the draft asks for;
`parse_frame` accepts the variants real gateways send (see the module tests for the table).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ._errors import EnvelopeError

PROTOCOL: Final = "mcp-x/v0"
GATEWAY_ID: Final = "system:gateway"
MCP_VERSION: Final = "2025-06-18"
"""The MCP revision MCPx v0 negotiates by (its section 4.1); presence entries advertise it. Each
pair of participants still negotiates its own version in `initialize`."""
KINDS: Final = frozenset({"mcp", "presence", "system"})

Kind = Literal["mcp", "presence", "system"]
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Envelope:
    """One MCPx frame. `sender` is the wire field `from`; an empty `to` means broadcast."""

    id: str
    sender: str
    kind: str
    payload: Any
    to: tuple[str, ...] = ()
    correlation_id: str | None = None
    ts: str | None = None
    protocol: str = PROTOCOL

    @property
    def is_broadcast(self) -> bool:
        return not self.to

    def addressed_to(self, participant_id: str) -> bool:
        """True if the envelope is a broadcast or names `participant_id` among its recipients."""
        return not self.to or participant_id in self.to


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    """A non-envelope error frame such as `{"error": "...", "details": ...}`."""

    error: str
    details: Any = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParticipantInfo:
    id: str
    name: str | None = None
    kind: str | None = None
    mcp_version: str | None = None
    connection: str | None = None
    """Which connection of the participant (gateways that batch presence name it), if said."""


@dataclass(frozen=True, slots=True)
class Welcome:
    participant_id: str | None
    participants: tuple[ParticipantInfo, ...]
    history: tuple[Envelope, ...]


@dataclass(frozen=True, slots=True)
class Presence:
    event: str  # join | leave | heartbeat
    participant: ParticipantInfo


@dataclass(frozen=True, slots=True)
class SystemErrorInfo:
    """A gateway error carried in a `system` envelope (`{"event": "error", ...}`)."""

    error: str
    message: str | None
    details: Any


def rfc3339_now(now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_envelope(
    *,
    sender: str,
    kind: Kind,
    payload: Any,
    to: Iterable[str] = (),
    correlation_id: str | None = None,
    now: datetime | None = None,
) -> Envelope:
    """A fresh envelope with a UUID id and the current time; checked like everything we send."""
    env = Envelope(
        id=str(uuid.uuid4()),
        sender=sender,
        kind=kind,
        payload=payload,
        to=tuple(to),
        correlation_id=correlation_id,
        ts=rfc3339_now(now),
    )
    check_outgoing(env)
    return env


def check_outgoing(env: Envelope) -> None:
    """Raise `EnvelopeError` unless `env` is a conformant v0 envelope."""
    if env.protocol != PROTOCOL:
        raise EnvelopeError(f"protocol must be {PROTOCOL!r}, not {env.protocol!r}")
    if not env.id or not isinstance(env.id, str):
        raise EnvelopeError("envelope id must be a non-empty string")
    if not env.sender or not isinstance(env.sender, str):
        raise EnvelopeError("envelope `from` must be a non-empty string")
    if env.kind not in KINDS:
        raise EnvelopeError(f"envelope kind must be one of {sorted(KINDS)}, not {env.kind!r}")
    if any(not isinstance(r, str) or not r for r in env.to):
        raise EnvelopeError("envelope `to` must hold non-empty strings")
    if env.correlation_id is not None and (not isinstance(env.correlation_id, str) or not env.correlation_id):
        raise EnvelopeError("correlation_id must be a non-empty string when set")
    if env.kind == "mcp":
        if not isinstance(env.payload, dict) or env.payload.get("jsonrpc") != "2.0":
            raise EnvelopeError("an mcp payload must be a JSON-RPC 2.0 object")
        if "method" in env.payload and "id" in env.payload and len(env.to) != 1:
            raise EnvelopeError("a request must be addressed to exactly one participant")


def envelope_to_dict(env: Envelope) -> JsonObject:
    out: JsonObject = {"protocol": env.protocol, "id": env.id}
    if env.ts is not None:
        out["ts"] = env.ts
    out["from"] = env.sender
    out["to"] = list(env.to)
    out["kind"] = env.kind
    if env.correlation_id is not None:
        out["correlation_id"] = env.correlation_id
    out["payload"] = env.payload
    return out


def encode_envelope(env: Envelope) -> str:
    check_outgoing(env)
    return json.dumps(envelope_to_dict(env), ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------------
# Reading


def _event_name(obj: Mapping[str, Any]) -> str | None:
    for key in ("event", "type"):
        value = obj.get(key)
        if isinstance(value, str):
            return value.lower()
    return None


def _opt_str(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def parse_frame(data: str | bytes) -> Envelope | ErrorFrame:
    """Decode one WebSocket text frame. Raises `EnvelopeError` if nothing usable is in it."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EnvelopeError(f"frame is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise EnvelopeError(f"frame is a JSON {type(obj).__name__}, not an object")
    return parse_frame_object(obj)


def parse_frame_object(obj: Mapping[str, Any]) -> Envelope | ErrorFrame:
    if "kind" not in obj and "payload" not in obj:
        if "error" in obj and obj.get("from") is not None:
            # an error object that names its sender: a system frame, trusted only from the gateway
            payload = {"event": "error", **obj}
            return Envelope(
                id=_opt_str(obj.get("id")) or "", sender=_gateway_sender(obj), kind="system", payload=payload
            )
        if "error" in obj:
            error = obj["error"]
            text = error if isinstance(error, str) else json.dumps(error)
            return ErrorFrame(error=text, details=obj.get("details", obj.get("message")), raw=dict(obj))
        event = _event_name(obj)
        kind = (
            "system"
            if event == "welcome"
            else "presence"
            if event in ("join", "leave", "heartbeat")
            else None
        )
        if kind is not None:  # a bare welcome or presence object without an envelope around it
            sender = _gateway_sender(obj)
            return Envelope(id=_opt_str(obj.get("id")) or "", sender=sender, kind=kind, payload=dict(obj))
    return envelope_from_dict(obj)


def _gateway_sender(obj: Mapping[str, Any]) -> str:
    """The sender of a frame that may come from the gateway: an absent `from` is the gateway's;
    a present one is kept as it is (a participant's frame stays a participant's)."""
    sender = obj.get("from")
    if sender is None:
        return GATEWAY_ID
    if not isinstance(sender, str) or not sender:
        raise EnvelopeError(f"envelope `from` must be a non-empty string, not {sender!r}")
    return sender


def envelope_from_dict(obj: Mapping[str, Any]) -> Envelope:
    protocol = obj.get("protocol", PROTOCOL)
    if not isinstance(protocol, str) or not protocol.startswith(PROTOCOL):
        raise EnvelopeError(f"unsupported protocol {protocol!r}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind.lower() not in KINDS:
        raise EnvelopeError(f"unknown envelope kind {kind!r}")
    kind = kind.lower()
    env_id = _opt_str(obj.get("id"))
    sender = obj.get("from")
    if kind == "mcp":
        if env_id is None:
            raise EnvelopeError("an mcp envelope needs an id")
        if not isinstance(sender, str) or not sender:
            raise EnvelopeError("an mcp envelope needs a `from`")
    else:
        sender = _gateway_sender(obj)
    to = _parse_to(obj.get("to"))
    corr = obj.get("correlation_id", obj.get("correlationId"))
    correlation_id = _opt_str(corr)
    payload = obj.get("payload", {})
    if kind == "mcp" and not isinstance(payload, dict):
        raise EnvelopeError("an mcp payload must be a JSON object")
    ts = obj.get("ts")
    return Envelope(
        id=env_id or "",
        sender=sender,
        kind=kind,
        payload=payload,
        to=to,
        correlation_id=correlation_id,
        ts=ts if isinstance(ts, str) else None,
        protocol=protocol,
    )


def _parse_to(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item for item in value if item)
    raise EnvelopeError("envelope `to` must be a list of participant ids")


def parse_participant(value: Any) -> ParticipantInfo | None:
    """A participant given as an object (`id`, `participant_id`, `participantId`) or a bare id."""
    if isinstance(value, str):
        return ParticipantInfo(id=value) if value else None
    if not isinstance(value, Mapping):
        return None
    pid = (
        _opt_str(value.get("id"))
        or _opt_str(value.get("participant_id"))
        or _opt_str(value.get("participantId"))
    )
    if pid is None:
        return None
    mcp = value.get("mcp")
    version = mcp.get("version") if isinstance(mcp, Mapping) else value.get("mcp_version")
    name, kind, connection = value.get("name"), value.get("kind"), value.get("connection")
    if isinstance(connection, str):  # a batched entry leaves out what every entry says
        name, kind, version = value.get("name", pid), value.get("kind", "agent"), version or MCP_VERSION
    return ParticipantInfo(
        id=pid,
        name=name if isinstance(name, str) else None,
        kind=kind if isinstance(kind, str) else None,
        mcp_version=version if isinstance(version, str) else None,
        connection=connection if isinstance(connection, str) else None,
    )


def _payload_participant(payload: Mapping[str, Any]) -> ParticipantInfo | None:
    found = parse_participant(payload.get("participant"))
    if found is not None:
        return found
    for key in ("participant_id", "participantId"):
        pid = _opt_str(payload.get(key))
        if pid is not None:
            return ParticipantInfo(id=pid)
    return None


def parse_welcome(env: Envelope) -> Welcome | None:
    """The welcome in a `system` envelope, or None if this system frame is something else."""
    payload = env.payload
    if env.kind != "system" or not isinstance(payload, Mapping) or _event_name(payload) != "welcome":
        return None
    me = _payload_participant(payload)
    raw_list = payload.get("participants")
    participants: list[ParticipantInfo] = []
    if isinstance(raw_list, Sequence) and not isinstance(raw_list, str):
        for item in raw_list:
            info = parse_participant(item)
            if info is not None and (me is None or info.id != me.id):
                participants.append(info)
    return Welcome(
        participant_id=me.id if me else None,
        participants=tuple(participants),
        history=_parse_history(payload.get("history")),
    )


def _parse_history(value: Any) -> tuple[Envelope, ...]:
    if isinstance(value, Mapping):  # e.g. {"enabled": true, "limit": 100} or {"messages": [...]}
        value = value.get("messages", value.get("envelopes"))
    if not isinstance(value, list):
        return ()
    out: list[Envelope] = []
    for item in value:
        if isinstance(item, Mapping):
            try:
                out.append(envelope_from_dict(item))
            except EnvelopeError:
                continue
    return tuple(out)


def parse_presence(env: Envelope) -> Presence | None:
    payload = env.payload
    if env.kind != "presence" or not isinstance(payload, Mapping):
        return None
    event = _event_name(payload)
    if event not in ("join", "leave", "heartbeat"):
        return None
    who = _payload_participant(payload)
    return None if who is None else Presence(event=event, participant=who)


def parse_system_error(env: Envelope) -> SystemErrorInfo | None:
    payload = env.payload
    if env.kind != "system" or not isinstance(payload, Mapping) or _event_name(payload) != "error":
        return None
    error = payload.get("error", payload.get("code", "error"))
    message = payload.get("message")
    return SystemErrorInfo(
        error=error if isinstance(error, str) else json.dumps(error),
        message=message if isinstance(message, str) else None,
        details=payload.get("details"),
    )
