"""mcpx_router: the tools of many MCP peers, offered to a model as one flat list of OpenAI functions."""

from ._adapter import DEFAULT_CALL_TIMEOUT, OpenAIPeerToolAdapter
from ._catalogue import PublishedTool
from ._dispatch import Outcome
from ._errors import (
    AdapterClosedError,
    DuplicatePeerError,
    InvalidPeerIdError,
    PeerError,
    PeerUnavailableError,
    RouterError,
    ToolCallFormatError,
    ToolConversionError,
    ToolError,
    ToolTimeoutError,
    UnknownPeerError,
    UnknownToolError,
)
from ._naming import NameTable, ToolKey, is_legal_name
from ._results import render_result
from ._schema import convert_parameters
from ._session import ToolSession

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "AdapterClosedError",
    "DuplicatePeerError",
    "InvalidPeerIdError",
    "NameTable",
    "OpenAIPeerToolAdapter",
    "Outcome",
    "PeerError",
    "PeerUnavailableError",
    "PublishedTool",
    "RouterError",
    "ToolCallFormatError",
    "ToolConversionError",
    "ToolError",
    "ToolKey",
    "ToolSession",
    "ToolTimeoutError",
    "UnknownPeerError",
    "UnknownToolError",
    "convert_parameters",
    "is_legal_name",
    "render_result",
]
