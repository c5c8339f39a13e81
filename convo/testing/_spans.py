"""``captured_spans()``: the spans convo emits, collected in memory for a test (API.md §18).
Needs ``opentelemetry-sdk`` (in ``convo[test]``; ``pip install opentelemetry-sdk``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..otel import instrument, uninstrument
from ..otel._state import active, set_active


@contextlib.contextmanager
def captured_spans(*, capture_content: bool = False,
                   meter_provider: Any = None) -> Iterator[list[Any]]:
    """Instrument convo for the block and collect each span as it ends (a list that fills;
    SDK ``ReadableSpan`` objects). What was instrumented before comes back afterwards.
    ``meter_provider``: where the metrics go (default: nowhere)."""
    try:
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
    except ImportError as exc:
        raise ImportError("captured_spans() needs the OpenTelemetry SDK: "
                          f'pip install -e ".[otel]" opentelemetry-sdk ({exc})') from exc

    spans: list[Any] = []

    class _Collect(SpanExporter):
        def export(self, batch: Sequence[Any]) -> SpanExportResult:
            spans.extend(batch)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Collect()))
    before = active()
    instrument(tracer_provider=provider, capture_content=capture_content,
               meter_provider=meter_provider or NoOpMeterProvider())
    try:
        yield spans
    finally:
        if before is None:
            uninstrument()
        else:
            set_active(before)
        provider.shutdown()
