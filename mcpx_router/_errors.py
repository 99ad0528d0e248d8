"""The one error tree of mcpx_router.

Errors raised to the host are programmer or set-up errors. Mistakes of the model and failures
of a peer during `dispatch` never raise: they become error answers the model can read.

    RouterError
    ├── PeerError                 .peer
    │   ├── ConfigError           (also ValueError)
    │   ├── InvalidPeerIdError    (also ValueError)
    │   ├── DuplicatePeerError    (also ValueError)
    │   ├── UnknownPeerError      (also LookupError)
    │   ├── PeerUnavailableError
    │   └── ContentError          (a peer refused to read a resource or get a prompt)
    ├── ToolError                 .peer, .tool
    │   └── ToolConversionError   (also ValueError)
    ├── UnknownToolError          .name (also LookupError)
    ├── ToolCallFormatError       (also TypeError)
    ├── UsageError                (also ValueError and TypeError)
    ├── AdapterClosedError
    ├── UnknownContentError       .name (also LookupError)
    ├── EmbeddingError            (an embedder failed or returned unusable vectors)
    └── MCPxError                 (in mcpx_router.mcpx)
        ├── EnvelopeError         (also ValueError)
        ├── MCPxConnectionError   (also ConnectionError)
        │   └── MCPxAuthError     (also PermissionError)
        ├── MCPxClosedError
        └── BridgeError
"""

from __future__ import annotations


class RouterError(Exception):
    """Base class of every error mcpx_router raises."""


class PeerError(RouterError):
    """Something is wrong with a peer; `.peer` names it."""

    def __init__(self, message: str, *, peer: str) -> None:
        super().__init__(message)
        self.peer = peer


class ConfigError(PeerError, ValueError):
    """A peer config (an `mcpServers` file or mapping) is unusable; `.peer` names the entry, if one."""


class InvalidPeerIdError(PeerError, ValueError):
    """A peer id is empty or not a string."""


class DuplicatePeerError(PeerError, ValueError):
    """A peer with this id is already registered."""


class UnknownPeerError(PeerError, LookupError):
    """No peer with this id is registered."""


class PeerUnavailableError(PeerError):
    """The peer's session failed while listing its tools or answering a call."""


class ContentError(PeerError):
    """A peer answered a resource read or a prompt request with an error; the message keeps its words."""


class ToolError(RouterError):
    """Something is wrong with one tool of one peer; `.peer` and `.tool` name it."""

    def __init__(self, message: str, *, peer: str, tool: str) -> None:
        super().__init__(message)
        self.peer = peer
        self.tool = tool


class ToolConversionError(ToolError, ValueError):
    """A peer's tool definition cannot be converted to an OpenAI tool."""


class UnknownToolError(RouterError, LookupError):
    """No tool is published under this public name."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class ToolCallFormatError(RouterError, TypeError):
    """The host passed something that is not a tool call in any known shape."""


class UsageError(RouterError, ValueError, TypeError):
    """An option or argument given to mcpx_router has the wrong type or value."""


class AdapterClosedError(RouterError):
    """The adapter was used after its `async with` block ended."""


class UnknownContentError(RouterError, LookupError):
    """No resource or prompt is published under this public name."""

    def __init__(self, message: str, *, name: str) -> None:
        super().__init__(message)
        self.name = name


class EmbeddingError(RouterError):
    """An embedder failed, or returned something other than one finite vector per text."""
