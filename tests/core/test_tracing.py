"""OpenTelemetry: one `execute_tool` span per call, the parent of the mcp SDK's spans; connect spans.

Real peers (in-process `MCPServer`s, our stdio server), the SDK's in-memory exporter, both backends.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpx_router import CallProgress, HealthChanged, InProcessPeer, Outcome, Reconnect, Router
from mcpx_router._tracing import traced_call, tracing

from ..support.otel_support import named, parent_of, spans
from ..support.router_support import WAIT, next_event, tiny

pytestmark = pytest.mark.anyio

__all__ = ["spans"]  # the fixture

tracer = trace.get_tracer("tests")


def chat_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


HELD: dict[str, tuple[anyio.Event, anyio.Event]] = {}
"""`wait` calls whose label is here set the first event when they start and answer once the second
is set, instead of sleeping: a test knows a call is running without guessing how long it takes."""


def calc_server() -> MCPServer:
    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    @server.tool()
    def refuse() -> str:
        """Answers with a JSON-RPC error."""
        raise mcp.MCPError(code=-32002, message="not today")

    @server.tool()
    async def wait(seconds: float, label: str) -> str:
        """Answer after some seconds, inside a span of the server's own named after `label`."""
        with tracer.start_as_current_span(f"inside {label}"):
            if label in HELD:
                started, release = HELD[label]
                started.set()
                await release.wait()
            else:
                await anyio.sleep(seconds)
        return label

    return server


async def test_a_call_span_follows_the_genai_conventions(spans: InMemorySpanExporter) -> None:
    async with Router() as router:
        await router.join("calc", calc_server())
        answers = await router.dispatch([chat_call("call-1", "calc__add", {"a": 2, "b": 3})])
    assert answers[0]["content"] == "5"
    [span] = named(spans, "execute_tool")
    assert span.name == "execute_tool calc__add"
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "calc__add",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers. (via calc)",
        "mcpx_router.peer.id": "calc",
        "mcpx_router.tool.original_name": "add",
        "mcpx_router.outcome": "ok",
    }
    assert span.status.status_code is StatusCode.UNSET
    # The in-process server's own span for the request is its child (trace context in `_meta`).
    [served] = named(spans, "tools/call add")
    assert served.kind is SpanKind.SERVER and parent_of(spans, served) is span


async def test_over_stdio_the_sdks_client_span_is_a_child_and_the_trace_reaches_the_peer(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    log = tmp_path / "received.jsonl"
    async with Router() as router:
        await router.join("s", tiny(env={"TINY_SERVER_LOG": str(log)}))
        with tracer.start_as_current_span("turn") as turn:
            assert (await router.call("s__echo", {"text": "hi"})).text == "hi"
    [span] = named(spans, "execute_tool s__echo")
    [sent] = named(spans, "MCP send tools/call echo")
    assert parent_of(spans, span) is not None and parent_of(spans, span).name == "turn"  # type: ignore[union-attr]
    assert sent.kind is SpanKind.CLIENT and parent_of(spans, sent) is span
    [received] = [m for m in map(json.loads, log.read_text().splitlines()) if m["method"] == "tools/call"]
    _version, trace_id, parent_id, _flags = received["params"]["_meta"]["traceparent"].split("-")
    assert int(trace_id, 16) == turn.get_span_context().trace_id
    assert int(parent_id, 16) == sent.context.span_id  # type: ignore[union-attr]


async def test_each_kind_of_failure_is_told(spans: InMemorySpanExporter) -> None:
    async with Router() as router:
        await router.join("calc", calc_server())
        await router.join("slow", InProcessPeer(calc_server(), call_timeout=0.05, max_concurrency=1))
        calls = [
            chat_call("unknown", "calc__nope", {}),
            chat_call("arguments", "calc__add", {"a": "two"}),
            chat_call("not-json", "calc__add", "{"),
            chat_call("tool", "calc__fail", {"reason": "boom"}),
            chat_call("refused", "calc__refuse", {}),
            chat_call("timeout", "slow__wait", {"seconds": 5, "label": "t"}),
            {"id": "custom", "type": "custom", "custom": {"name": "calc__add", "input": "x"}},
        ]
        answers = await router.dispatch(calls)
    assert all(answer["content"].startswith("Error:") for answer in answers)
    by_id = {
        (span.attributes or {}).get("gen_ai.tool.call.id"): span for span in named(spans, "execute_tool")
    }
    kinds = {call_id: (span.attributes or {})["error.type"] for call_id, span in by_id.items()}
    assert kinds == {
        "unknown": "unknown_tool",
        "arguments": "invalid_arguments",
        "not-json": "invalid_arguments",
        "tool": "tool_error",
        "refused": "peer_error",
        "timeout": "timeout",
        "custom": "invalid_call",
    }
    for span in by_id.values():
        attributes = span.attributes or {}
        assert attributes["mcpx_router.outcome"] == attributes["error.type"]
        assert span.status.status_code is StatusCode.ERROR and span.status.description.startswith("Error:")  # type: ignore[union-attr]
    assert "mcpx_router.peer.id" not in (by_id["unknown"].attributes or {})
    assert (by_id["timeout"].attributes or {})["mcpx_router.peer.id"] == "slow"


async def test_a_busy_peer_and_a_lost_one_are_told(spans: InMemorySpanExporter) -> None:
    outcomes: dict[str, Outcome] = {}

    async def call(key: str, name: str, arguments: dict[str, Any], limit: float | None = None) -> None:
        outcomes[key] = await router.call(name, arguments, call_timeout=limit)

    started, release = HELD["first"] = (anyio.Event(), anyio.Event())
    try:
        async with Router(reconnect=Reconnect(initial_delay=30, jitter=0)) as router:
            await router.join("one", InProcessPeer(calc_server(), max_concurrency=1))
            await router.join("s", tiny())
            pid = int((await router.call("s__pid", {})).text)
            with router.events() as events:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call, "first", "one__wait", {"seconds": 0, "label": "first"})
                    tg.start_soon(call, "lost", "s__sleep", {"seconds": 10})
                    with anyio.fail_after(WAIT):
                        await started.wait()  # "first" holds the one slot
                    await call("busy", "one__wait", {"seconds": 0, "label": "second"}, 0.05)
                    release.set()
                    await next_event(events, CallProgress, lambda e: e.peer == "s")  # it is running
                    os.kill(pid, signal.SIGKILL)
                    await next_event(events, HealthChanged)
    finally:
        del HELD["first"]
    assert {key: o.error_type for key, o in outcomes.items()} == {
        "first": None,
        "busy": "peer_busy",
        "lost": "peer_unavailable",
    }

    def told(name: str) -> list[Any]:
        return sorted(
            (s.attributes or {})["mcpx_router.outcome"] for s in named(spans, f"execute_tool {name}")
        )

    assert told("one__wait") == ["ok", "peer_busy"]
    assert told("s__sleep") == ["peer_unavailable"]


async def test_concurrent_calls_in_one_batch_each_parent_their_own_spans(spans: InMemorySpanExporter) -> None:
    labels = [f"c{i}" for i in range(8)]
    async with Router() as router:
        await router.join("calc", calc_server())
        with tracer.start_as_current_span("batch"):
            answers = await router.dispatch(
                [chat_call(label, "calc__wait", {"seconds": 0.05, "label": label}) for label in labels]
            )
    assert [a["content"] for a in answers] == labels
    [batch] = named(spans, "batch")
    for label in labels:
        [inside] = named(spans, f"inside {label}")
        served = parent_of(spans, inside)
        assert served is not None and served.name == "tools/call wait"
        call_span = parent_of(spans, served)
        assert call_span is not None and call_span.name == "execute_tool calc__wait"
        assert (call_span.attributes or {})["gen_ai.tool.call.id"] == label
        assert parent_of(spans, call_span) is batch


calls = st.lists(st.sampled_from(["ok", "unknown", "arguments", "tool"]), min_size=1, max_size=6)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=calls)
async def test_every_call_of_any_batch_gets_one_span_that_tells_its_answer(
    spans: InMemorySpanExporter, kinds: list[str]
) -> None:
    spans.clear()
    made = {
        "ok": ("calc__add", {"a": 1, "b": 2}),
        "unknown": ("calc__gone", {}),
        "arguments": ("calc__add", {"a": []}),
        "tool": ("calc__fail", {"reason": "no"}),
    }
    async with Router() as router:
        await router.join("calc", calc_server())
        with tracer.start_as_current_span("batch"):
            answers = await router.dispatch(
                [chat_call(f"id{i}", *made[kind]) for i, kind in enumerate(kinds)]
            )
    [batch] = named(spans, "batch")
    call_spans = named(spans, "execute_tool")
    assert sorted((s.attributes or {})["gen_ai.tool.call.id"] for s in call_spans) == sorted(
        f"id{i}" for i in range(len(kinds))
    )
    for span in call_spans:
        answer = answers[int(str((span.attributes or {})["gen_ai.tool.call.id"])[2:])]
        failed = answer["content"].startswith("Error:")
        assert ((span.attributes or {})["mcpx_router.outcome"] != "ok") == failed
        assert (span.status.status_code is StatusCode.ERROR) == failed
        assert parent_of(spans, span) is batch


async def test_connect_and_reconnect_spans(spans: InMemorySpanExporter) -> None:
    async with Router(reconnect=Reconnect(initial_delay=0.01, jitter=0)) as router:
        await router.join("s", tiny())
        pid = int((await router.call("s__pid", {})).text)
        with router.events() as events:
            os.kill(pid, signal.SIGKILL)
            await next_event(events, HealthChanged, lambda e: e.healthy)
    [connect] = named(spans, "connect_peer s")
    [reconnect] = named(spans, "reconnect_peer s")
    assert dict(connect.attributes or {}) == {
        "mcpx_router.peer.id": "s",
        "mcpx_router.peer.transport": "stdio",
        "mcpx_router.connect.failed_attempts": 0,
        "mcpx_router.connect.reconnect": False,
        "mcpx_router.peer.tools": 5,  # echo, pid, sleep, add_tool, remove_tool
        "mcpx_router.outcome": "ok",
    }
    assert (reconnect.attributes or {})["mcpx_router.connect.reconnect"] is True
    assert (reconnect.attributes or {})["mcpx_router.outcome"] == "ok"
    # The SDK's handshake and listing spans are the connect span's children.
    handshake = [s for s in named(spans, "MCP send ") if parent_of(spans, s) is reconnect]
    assert {s.name for s in handshake} >= {"MCP send initialize", "MCP send tools/list"}


async def test_a_failed_connect_says_why(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    async with Router(connect_timeout=5) as router:
        with pytest.raises(Exception, match="could not connect"):
            await router.join("ghost", tiny("--no-such-flag"))
    [span] = named(spans, "connect_peer ghost")
    assert (span.attributes or {})["mcpx_router.outcome"] == "error"
    assert "." in str((span.attributes or {})["error.type"])
    assert span.status.status_code is StatusCode.ERROR


async def test_without_a_configured_provider_nothing_is_traced() -> None:
    assert not tracing()
    async with Router() as router:
        await router.join("calc", calc_server())
        run = router.adapter._answerer.run
        from mcpx_router.model.calls._calls import ToolCall

        pending = run(ToolCall("function", "x", "calc__add", {"a": 1, "b": 1}), None)
        assert getattr(pending, "cr_code", None) is not traced_call.__code__  # no span wrapped around it
        assert (await pending).text == "2"


async def test_without_the_api_everything_runs_untraced(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if `opentelemetry` could not be imported (the `mcp` SDK installs it, so it always can here).
    from mcpx_router import _tracing

    monkeypatch.setattr(_tracing, "_trace", None)
    monkeypatch.setattr(_tracing, "_context", None)
    assert not tracing() and _tracing.current_context() is None
    with _tracing.attached(None), _tracing.connect_span("p", object(), reconnect=False, attempt=0) as span:
        span.connected(1)
    async with Router() as router:
        await router.join("calc", calc_server())
        assert (await router.call("calc__add", {"a": 1, "b": 2})).text == "3"


async def test_a_provider_named_in_the_environment_is_loaded_as_the_api_loads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The per-call check skips the API while no provider is set nor named: it must read the same,
    # live environment, so a provider named in it later is loaded and traced with.
    from opentelemetry.util._once import Once

    from ..support.otel_support import PROVIDER

    loaded: list[str] = []

    def load(name: str, _kind: str) -> Any:
        loaded.append(name)
        return PROVIDER

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_load_provider", load)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    assert not tracing() and loaded == []
    monkeypatch.setenv("OTEL_PYTHON_TRACER_PROVIDER", "sdk")
    assert tracing() and loaded == ["OTEL_PYTHON_TRACER_PROVIDER"]
    assert trace.get_tracer_provider() is PROVIDER
