"""mcpx_router: the tools of many MCP peers, offered to a model as one flat list of OpenAI functions."""

from ._adapter import DEFAULT_CALL_TIMEOUT, OpenAIPeerToolAdapter
from ._backoff import Reconnect
from ._catalogue import PublishedTool
from ._dispatch import Outcome
from ._embedding import Embedder, OpenAIEmbedder
from ._errors import (
    AdapterClosedError,
    ConfigError,
    ContentError,
    DuplicatePeerError,
    EmbeddingError,
    InvalidPeerIdError,
    PeerError,
    PeerUnavailableError,
    RouterError,
    ToolCallFormatError,
    ToolConversionError,
    ToolError,
    UnknownContentError,
    UnknownPeerError,
    UnknownToolError,
    UsageError,
)
from ._naming import NameTable, ToolKey, is_legal_name
from ._sampling import OpenAISampler
from ._session import ToolSession
from ._tool_search import ToolSearch
from .model._results import render_result
from .model._schema import convert_parameters
from .model._similar import GroupSuggestion, as_aliases, suggest_groups
from .peers import (
    BearerAuth,
    FileTokenStore,
    HttpPeer,
    InProcessPeer,
    MemoryTokenStore,
    ParticipantPeer,
    PeerSpec,
    SessionPeer,
    SsePeer,
    StdioPeer,
    load_config,
    oauth_provider,
)
from .peers._callbacks import PeerCallbacks
from .peers._content import RouterPrompt, RouterResource, RouterResourceTemplate
from .peers._events import (
    CallProgress,
    ContentChanged,
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
    "BearerAuth",
    "CallProgress",
    "ConfigError",
    "ContentChanged",
    "ContentError",
    "DuplicatePeerError",
    "Embedder",
    "EmbeddingError",
    "EventStream",
    "FileTokenStore",
    "GroupSuggestion",
    "HealthChanged",
    "HttpPeer",
    "InProcessPeer",
    "InvalidPeerIdError",
    "MemoryTokenStore",
    "NameTable",
    "OpenAIEmbedder",
    "OpenAIPeerToolAdapter",
    "OpenAISampler",
    "Outcome",
    "ParticipantPeer",
    "PeerCallbacks",
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
    "RouterPrompt",
    "RouterResource",
    "RouterResourceTemplate",
    "SessionPeer",
    "SsePeer",
    "StdioPeer",
    "ToolCallFormatError",
    "ToolConversionError",
    "ToolError",
    "ToolKey",
    "ToolSearch",
    "ToolSession",
    "ToolsChanged",
    "TopicMembership",
    "UnknownContentError",
    "UnknownPeerError",
    "UnknownToolError",
    "UsageError",
    "as_aliases",
    "convert_parameters",
    "is_legal_name",
    "load_config",
    "oauth_provider",
    "render_result",
    "suggest_groups",
]
