"""Catalogues for the evaluation: real MCP servers' tools, replicas of some, and generated decoys.

- Real tools: the six servers captured in tests/support/fixtures/tool_schemas (mcp-server-time,
  -fetch, -git, server-everything, -filesystem, -memory: 51 tools), published as `time`, `fetch`,
  `git`, `everything`, `fs`, `memory`, exactly as those servers list them.
- Replicas (catalogues of 100 tools and more): `time_eu`, `fetch_mirror` and `memory_team` list
  the same tools as `time`, `fetch` and `memory` (12 tools), as a deployment with several copies of
  a server would; a call to a replica's copy of the intended tool counts as the right tool, and with
  `auto_groups` each set of copies is one function.
- Decoys: generated tools of business systems (CRM, billing, helpdesk, ...), each with a name, a
  description and an input schema made from its verb and record type, deterministic from a seed.
  Several use the real tools' words ("search", "read", "list", "create", "time", "file") so that
  they compete with them in ranking, but none does what a labelled request asks.

At 10 tools the catalogue is made per request: the intended tool, up to four other tools of its
own server (the hardest distractors: `git_diff` beside `git_diff_staged`), and real tools of the
other servers, chosen by a seed made from the request's id.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import mcp_types as mt
from mcp.server.lowlevel import Server

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "support" / "fixtures" / "tool_schemas"
PEER_OF = {
    "mcp-server-time": "time",
    "mcp-server-fetch": "fetch",
    "mcp-server-git": "git",
    "@modelcontextprotocol/server-everything": "everything",
    "@modelcontextprotocol/server-filesystem": "fs",
    "@modelcontextprotocol/server-memory": "memory",
}
REPLICAS = {"time_eu": "time", "fetch_mirror": "fetch", "memory_team": "memory"}
"""Replica peer -> the real peer whose tools it lists."""

Catalogue = dict[str, list[mt.Tool]]


def real_tools() -> Catalogue:
    """Each captured server's tools, exactly as listed, by peer id (output schemas left out)."""
    out: Catalogue = {}
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        tools = [
            mt.Tool.model_validate({k: v for k, v in tool.items() if k != "outputSchema"})
            for tool in data["tools"]
        ]
        out[PEER_OF[data["server"]]] = tools
    return out


def origin(peer: str) -> str:
    """The real peer a peer stands for: itself, or the one a replica copies."""
    return REPLICAS.get(peer, peer)


# -- decoys -------------------------------------------------------------------------------------

SYSTEMS: dict[str, list[str]] = {
    "crm": ["contact", "lead", "account", "opportunity", "deal note"],
    "billing": ["invoice", "payment", "refund", "subscription", "credit note"],
    "helpdesk": ["ticket", "macro", "agent", "escalation", "satisfaction survey"],
    "logistics": ["shipment", "parcel", "route", "pallet", "delivery slot"],
    "hr": ["employee", "leave request", "payslip", "job opening", "timesheet"],
    "calendar": ["event", "meeting room", "availability", "reminder", "holiday"],
    "storage": ["bucket", "object", "backup", "snapshot", "retention policy"],
    "analytics": ["dashboard", "report", "metric", "funnel", "cohort"],
    "cms": ["page", "blog post", "media asset", "menu", "redirect"],
    "devops": ["deployment", "pipeline", "build", "incident", "alert rule"],
    "inventory": ["product", "stock level", "warehouse", "supplier", "purchase order"],
    "chat": ["channel", "thread", "direct message", "user group", "pinned message"],
    "clinic": ["patient", "appointment", "prescription", "lab result", "referral"],
    "school": ["course", "student", "grade", "assignment", "timetable"],
    "travel": ["booking", "flight", "hotel stay", "itinerary", "loyalty account"],
    "iot": ["device", "sensor reading", "firmware", "alarm", "site"],
}
STATUS = ["open", "pending", "active", "closed", "archived", "draft", "failed", "scheduled"]


def _snake(text: str) -> str:
    return text.replace(" ", "_").replace("-", "_")


def _verbs(noun: str, system: str) -> list[tuple[str, str, dict[str, Any], list[str]]]:
    """(verb, description, properties, required) for each operation on one record type."""
    key = f"{_snake(noun)}_id"
    ident = {key: {"type": "string", "description": f"The {noun}'s id in {system}."}}
    return [
        (
            "search",
            f"Search {noun}s in {system} by keyword, status or owner. Returns up to `limit` matches, "
            "each with its id and a short summary.",
            {
                "query": {"type": "string", "description": "Words to look for."},
                "status": {"type": "string", "enum": STATUS[:5]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            },
            ["query"],
        ),
        ("get", f"Get one {noun} from {system} with all its fields.", ident, [key]),
        (
            "list",
            f"List the {noun}s of {system}, newest first, one page at a time.",
            {
                "page": {"type": "integer", "minimum": 1, "default": 1},
                "updated_since": {"type": "string", "format": "date-time"},
            },
            [],
        ),
        (
            "create",
            f"Create a new {noun} in {system}. Returns the id of the record created.",
            {
                "name": {"type": "string", "description": f"The {noun}'s name or title."},
                "description": {"type": "string"},
                "owner": {"type": "string", "description": "Email of the person responsible."},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            ["name"],
        ),
        (
            "update",
            f"Update fields of an existing {noun} in {system}; fields left out are kept.",
            {**ident, "fields": {"type": "object", "additionalProperties": True}},
            [key, "fields"],
        ),
        ("delete", f"Delete a {noun} from {system} permanently. This cannot be undone.", ident, [key]),
        (
            "export",
            f"Export {noun}s of {system} to a CSV or JSON file and return its download link.",
            {
                "format": {"type": "string", "enum": ["csv", "json"]},
                "from_date": {"type": "string", "format": "date"},
                "to_date": {"type": "string", "format": "date"},
            },
            ["format"],
        ),
        (
            "import",
            f"Import {noun}s into {system} from a file at a URL (CSV or JSON).",
            {"file_url": {"type": "string", "format": "uri"}, "dry_run": {"type": "boolean"}},
            ["file_url"],
        ),
        (
            "count",
            f"Count the {noun}s of {system} matching a status, for reports and dashboards.",
            {"status": {"type": "string", "enum": STATUS}},
            [],
        ),
        (
            "archive",
            f"Archive a {noun} in {system}: it is hidden from lists but can be restored.",
            ident,
            [key],
        ),
        (
            "assign",
            f"Assign a {noun} in {system} to a person or team.",
            {**ident, "assignee": {"type": "string", "description": "User name or team."}},
            [key, "assignee"],
        ),
        (
            "history",
            f"Show the change history (audit log) of a {noun} in {system}, with times and authors.",
            {**ident, "max_entries": {"type": "integer", "default": 50}},
            [key],
        ),
        (
            "comment",
            f"Add a comment to a {noun} in {system}; other watchers are notified.",
            {**ident, "text": {"type": "string"}},
            [key, "text"],
        ),
        (
            "schedule",
            f"Schedule an action on a {noun} in {system} for a given time and timezone.",
            {
                **ident,
                "action": {"type": "string", "enum": ["remind", "close", "publish", "review"]},
                "at": {"type": "string", "format": "date-time"},
                "timezone": {"type": "string", "description": "IANA timezone name."},
            },
            [key, "action", "at"],
        ),
        (
            "attach_file",
            f"Attach a file (by path or URL) to a {noun} in {system}.",
            {**ident, "path": {"type": "string", "description": "File path or URL."}},
            [key, "path"],
        ),
    ]


def decoy_tools(count: int, *, seed: int = 7, per_peer: int = 100) -> Catalogue:
    """`count` generated tools over peers named after their system (`crm`, `billing2`, ...)."""
    rng = random.Random(seed)
    pool: list[tuple[str, mt.Tool]] = []
    for system, nouns in SYSTEMS.items():
        for noun in nouns:
            for verb, description, props, required in _verbs(noun, system):
                name = f"{verb}_{_snake(noun)}"
                schema = {"type": "object", "properties": props, "required": required}
                pool.append((system, mt.Tool(name=name, description=description, input_schema=schema)))
    rng.shuffle(pool)
    out: Catalogue = {}
    made = 0
    round_ = 0
    while made < count:
        for system, tool in pool:
            if made == count:
                break
            # later rounds are other instances of the same systems (crm2, crm3, ...) with the same
            # tools: a large organisation runs many
            peer = system if round_ == 0 else f"{system}{round_ + 1}"
            listed = out.setdefault(peer, [])
            if len(listed) >= per_peer:
                continue
            listed.append(tool)
            made += 1
        round_ += 1
    return out


# -- catalogues ---------------------------------------------------------------------------------


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def small_catalogue(intended: str, request_id: str, size: int = 10) -> Catalogue:
    """The intended tool, up to 4 siblings from its server and real tools of others: `size` tools."""
    real = real_tools()
    peer, tool = intended.split("__", 1)
    rng = random.Random(_seed(request_id))
    siblings = [t for t in real[peer] if t.name != tool]
    chosen: set[tuple[str, str]] = {(peer, tool)}
    chosen |= {(peer, t.name) for t in rng.sample(siblings, min(4, len(siblings), size - 1))}
    others = [(p, t.name) for p, tools in real.items() if p != peer for t in tools]
    chosen |= set(rng.sample(others, size - len(chosen)))
    return {
        p: [t for t in tools if (p, t.name) in chosen]
        for p, tools in real.items()
        if any((p, t.name) in chosen for t in tools)
    }


def large_catalogue(size: int, *, seed: int = 7) -> Catalogue:
    """The 51 real tools, 12 replicas and decoys: `size` tools in all (at least 63)."""
    real = real_tools()
    replicas = {replica: list(real[peer]) for replica, peer in REPLICAS.items()}
    held = sum(len(t) for t in real.values()) + sum(len(t) for t in replicas.values())
    if size < held:
        raise ValueError(f"a shared catalogue holds at least {held} tools, not {size}")
    return {**real, **replicas, **decoy_tools(size - held, seed=seed)}


def catalogue_size(catalogue: Catalogue) -> int:
    return sum(len(tools) for tools in catalogue.values())


CANNED = "Done. (evaluation peer: the call was received and succeeded)"


def served(peer: str, tools: list[mt.Tool], calls: list[tuple[str, str, dict[str, Any]]]) -> Server[Any]:
    """An MCP server listing exactly `tools`; each call is recorded and answered with a success."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(tools))

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        calls.append((peer, params.name, dict(params.arguments or {})))
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=CANNED)])

    return Server(peer, on_list_tools=list_tools, on_call_tool=call_tool)
