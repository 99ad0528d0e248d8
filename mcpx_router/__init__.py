"""mcpx_router: the tools of many MCP peers, offered to a model as one flat list of OpenAI functions."""

from ._adapter import DEFAULT_CALL_TIMEOUT, OpenAIPeerToolAdapter
from ._backoff import Reconnect
from ._catalogue import PublishedTool
from ._dispatch import Outcome
from ._errors import (
    AdapterClosedError,
    ConfigError,
    DuplicatePeerError,
    InvalidPeerIdError,
    PeerError,
    PeerUnavailableError,
    RouterError,
    ToolCallFormatError,
    ToolConversionError,
    ToolError,
    UnknownPeerError,
    UnknownToolError,
    UsageError,
)
from ._naming import NameTable, ToolKey, is_legal_name
from ._session import ToolSession
from .model._results import render_result
from .model._schema import convert_parameters
from .peers import (
    HttpPeer,
    InProcessPeer,
    ParticipantPeer,
    PeerSpec,
    SessionPeer,
    SsePeer,
    StdioPeer,
    load_config,
)
from .peers._events import (
    CallProgress,
    EventStream,
    HealthChanged,
    PeerJoined,
    PeerLeft,
    RouterEvent,
    ToolsChanged,
)
from .peers._router import PeerStatus, Router
from .peers._topic_peers import TopicMembership

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "AdapterClosedError",
    "CallProgress",
    "ConfigError",
    "DuplicatePeerError",
    "EventStream",
    "HealthChanged",
    "HttpPeer",
    "InProcessPeer",
    "InvalidPeerIdError",
    "NameTable",
    "OpenAIPeerToolAdapter",
    "Outcome",
    "ParticipantPeer",
    "PeerError",
    "PeerJoined",
    "PeerLeft",
    "PeerSpec",
    "PeerStatus",
    "PeerUnavailableError",
    "PublishedTool",
    "Reconnect",
    "Router",
    "RouterError",
    "RouterEvent",
    "SessionPeer",
    "SsePeer",
    "StdioPeer",
    "ToolCallFormatError",
    "ToolConversionError",
    "ToolError",
    "ToolKey",
    "ToolSession",
    "ToolsChanged",
    "TopicMembership",
    "UnknownPeerError",
    "UnknownToolError",
    "UsageError",
    "convert_parameters",
    "is_legal_name",
    "load_config",
    "render_result",
]
