"""Who speaks for a topic, and what the gateway says when it speaks: pure functions, no I/O.

Only the gateway speaks for a topic: a `presence` or `system` frame counts only when its `from`
is absent or starts with `system` (the draft's gateway id is `system:gateway`; our gateway
refuses participant ids starting with `system`). Anything else that claims to be presence, a
welcome or a system message came from a participant, through a gateway that forwards any kind,
and is dropped.

The welcome our gateway sends is a superset of the shapes clients wait for: the draft's
(`event`, `participant.id`, `participants`, `history`) plus `type`, `participant_id` and `topic`,
in the payload and at the top of the envelope (see docs/mcpx.md, "Wire format").
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._envelope import GATEWAY_ID, MCP_VERSION, PROTOCOL, Envelope, envelope_to_dict, new_envelope

_SLOT: Final = f"\x00{secrets.token_hex(16)}\x00"
"""Stands for a shared part of a welcome until it is put in; nobody can guess it into an id."""
_SLOTS: Final = (json.dumps(_SLOT + "participants"), json.dumps(_SLOT + "history"))


def speaks_for_gateway(env: Envelope) -> bool:
    """True if `env` comes from the gateway: `from` absent (read as `system:gateway`) or `system…`."""
    return env.sender.startswith("system")


def participant_entry(participant_id: str, name: str | None = None, kind: str = "agent") -> dict[str, Any]:
    """A participant as the gateway lists it in a welcome or a presence frame."""
    return {
        "id": participant_id,
        "name": name or participant_id,
        "kind": kind,
        "mcp": {"version": MCP_VERSION},
    }


def compact_entry(info: Mapping[str, Any], connection: str) -> dict[str, Any]:
    """`info` as batches and shared welcomes list it: its `connection` named, and what every entry
    of ours would say left out (`name` equal to the id, `kind` agent, `mcp.version` `MCP_VERSION`)."""
    entry = {"id": info.get("id"), "connection": connection}
    if info.get("name") not in (None, info.get("id")):
        entry["name"] = info["name"]
    if info.get("kind") not in (None, "agent"):
        entry["kind"] = info["kind"]
    if info.get("mcp") not in (None, {"version": MCP_VERSION}):
        entry["mcp"] = info["mcp"]
    return entry


def welcome_payload(
    participant_id: str, topic: str, participants: Sequence[dict[str, Any]], history: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The welcome's payload: the draft's fields and the ones other clients read."""
    return {
        "event": "welcome",
        "type": "welcome",
        "protocol": PROTOCOL,
        "topic": topic,
        "participant_id": participant_id,
        "participant": participant_entry(participant_id),
        "participants": list(participants),
        "history": list(history),
    }


def welcome_frame(
    participant_id: str, topic: str, participants: Sequence[dict[str, Any]], history: Sequence[dict[str, Any]]
) -> str:
    """The whole welcome envelope as sent: a `system` envelope from `system:gateway` to the newcomer,
    with `type`, `participant_id` and `topic` repeated at its top for clients that read them there."""
    payload = welcome_payload(participant_id, topic, participants, history)
    env = new_envelope(sender=GATEWAY_ID, kind="system", payload=payload, to=(participant_id,))
    frame = envelope_to_dict(env)
    frame.update(type="welcome", participant_id=participant_id, topic=topic)
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def shared_welcome_frame(
    participant_id: str, topic: str, participants: str, history: str, *, presence: str, version: int
) -> str:
    """`welcome_frame` with the participants and the history given as JSON text, put in as they
    are: a text shared by many welcomes is never encoded again. `presence` says how this
    participant hears presence from now on, `version` which presence batch the roster is as of."""
    payload = welcome_payload(participant_id, topic, [], [])
    del payload["participants"], payload["history"]  # put back after these, near the frame's start:
    payload.update(presence=presence, roster_version=version)
    payload.update(participants=_SLOT + "participants", history=_SLOT + "history")
    env = new_envelope(sender=GATEWAY_ID, kind="system", payload=payload, to=(participant_id,))
    frame = envelope_to_dict(env)
    frame.update(type="welcome", participant_id=participant_id, topic=topic)
    text = json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
    head, rest = text.split(_SLOTS[0], 1)
    middle, tail = rest.split(_SLOTS[1], 1)
    return "".join((head, participants, middle, history, tail))
