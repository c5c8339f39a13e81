"""Fixtures of the telemetry tests: convo instrumented into the SDK's in-memory span exporter
and metric reader, and a served app on a real port."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from uvicorn_app import uvicorn_app

import convo.otel


class Telemetry:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """The histogram points of metric ``name``: (attributes, point)."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [(dict(p.attributes or {}), p) for p in metric.data.data_points]
        return found


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    convo.otel.instrument(tracer_provider=telemetry.tracer_provider,
                          meter_provider=telemetry.meter_provider)
    try:
        yield telemetry
    finally:
        # A served conversation the test left waiting ends when it is collected (its run's
        # generator closes and reports its end): now, not inside a later test, where its
        # span would end into this shut-down provider.
        gc.collect()
        convo.otel.uninstrument()
        telemetry.tracer_provider.shutdown()
        telemetry.meter_provider.shutdown()


def shape(spans: list[ReadableSpan]) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's name, in the order they started."""
    by_id = {s.context.span_id: s.name for s in spans}
    ordered = sorted(spans, key=lambda s: s.start_time or 0)
    return [(s.name, by_id.get(s.parent.span_id) if s.parent else None) for s in ordered]


def one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"expected one span {name!r}, got {[s.name for s in spans]}"
    return found[0]


@pytest.fixture
def served() -> Iterator[Callable[[Any], str]]:
    """``served(app) -> base URL``: the app under uvicorn on a free port of 127.0.0.1 (its
    lifespan run), stopped when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda app: stack.enter_context(uvicorn_app(app, lifespan="on"))
