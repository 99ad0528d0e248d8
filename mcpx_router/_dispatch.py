"""What a tool call needs besides the peer: the model's arguments prepared, outcomes and error texts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as mt

from ._arguments import (
    ArgumentsError,
    drop_optional_nulls,
    list_problems,
    parse_arguments,
    repair_arguments,
)
from ._catalogue import PublishedTool
from ._jsonstring import decode_stringified
from ._strict import strip_added_nulls

__all__ = ["Outcome", "describe", "error", "prepare_arguments"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one tool call."""

    text: str
    """What the model reads; starts with "Error:" when `is_error`."""
    is_error: bool
    tool: PublishedTool | None = None
    """The tool that was called, when the name resolved."""
    result: mt.CallToolResult | None = None
    """The peer's own result, when it answered."""


def error(message: str, tool: PublishedTool | None = None) -> Outcome:
    return Outcome(f"Error: {message}", True, tool)


def prepare_arguments(tool: PublishedTool, raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The model's raw arguments as the peer expects them, or ArgumentsError for the model.

    Parse (an empty string means {}), drop the nulls strict mode made the model send, decode
    JSON-string parameters, then check against the peer's original schema. If that finds problems,
    repair what the model evidently meant (a `null` for an optional parameter it meant to leave
    out, a JSON string where an object or array belongs) and check again; anything still wrong is
    listed, with paths.
    """
    args = parse_arguments(raw)
    if tool.strict_outcome is not None:
        args = strip_added_nulls(args, tool.strict_outcome)
    if tool.string_plan is not None:
        args = decode_stringified(args, tool.string_plan)
    validator = tool.validator()
    problems = validator.errors(args)
    if problems or not validator.enabled:
        args = repair_arguments(drop_optional_nulls(args, tool.input_schema), tool.input_schema)
        if problems:
            problems = validator.errors(args)
    if problems:
        raise ArgumentsError(list_problems("The arguments do not match the tool's schema:", problems))
    return args


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
