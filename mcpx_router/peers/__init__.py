"""How to reach a peer: specs for stdio, streamable HTTP, in-process servers and open sessions,
and `mcpServers` config files."""

from ._config import load_config, parse_config
from ._specs import (
    DEFAULT,
    HttpPeer,
    InProcessPeer,
    ParticipantPeer,
    ParticipantSource,
    PeerSpec,
    SessionPeer,
    StdioPeer,
    as_peer_spec,
)

__all__ = [
    "DEFAULT",
    "HttpPeer",
    "InProcessPeer",
    "ParticipantPeer",
    "ParticipantSource",
    "PeerSpec",
    "SessionPeer",
    "StdioPeer",
    "as_peer_spec",
    "load_config",
    "parse_config",
]
