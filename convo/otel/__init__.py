"""Traces and metrics with OpenTelemetry (API.md §18): ``instrument()`` / ``uninstrument()``.

Needs the extra: ``pip install -e ".[otel]"`` (``opentelemetry-api``; bring the SDK and an
exporter). Nothing here imports OpenTelemetry until ``instrument()`` is called, and
``import convo`` does not import this package at all.

Instrumented, every run in the process (``run``, ``arun``, the terminal, served turns) emits
spans and metrics that follow the OpenTelemetry GenAI semantic conventions, version
``SEMCONV_VERSION``: an ``invoke_agent convo`` span per run (per turn when served), a child
``chat {model}`` span per model call and an ``execute_tool {tool}`` span per tool call. They
are made from the run's events (``convo.events``), never by patching a model or an SDK.
"""

from __future__ import annotations

from typing import Any

from ._state import SEMCONV_VERSION, active


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None,
               capture_content: bool = False) -> None:
    """Make every run in this process emit spans and metrics.

    ``tracer_provider`` / ``meter_provider``: where they go (default: OpenTelemetry's global
    providers, as the SDK or ``opentelemetry-instrument`` set them up). ``capture_content``:
    also record messages, tool arguments and tool results (off by default: they may hold
    personal data). Calling it again replaces the settings.
    """
    try:
        from ._hook import install
        from ._telemetry import Telemetry
    except ImportError as exc:  # opentelemetry-api is missing
        raise ImportError(
            'convo.otel.instrument() needs OpenTelemetry: pip install -e ".[otel]" '
            f"(then an SDK and exporter of your choice); importing it failed: {exc}"
        ) from exc
    install(Telemetry.create(tracer_provider, meter_provider, capture_content))


def uninstrument() -> None:
    """Stop emitting spans and metrics for runs that start from now on."""
    if active() is None:
        return
    from ._hook import remove

    remove()


__all__ = ["SEMCONV_VERSION", "instrument", "uninstrument"]
