"""A held-out labelled set: 62 requests over six MCP servers that the main set does not use.

Slack, GitHub, Puppeteer, Brave Search, Google Maps and Postgres (the `@modelcontextprotocol`
npm servers; `heldout/tools-*.json` is what each answered to `tools/list`, with its version),
published as `slack`, `github`, `browser`, `brave`, `maps`, `postgres`, among the evaluation's
generated decoys. The requests (`heldout/requests.json`) were written once, before any
measurement on them, and no setting is chosen by them: their recall shows whether what the main
set measures carries over to tools it never saw.

    python -m benchmarks evals --recall --embedder minilm --heldout --sizes 100,1000,5000
"""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as mt

from .catalogue import Catalogue, decoy_tools
from .harness import Request

HERE = Path(__file__).resolve().parent / "heldout"
PEER_OF = {
    "@modelcontextprotocol/server-slack": "slack",
    "@modelcontextprotocol/server-github": "github",
    "@modelcontextprotocol/server-puppeteer": "browser",
    "@modelcontextprotocol/server-brave-search": "brave",
    "@modelcontextprotocol/server-google-maps": "maps",
    "@modelcontextprotocol/server-postgres": "postgres",
}


def heldout_tools() -> Catalogue:
    """Each held-out server's tools, exactly as listed, by peer id."""
    out: Catalogue = {}
    for path in sorted(HERE.glob("tools-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[PEER_OF[data["server"]]] = [mt.Tool.model_validate(tool) for tool in data["tools"]]
    return out


def heldout_requests() -> list[Request]:
    data = json.loads((HERE / "requests.json").read_text(encoding="utf-8"))
    return [Request(r["id"], r["text"], r["tool"], {}) for r in data["requests"]]


def heldout_catalogue(size: int, *, seed: int = 7) -> Catalogue:
    """The held-out servers' tools among generated decoys, `size` tools in all."""
    real = heldout_tools()
    held = sum(len(tools) for tools in real.values())
    if size < held:
        raise ValueError(f"the held-out catalogue holds at least {held} tools, not {size}")
    return {**real, **decoy_tools(size - held, seed=seed)}
