"""How to reach a peer: specs for stdio, streamable HTTP, SSE, in-process servers and open sessions,
credentials for HTTP peers (a bearer token, OAuth), and `mcpServers` config files.

The package also holds the Router side (private modules, exported from `mcpx_router`): the
Router itself (`_router`), one task per peer (`_member`), the session that outlives reconnects
(`_link`), events (`_events`) and MCPx topic membership (`_topic_peers`).
"""

from ._specs import (
    DEFAULT,
    HttpPeer,
    InProcessPeer,
    ParticipantPeer,
    ParticipantSource,
    PeerSpec,
    SessionPeer,
    SsePeer,
    StdioPeer,
    as_peer_spec,
)
from .auth._auth import BearerAuth, FileTokenStore, MemoryTokenStore, oauth_provider
from .config._config import load_config, parse_config

__all__ = [
    "DEFAULT",
    "BearerAuth",
    "FileTokenStore",
    "HttpPeer",
    "InProcessPeer",
    "MemoryTokenStore",
    "ParticipantPeer",
    "ParticipantSource",
    "PeerSpec",
    "SessionPeer",
    "SsePeer",
    "StdioPeer",
    "as_peer_spec",
    "load_config",
    "oauth_provider",
    "parse_config",
]
