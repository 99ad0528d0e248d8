"""A peer's resources and prompts offered to the model as tools (`Router(resource_tools=True)`).

`ContentTools` stands for a peer's session in the adapter: it lists the peer's own tools and,
on the last page, `read_resource` (when the peer has resources or templates) and `get_prompt`
(when it has prompts); calls of those two are answered from the peer's resources and prompts,
all others go to the peer. The adapter names them like any tool (`peer__read_resource`), so
their answers are rendered like any tool result.

A peer's own tool wins its name: when the peer has a tool named `read_resource`, the offered
one is the first of `mcp_read_resource`, `read_resource_2`, `read_resource_3`, ... that the
peer does not use (the same for `get_prompt`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import mcp
import mcp_types as mt
from mcp.shared.dispatcher import ProgressFnT

from ..._errors import PeerUnavailableError
from ..._session import NativeSession
from .._link import PeerLink, looks_like_connection_failure
from ._content import PeerListing

__all__ = ["ContentTools", "content_tool_names", "get_prompt_tool", "prompt_result", "read_resource_tool"]

READ, PROMPT = "read_resource", "get_prompt"

_ENUM_MAX = 100
"""At most this many URIs (or prompt names) are listed as an `enum`; more, and any string goes."""
_ENUM_CHARS = 7_500
"""Nor more characters than this in all of them together."""
_DESCRIPTION_MAX = 1_000
"""Characters of the list of resources or prompts in a tool's description."""


def _candidates(base: str) -> Iterator[str]:
    yield base
    yield f"mcp_{base}"
    for n in itertools.count(2):
        yield f"{base}_{n}"


def content_tool_names(taken: set[str]) -> tuple[str, str]:
    """The names `read_resource` and `get_prompt` take on a peer whose own tools are `taken`."""
    read = next(name for name in _candidates(READ) if name not in taken)
    prompt = next(name for name in _candidates(PROMPT) if name not in taken | {read})
    return read, prompt


def _listed(lines: list[str]) -> str:
    text, count = "", 0
    for line in lines:
        if len(text) + len(line) + 1 > _DESCRIPTION_MAX:
            return text + f"\n… and {len(lines) - count} more"
        text += "\n" + line
        count += 1
    return text


def _enum_fits(values: list[str]) -> bool:
    return 0 < len(values) <= _ENUM_MAX and sum(len(v) for v in values) <= _ENUM_CHARS


def read_resource_tool(peer: str, name: str, listing: PeerListing) -> mt.Tool:
    """The `read_resource` tool of a peer: its URIs as an enum when they are few and it has no templates."""
    uris = list(dict.fromkeys(r.uri for r in listing.resources))
    lines = [
        f"- {r.uri}: {r.name}" + (f" ({r.description})" if r.description else "") for r in listing.resources
    ]
    lines += [
        f"- {t.uri_template} (template: fill in the {{…}} parts)"
        + (f": {t.description}" if t.description else "")
        for t in listing.templates
    ]
    uri: dict[str, Any] = {"type": "string", "description": "The URI of the resource to read."}
    if not listing.templates and _enum_fits(uris):
        uri["enum"] = uris
    return mt.Tool(
        name=name,
        description=f"Read a resource of the MCP server {peer!r}. Its resources:{_listed(lines)}",
        input_schema={
            "type": "object",
            "properties": {"uri": uri},
            "required": ["uri"],
            "additionalProperties": False,
        },
    )


def _prompt_arguments(listing: PeerListing) -> dict[str, Any]:
    """The `arguments` parameter: every argument name the peer's prompts declare, as a string.

    Declared names keep the tool acceptable in strict mode; past `_ENUM_MAX` of them, or when a
    name is declared by no prompt, any string-valued object goes.
    """
    declared: dict[str, list[str]] = {}
    for prompt in listing.prompts:
        for argument in prompt.arguments or ():
            declared.setdefault(argument.name, []).append(prompt.name)
    described = "The prompt's arguments by name, as strings."
    if len(declared) > _ENUM_MAX:
        return {"type": "object", "additionalProperties": {"type": "string"}, "description": described}
    properties = {
        argument: {"type": "string", "description": "For " + ", ".join(prompts) + "."}
        for argument, prompts in declared.items()
    }
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "description": described,
    }


def get_prompt_tool(peer: str, name: str, listing: PeerListing) -> mt.Tool:
    """The `get_prompt` tool of a peer: the prompt's name (an enum when few) and its string arguments."""
    names = list(dict.fromkeys(p.name for p in listing.prompts))
    lines = []
    for prompt in listing.prompts:
        arguments = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or ())
        lines.append(
            f"- {prompt.name}({arguments})" + (f": {prompt.description}" if prompt.description else "")
        )
    prompt_name: dict[str, Any] = {"type": "string", "description": "The prompt's name."}
    if _enum_fits(names):
        prompt_name["enum"] = names
    return mt.Tool(
        name=name,
        description=f"Get a prompt of the MCP server {peer!r}, filled in. Its prompts (`?`: optional "
        f"argument):{_listed(lines)}",
        input_schema={
            "type": "object",
            "properties": {"name": prompt_name, "arguments": _prompt_arguments(listing)},
            "required": ["name"],
            "additionalProperties": False,
        },
    )


def prompt_result(result: mt.GetPromptResult) -> mt.CallToolResult:
    """A prompt's messages as one tool result: each message's role, then its content."""
    content: list[Any] = []
    if result.description:
        content.append(mt.TextContent(type="text", text=result.description))
    for message in result.messages:
        content.append(mt.TextContent(type="text", text=f"[{message.role}]"))
        content.append(message.content)
    return mt.CallToolResult(content=content)


def _error(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)


class ContentTools(NativeSession):
    """A peer's session as the adapter sees it: its tools, plus `read_resource` and `get_prompt`."""

    def __init__(self, link: PeerLink, listing: Callable[[], PeerListing]) -> None:
        self._link = link
        self._listing = listing
        self._seen: set[str] = set()
        self._offered: dict[str, str] = {}
        """Offered name -> READ or PROMPT, as of the last complete listing."""

    async def list_tools(self, *, cursor: str | None = None) -> mt.ListToolsResult:
        page = await self._link.list_tools(cursor=cursor)
        if cursor is None:
            self._seen = set()
        self._seen.update(tool.name for tool in page.tools)
        if page.next_cursor is not None:
            return page
        listing = self._listing()
        read, prompt = content_tool_names(self._seen)
        extra: list[mt.Tool] = []
        offered: dict[str, str] = {}
        if listing.resources or listing.templates:
            extra.append(read_resource_tool(self._link.peer, read, listing))
            offered[read] = READ
        if listing.prompts:
            extra.append(get_prompt_tool(self._link.peer, prompt, listing))
            offered[prompt] = PROMPT
        self._offered = offered
        return page.model_copy(update={"tools": [*page.tools, *extra]})

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> mt.CallToolResult:
        kind = self._offered.get(name)
        if kind is None:
            return await self._link.call_tool(name, arguments, read_timeout_seconds, progress_callback)
        with anyio.move_on_after(math.inf if read_timeout_seconds is None else read_timeout_seconds):
            return await self._answer(kind, arguments or {})
        raise mcp.MCPError(mt.REQUEST_TIMEOUT, f"Request ({name}) timed out")

    async def _answer(self, kind: str, arguments: dict[str, Any]) -> mt.CallToolResult:
        session = self._link.live("cannot read its resources" if kind == READ else "cannot get its prompts")
        if not isinstance(session, mcp.Client):
            return _error("this peer's session does not offer resources or prompts")
        try:
            if kind == READ:
                uri = arguments.get("uri")
                if not isinstance(uri, str):
                    return _error(f"'uri' must be a string, not {type(uri).__name__}")
                read = await session.read_resource(uri, cache_mode="bypass")
                return mt.CallToolResult(
                    content=[mt.EmbeddedResource(type="resource", resource=c) for c in read.contents]
                )
            prompt, values = arguments.get("name"), arguments.get("arguments") or {}
            if not isinstance(prompt, str):
                return _error(f"'name' must be a string, not {type(prompt).__name__}")
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                return _error("'arguments' must be an object of strings")
            return prompt_result(await session.get_prompt(prompt, values))
        except mcp.MCPError as exc:
            if looks_like_connection_failure(exc):
                self._link.current.suspect.set()
                raise PeerUnavailableError(
                    f"the connection to peer {self._link.peer!r} failed: {exc.message}", peer=self._link.peer
                ) from exc
            return _error(exc.message)
