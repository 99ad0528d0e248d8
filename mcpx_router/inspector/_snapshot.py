"""What the inspector's JSON endpoints say: the peers and their state, the model's view, the
names, what a request would be offered; read from what the Router and adapter already expose.

Pure reads: nothing here changes the Router, and nothing runs unless a page asks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._adapter import OpenAIPeerToolAdapter
from .._catalogue import PublishedTool
from .._errors import UnknownToolError, UsageError
from ..groups._reputation import PeerStats
from ..peers._router import Router
from ..peers._specs import (
    HttpPeer,
    InProcessPeer,
    ParticipantPeer,
    PeerSpec,
    SessionPeer,
    SsePeer,
    StdioPeer,
)
from ..peers._topic_peers import TopicMembership
from ..relevance._tool_search import ToolSearch

if TYPE_CHECKING:
    from ..mcpx.client._topic import TopicClient

__all__ = [
    "CHARS_PER_TOKEN",
    "Target",
    "estimate_tokens",
    "model_view",
    "names",
    "overview",
    "selection",
    "tool_detail",
]

CHARS_PER_TOKEN = 4
"""The size estimate: one token per four characters of the compact JSON sent (OpenAI's rule of
thumb for English text; JSON schemas run a little denser, so take it as a floor)."""
FORMATS = ("chat", "responses", "functions")


@dataclass(slots=True)
class Target:
    """What an inspector looks at: a Router (peers, states, events) or a bare adapter."""

    adapter: OpenAIPeerToolAdapter
    router: Router | None = None
    topic: TopicMembership | None = None


def estimate_tokens(value: Any) -> tuple[int, int]:
    """(characters, estimated tokens) of `value` as compact JSON."""
    chars = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return chars, math.ceil(chars / CHARS_PER_TOKEN)


def transport(spec: PeerSpec | None) -> dict[str, str]:
    """How a peer is reached, in words a person reads."""
    if isinstance(spec, StdioPeer):
        return {"kind": "stdio", "detail": " ".join([spec.command, *spec.args])}
    if isinstance(spec, HttpPeer):
        return {"kind": "http", "detail": spec.url}
    if isinstance(spec, SsePeer):
        return {"kind": "sse", "detail": spec.url}
    if isinstance(spec, InProcessPeer):
        return {"kind": "in-process", "detail": type(spec.server).__name__}
    if isinstance(spec, ParticipantPeer):
        return {"kind": "mcpx", "detail": f"participant {spec.participant} of topic {spec.topic.topic}"}
    if isinstance(spec, SessionPeer):
        return {"kind": "session", "detail": type(spec.session).__name__}
    return {"kind": "session", "detail": "added to the adapter by the host"}


def _stats(stats: PeerStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    failure = stats.last_failure
    return {
        "calls": stats.calls,
        "errors": dict(stats.errors),
        "p50_ms": None if stats.p50 is None else round(stats.p50 * 1000, 2),
        "p95_ms": None if stats.p95 is None else round(stats.p95 * 1000, 2),
        "outstanding": stats.outstanding,
        "score": round(stats.score, 4),
        "healthy": stats.healthy,
        "consecutive_failures": stats.consecutive_failures,
        "last_failure": None
        if failure is None
        else {"kind": failure.kind, "message": failure.message, "at": failure.at},
    }


def _state(target: Target, peer: str) -> dict[str, Any]:
    if target.router is None or peer not in target.router.peers:
        return {"state": "connected", "attempts": 0, "last_error": None, "spec": None}
    status = target.router.status(peer)
    if status.healthy:
        state = "connected"
    elif status.last_error is not None and "seems hung" in status.last_error:
        state = "hung"
    else:
        state = "reconnecting"
    return {"state": state, "attempts": status.attempts, "last_error": status.last_error, "spec": status.spec}


def overview(target: Target, *, read_only: bool) -> dict[str, Any]:
    """Every peer with its state, tools, content, held-back tools and statistics; the topic."""
    adapter = target.adapter
    try:
        report = adapter.stats()
    except UsageError:
        report = None
    ids = list(adapter.peers)
    if target.router is not None:
        ids += [peer for peer in target.router.peers if peer not in ids]
    peers = []
    for peer in ids:
        state = _state(target, peer)
        spec = state.pop("spec")
        content: dict[str, list[dict[str, Any]]] = {"prompts": [], "resources": []}
        if target.router is not None:
            content["prompts"] = [
                {"name": p.name, "title": p.prompt.name, "description": p.prompt.description or ""}
                for p in target.router.prompts(peer)
            ]
            content["resources"] = [
                {"name": r.name, "uri": r.uri, "description": r.resource.description or ""}
                for r in target.router.resources(peer)
            ]
        peers.append(
            {
                "id": peer,
                "transport": transport(spec),
                **state,
                "tools": [
                    {"name": t.name, "tool": t.tool, "strict": t.strict} for t in adapter.tools_of(peer)
                ],
                "held_back": adapter.rejected_tools(peer),
                **content,
                "stats": None if report is None else _stats(report.peers.get(peer)),
            }
        )
    return {
        "version": adapter.version,
        "read_only": read_only,
        "stats_kept": report is not None,
        "window": None if report is None else report.window,
        "peers": peers,
        "topic": None if target.topic is None else topic_view(target.topic),
    }


def topic_view(topic: TopicMembership) -> dict[str, Any]:
    """An MCPx topic: who is present, which participants are peers, which were skipped and why."""
    try:
        client: TopicClient | None = topic.client
    except RuntimeError:
        client = None
    present = {} if client is None else dict(client.participants)
    return {
        "topic": topic.topic,
        "gateway": topic.gateway_url if isinstance(topic.gateway_url, str) else list(topic.gateway_url),
        "participant_id": topic.participant_id,
        "connected": topic.connected,
        "present": [
            {"id": pid, "name": info.name, "kind": info.kind, "peer": pid in topic.peers}
            for pid, info in sorted(present.items())
        ],
        "skipped": dict(topic.skipped),
    }


def model_view(target: Target) -> dict[str, Any]:
    """The tool lists exactly as the model is sent them, not yet sized (`sized_model_view`): read
    from the adapter, where they are kept, on the event loop."""
    adapter = target.adapter
    return {
        "version": adapter.version,
        "max_tools": adapter.max_tools,
        "chars_per_token": CHARS_PER_TOKEN,
        "strict": sum(1 for tool in adapter.tools if tool.strict),
        "not_strict": {name: list(reasons) for name, reasons in adapter.strict_report().items()},
        "formats": {
            "chat": adapter.get_openai_tools(max_tools=None),
            "responses": adapter.get_responses_tools(max_tools=None),
            "functions": adapter.get_openai_functions(max_tools=None),
        },
    }


def sized_model_view(view: dict[str, Any]) -> bytes:
    """`view` as the JSON the page reads, each list with its count and size: megabytes of JSON at
    thousands of tools, so the inspector runs this in a worker thread (the lists are the adapter's
    own, never changed once made)."""
    formats = {}
    for fmt, tools in view["formats"].items():
        chars, tokens = estimate_tokens(tools)
        formats[fmt] = {"tools": tools, "count": len(tools), "chars": chars, "tokens": tokens}
    sized = view | {"formats": formats}
    return json.dumps(sized, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def names(target: Target) -> dict[str, Any]:
    """The name table: public name → peer and original name; groups and their members."""
    adapter = target.adapter
    groups = adapter.groups()
    member_of: dict[tuple[str, str], list[str]] = {}
    for group in groups:
        for key in group.members:
            member_of.setdefault((key.peer, key.tool), []).append(group.name)
    rows = []
    for peer in adapter.peers:
        for tool in adapter.tools_of(peer):
            rows.append(
                {
                    "name": tool.name,
                    "peer": tool.peer,
                    "tool": tool.tool,
                    "strict": tool.strict,
                    "groups": member_of.get((tool.peer, tool.tool), []),
                }
            )
    return {
        "version": adapter.version,
        "tools": rows,
        "groups": [
            {
                "name": group.name,
                "source": group.source,
                "published": group.published,
                "reason": group.reason,
                "members": [
                    {"peer": key.peer, "tool": key.tool, "name": _public(adapter, key.peer, key.tool)}
                    for key in group.members
                ],
            }
            for group in groups
        ],
    }


def _public(adapter: OpenAIPeerToolAdapter, peer: str, tool: str) -> str | None:
    try:
        return adapter.public_name(peer, tool)
    except UnknownToolError:
        return None


def tool_detail(target: Target, name: str) -> dict[str, Any] | None:
    """One published tool (or group function) by public name: what the form is built from."""
    tool: PublishedTool | None = next((t for t in target.adapter.tools if t.name == name), None)
    if tool is None:
        return None
    return {
        "name": tool.name,
        "peer": tool.peer,
        "tool": tool.tool,
        "description": tool.description,
        "input_schema": dict(tool.input_schema),
        "parameters": tool.parameters,
        "strict": tool.strict,
    }


async def selection(target: Target, query: str, max_tools: int | None) -> dict[str, Any]:
    """What a request with `query` as its last user message would be offered: the budget's choice
    (ranked, with scores) and what the tool search would add."""
    adapter = target.adapter
    budget = adapter.max_tools if max_tools is None else max_tools
    ranked = await adapter.rank_tools(query)
    chosen = await adapter.select_tools("chat", relevant_to=query, max_tools=budget)
    offered = {entry["function"]["name"] for entry in chosen}
    search = ToolSearch(adapter)
    found = await search.find(query) if query.strip() else []
    search_offer = await search.chat_tools(query)
    return {
        "query": query,
        "max_tools": budget,
        "total": len(adapter.tools),
        "offered": len(chosen),
        "ranked": [
            {
                "rank": rank,
                "name": tool.name,
                "peer": tool.peer,
                "score": round(score, 6),
                "offered": tool.name in offered,
            }
            for rank, (tool, score) in enumerate(ranked[:200], start=1)
        ],
        "tool_search": {
            "name": search.name,
            "found": [tool.name for tool in found],
            "offered": [_entry_name(entry) for entry in search_offer],
        },
    }


def _entry_name(entry: Mapping[str, Any]) -> str:
    function = entry.get("function")
    return str(function["name"] if isinstance(function, Mapping) else entry.get("name", ""))
