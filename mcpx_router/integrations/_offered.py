"""What the framework integrations share: the tools offered now, and the media of an answer (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import mcp_types as mt

if TYPE_CHECKING:
    from .. import OpenAIPeerToolAdapter, Outcome, Router
    from ..codemode import CodeMode

__all__ = ["OfferedTool", "media_blocks", "offered_tools"]


class OfferedTool(NamedTuple):
    """One tool as the model is offered it: exactly the Chat Completions function of the same name."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


def offered_tools(
    source: OpenAIPeerToolAdapter | Router | CodeMode, relevant_to: str | Iterable[Any] | None
) -> tuple[tuple[Any, ...], list[OfferedTool]]:
    """The source's tool list now (`get_openai_tools`), and each tool's parts.

    The first item is the list itself: the adapter returns the same tuple until its catalogue
    changes (or a different choice is made within `max_tools`), so a caller can keep what it built
    from it for as long as the same tuple comes back.
    """
    view = source.get_openai_tools(relevant_to=relevant_to)
    tools = []
    for entry in view:
        function = entry["function"]
        tools.append(
            OfferedTool(
                function["name"],
                function.get("description") or "",
                dict(function.get("parameters") or {}),
                bool(function.get("strict")),
            )
        )
    return view, tools


def media_blocks(outcome: Outcome, kinds: tuple[type[mt.ImageContent | mt.AudioContent], ...]) -> list[Any]:
    """The images (or audio) of a successful call's result, to hand on beside its text.

    The text (`outcome.text`) already names each of them (`[image: image/png, 2.0 KB]`); a
    framework that has a media type for them gets the blocks themselves too.
    """
    if outcome.is_error or outcome.result is None:
        return []
    return [block for block in outcome.result.content if isinstance(block, kinds)]
