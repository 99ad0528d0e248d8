"""The gateway benchmark's code path with a few participants, so that it cannot rot unnoticed.

Real processes, as the benchmark runs them: a server (our gateway, or the floor) and the load
generator, on 127.0.0.1. No timing is asserted, only that the figures add up.
"""

from __future__ import annotations

import pytest

from benchmarks.mcpx.gateway import one_run

pytestmark = pytest.mark.anyio

PARTICIPANTS = 5


@pytest.mark.parametrize("kind", ["gateway", "floor"])
async def test_benchmark_runs_and_its_figures_add_up(kind: str, anyio_backend: str) -> None:
    run = await one_run(kind, PARTICIPANTS, anyio_backend, seconds=0.3, pairs=2)
    raw = run.raw
    assert run.server_status == 0, "the server did not shut down cleanly"
    assert raw["closed"] == [], "the server closed participants during the run"
    # Each participant got its welcome; with the gateway, each join reached everyone already there.
    n = PARTICIPANTS
    assert raw["frames_at_fill"] == n + (n * (n - 1) // 2 if kind == "gateway" else 0)
    assert raw["pairs"] == 2
    for phase in ("broadcast", "request"):
        figures = raw[phase]
        assert figures["count"] > 0 and figures["seconds"] > 0
        assert len(figures["latencies"]) == figures["count"]
        assert all(latency >= 0 for latency in figures["latencies"])
        assert run.rate(phase) > 0
    assert raw["broadcasts"] > 0
    assert raw["rss_idle"] is None or raw["rss_full"] > 0
