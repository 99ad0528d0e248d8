"""Large catalogues for the tests: real servers' tools among many generated ones.

The tools and the labelled requests are those of the relevance evaluation
(benchmarks/ranking/_labelled.py); here they are served by in-process `RecordingPeer`s.
"""

from __future__ import annotations

import json

import mcp_types as mt

from benchmarks.ranking._labelled import LABELLED, filler_tools, real_tools

from ._model_peers import RecordingPeer

__all__ = ["LABELLED", "filler_peers", "real_peers"]


async def _echo(arguments: dict[str, object]) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=json.dumps(arguments, sort_keys=True))]
    )


def _peers(tools: dict[str, list[mt.Tool]]) -> dict[str, RecordingPeer]:
    return {
        name: RecordingPeer(name, list(listed), {t.name: _echo for t in listed})
        for name, listed in tools.items()
    }


def real_peers() -> dict[str, RecordingPeer]:
    """One RecordingPeer per captured real server, holding its tools exactly as listed."""
    return _peers(real_tools())


def filler_peers(count: int, *, per_peer: int = 100) -> dict[str, RecordingPeer]:
    """`count` generated tools over peers `svc0`, `svc1`, ... of `per_peer` tools each."""
    return _peers(filler_tools(count, per_peer=per_peer))
