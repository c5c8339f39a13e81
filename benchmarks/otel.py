"""What OpenTelemetry costs a conversation (API.md §18, issue "Traces and metrics").

    python benchmarks/otel.py            # a table on stdout, JSON in results/otel.json
    python benchmarks/otel.py --quick

The standard conversation (benchmarks/conversation.py: 2 model calls, 1 tool call) on
``MockModel``, in process, µs per conversation, all in one run, the settings taking turns:

- not instrumented;
- instrumented into the SDK: a ``TracerProvider`` whose span processor hands every span to an
  exporter that does nothing, and a ``MeterProvider`` whose reader hands the metrics to an
  exporter that does nothing (the cost of convo's spans and metrics, not of an exporter's
  I/O) — the issue's target: at most 1.3 × the uninstrumented conversation;
- instrumented into the API's no-op providers (convo's own share: events, its handler);
- the SDK floor: the same four spans and two histogram points made directly with the same
  providers, without convo — what any instrumentation making them costs at least.

Needs ``opentelemetry-sdk`` (in the ``test`` extra).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conversation import TEMPLATE, check, mock_model

import convo.otel
from convo import Runner

HERE = Path(__file__).resolve().parent
TARGET = 1.3


def timed(work: Callable[[], Any], conversations: int) -> float:
    """µs per call of ``work`` over ``conversations`` calls, in this thread's CPU time: what
    the work costs, not how long a busy machine kept it waiting (every setting does all its
    work in this thread: the span exporter is called in it, and the metric reader's thread
    only wakes once a minute)."""
    gc.collect()
    started = time.thread_time()
    for _ in range(conversations):
        work()
    return (time.thread_time() - started) / conversations * 1e6


def conversation() -> None:
    check(Runner(mock_model(), TEMPLATE).run())


def providers() -> tuple[Any, Any]:
    """The SDK's providers, each with an exporter that does nothing."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class DropSpans(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class DropMetrics(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 10_000,
                   **kwargs: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(DropSpans()))
    reader = PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=60_000)
    return tracer_provider, MeterProvider(metric_readers=[reader])


def floor(tracer_provider: Any, meter_provider: Any) -> Callable[[], None]:
    """The spans and points convo makes for the standard conversation, made directly."""
    from opentelemetry import metrics, trace
    from opentelemetry.trace import SpanKind

    tracer = trace.get_tracer("floor", None, tracer_provider)
    duration = metrics.get_meter("floor", None, meter_provider).create_histogram(
        "gen_ai.client.operation.duration", unit="s")
    chat = {"gen_ai.operation.name": "chat"}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"}

    def spans() -> None:
        run = tracer.start_span("invoke_agent convo", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "convo"})
        parent = trace.set_span_in_context(run)
        for name, kind, attributes in (("chat", SpanKind.CLIENT, chat),
                                       ("execute_tool get_weather", SpanKind.INTERNAL, tool),
                                       ("chat", SpanKind.CLIENT, chat)):
            span = tracer.start_span(name, parent, kind, attributes)
            if kind is SpanKind.CLIENT:
                span.set_attributes({"gen_ai.response.finish_reasons": ("stop",)})
                duration.record(0.001, chat)
            span.end()
        run.set_attributes({"convo.outcome.status": "completed"})
        run.end()

    return spans


def measure(conversations: int, rounds: int) -> dict[str, float]:
    """The fastest round of each setting; the settings take turns round by round, so that a
    busy machine slows them alike (the minimum is what the code costs, without the noise)."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    tracer_provider, meter_provider = providers()
    settings: dict[str, tuple[Any, Any] | None] = {
        "plain_us": None, "sdk_noop_exporter_us": (tracer_provider, meter_provider),
        "api_noop_us": (NoOpTracerProvider(), NoOpMeterProvider())}
    direct = floor(tracer_provider, meter_provider)
    best = dict.fromkeys([*settings, "sdk_floor_us"], float("inf"))
    for _ in range(rounds + 1):  # the first round warms up
        for name, chosen in settings.items():
            if chosen is None:
                convo.otel.uninstrument()
            else:
                convo.otel.instrument(tracer_provider=chosen[0], meter_provider=chosen[1])
            best[name] = min(best[name], timed(conversation, conversations))
        convo.otel.uninstrument()
        best["sdk_floor_us"] = min(best["sdk_floor_us"], timed(direct, conversations))
    tracer_provider.shutdown()
    meter_provider.shutdown()
    plain = best["plain_us"]
    return {**best, "ratio_sdk": best["sdk_noop_exporter_us"] / plain,
            "ratio_api_noop": best["api_noop_us"] / plain,
            "ratio_sdk_floor": (plain + best["sdk_floor_us"]) / plain,
            "convo_share_us": best["sdk_noop_exporter_us"] - plain - best["sdk_floor_us"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    conversations, rounds = (200, 5) if args.quick else (1000, 15)
    result = measure(conversations, rounds)
    print(f"not instrumented            {result['plain_us']:8.1f} µs per conversation")
    print(f"SDK, exporters do nothing   {result['sdk_noop_exporter_us']:8.1f} µs "
          f"({result['ratio_sdk']:.2f}×, target ≤ {TARGET}×)")
    print(f"API no-op providers         {result['api_noop_us']:8.1f} µs "
          f"({result['ratio_api_noop']:.2f}×)")
    print(f"the SDK floor (same spans   {result['sdk_floor_us']:8.1f} µs "
          f"(plain + floor: {result['ratio_sdk_floor']:.2f}×)")
    print(f"  and points, made directly); convo's own share over it: "
          f"{result['convo_share_us']:.1f} µs")
    (HERE / "results").mkdir(exist_ok=True)
    import os

    (HERE / "results" / "otel.json").write_text(json.dumps(
        {"conversations": conversations, "rounds": rounds, "python": sys.version.split()[0],
         "load_average": os.getloadavg()[0], **result}, indent=2) + "\n", encoding="utf-8")
    return 0 if result["ratio_sdk"] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
