"""OpenTelemetry for the tests: one SDK tracer provider, installed as the global one per test.

The `mcp` SDK's tracer keeps the first real provider it sees, so every test uses this same one;
its spans reach the exporter of the test that is running, and are dropped between tests (the
global provider is put back as it was, so other tests run without tracing).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _ToCurrentTest(SpanProcessor):
    exporter: InMemorySpanExporter | None = None

    def on_end(self, span: ReadableSpan) -> None:
        if self.exporter is not None:
            self.exporter.export([span])


_PROCESSOR = _ToCurrentTest()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(_PROCESSOR)


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """The spans finished during the test, with the SDK's provider configured globally."""
    exporter = InMemorySpanExporter()
    _PROCESSOR.exporter = exporter
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", PROVIDER)
    try:
        yield exporter
    finally:
        _PROCESSOR.exporter = None


def named(spans: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [span for span in spans.get_finished_spans() if span.name.startswith(prefix)]


def parent_of(spans: InMemorySpanExporter, span: ReadableSpan) -> ReadableSpan | None:
    """The finished span that is `span`'s parent, if any."""
    if span.parent is None:
        return None
    by_id = {s.context.span_id: s for s in spans.get_finished_spans() if s.context is not None}
    return by_id.get(span.parent.span_id)
