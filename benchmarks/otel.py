"""What OpenTelemetry costs a conversation (API.md §18, issue "Traces and metrics").

    python benchmarks/otel.py            # a table on stdout, JSON in results/otel.json
    python benchmarks/otel.py --quick

The standard conversation (benchmarks/conversation.py: 2 model calls, 1 tool call) on
``MockModel``, in process, µs per conversation: not instrumented; instrumented into the SDK
with an exporter that drops every span (the cost of convo's spans and metrics, not of an
exporter's I/O); and instrumented into the API's no-op providers. The target: instrumented
with the SDK and a no-op exporter, at most 1.3 × the uninstrumented conversation. Needs
``opentelemetry-sdk`` (in the ``test`` extra).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conversation import TEMPLATE, check, mock_model

import convo.otel
from convo import Runner

HERE = Path(__file__).resolve().parent
TARGET = 1.3


def one_round(conversations: int) -> float:
    """µs per conversation over ``conversations`` runs."""
    gc.collect()
    started = time.perf_counter()
    for _ in range(conversations):
        check(Runner(mock_model(), TEMPLATE).run())
    return (time.perf_counter() - started) / conversations * 1e6


def providers() -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Drop()))
    return tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()])


def measure(conversations: int, rounds: int) -> dict[str, float]:
    """The fastest round of each setting; the settings take turns round by round, so that a
    busy machine slows them alike (the minimum is what the code costs, without the noise)."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    tracer_provider, meter_provider = providers()
    settings: dict[str, tuple[Any, Any] | None] = {
        "plain_us": None, "sdk_noop_exporter_us": (tracer_provider, meter_provider),
        "api_noop_us": (NoOpTracerProvider(), NoOpMeterProvider())}
    best = dict.fromkeys(settings, float("inf"))
    for _ in range(rounds + 1):  # the first round warms up
        for name, chosen in settings.items():
            if chosen is None:
                convo.otel.uninstrument()
            else:
                convo.otel.instrument(tracer_provider=chosen[0], meter_provider=chosen[1])
            best[name] = min(best[name], one_round(conversations))
    convo.otel.uninstrument()
    plain = best["plain_us"]
    return {**best, "ratio_sdk": best["sdk_noop_exporter_us"] / plain,
            "ratio_api_noop": best["api_noop_us"] / plain}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    conversations, rounds = (200, 5) if args.quick else (1000, 15)
    result = measure(conversations, rounds)
    print(f"not instrumented            {result['plain_us']:8.1f} µs per conversation")
    print(f"SDK, spans dropped          {result['sdk_noop_exporter_us']:8.1f} µs "
          f"({result['ratio_sdk']:.2f}×, target ≤ {TARGET}×)")
    print(f"API no-op providers         {result['api_noop_us']:8.1f} µs "
          f"({result['ratio_api_noop']:.2f}×)")
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "otel.json").write_text(json.dumps(
        {"conversations": conversations, "rounds": rounds, "python": sys.version.split()[0],
         **result}, indent=2) + "\n", encoding="utf-8")
    return 0 if result["ratio_sdk"] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
