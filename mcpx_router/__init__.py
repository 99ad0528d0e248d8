"""mcpx_router: the tools of many MCP peers, offered to a model as one flat list of OpenAI functions."""

import importlib

from ._adapter import DEFAULT_CALL_TIMEOUT, OpenAIPeerToolAdapter
from ._backoff import Reconnect
from ._catalogue import PublishedTool
from ._dispatch import Outcome
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
from ._session import ToolSession
from .groups._choosing import MemberState
from .groups._grouping import GroupOptions
from .groups._groups import GroupInfo
from .groups._reputation import LastFailure, PeerStats, StatsReport, ToolStats
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
from .peers._events import (
    CallFinished,
    CallProgress,
    ContentChanged,
    EventStream,
    GroupChanged,
    GroupFailover,
    HealthChanged,
    PeerJoined,
    PeerLeft,
    RouterEvent,
    ToolsChanged,
)
from .peers._router import PeerStatus, Router
from .peers._sampling import OpenAISampler
from .peers._topic_peers import TopicMembership
from .peers.content._content import RouterPrompt, RouterResource, RouterResourceTemplate
from .relevance._embedding import Embedder, OpenAIEmbedder
from .relevance._local import LocalEmbedder
from .relevance._rerank import LocalReranker, Reranker
from .relevance._tool_search import ToolSearch

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "AdapterClosedError",
    "BearerAuth",
    "CallFinished",
    "CallProgress",
    "ConfigError",
    "ContentChanged",
    "ContentError",
    "DuplicatePeerError",
    "Embedder",
    "EmbeddingError",
    "EventStream",
    "FileTokenStore",
    "GroupChanged",
    "GroupFailover",
    "GroupInfo",
    "GroupOptions",
    "GroupSuggestion",
    "HealthChanged",
    "HttpPeer",
    "InProcessPeer",
    "InvalidPeerIdError",
    "LastFailure",
    "LocalEmbedder",
    "LocalReranker",
    "MemberState",
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
    "PeerStats",
    "PeerStatus",
    "PeerUnavailableError",
    "PublishedTool",
    "Reconnect",
    "Reranker",
    "Router",
    "RouterError",
    "RouterEvent",
    "RouterPrompt",
    "RouterResource",
    "RouterResourceTemplate",
    "SessionPeer",
    "SsePeer",
    "StatsReport",
    "StdioPeer",
    "ToolCallFormatError",
    "ToolConversionError",
    "ToolError",
    "ToolKey",
    "ToolSearch",
    "ToolSession",
    "ToolStats",
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

_SUBMODULES = frozenset({"cli", "codemode", "inspector", "integrations", "loop", "sync", "testing"})
"""Public modules not loaded with the package (each brings what it needs: `openai`, a thread...)."""


def __getattr__(name: str) -> object:
    # `mcpx_router.sync.Router`, `mcpx_router.loop.run_chat`: reachable as the docs write them.
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
