"""``--otel`` / ``--otel-content`` of ``convo run``, ``convo chat`` and ``convo serve``: the
command instruments itself with OpenTelemetry's global providers (as ``opentelemetry-instrument``
or the bot file set them up). Imports nothing of OpenTelemetry until a flag is given."""

from __future__ import annotations

import argparse
import sys

from .._botfile import UsageProblem


def add_otel_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--otel", action="store_true",
                        help="emit OpenTelemetry traces and metrics")
    parser.add_argument("--otel-content", action="store_true",
                        help="with --otel, also record messages and tool content")


def setup(args: argparse.Namespace, *, quiet: bool = False) -> None:
    """Instrument when the command line asks for it; say so when no SDK will receive it."""
    content = bool(getattr(args, "otel_content", False))
    if not (getattr(args, "otel", False) or content):
        return
    try:
        from opentelemetry import trace
    except ImportError:
        raise UsageProblem('--otel needs OpenTelemetry: pip install -e ".[otel]", an SDK '
                           "and an exporter (see docs/telemetry.md)") from None
    import attrs

    from ..otel._hook import install
    from ..otel._telemetry import Telemetry

    said: list[bool] = []

    def check() -> None:  # when a run starts: the bot file has had its chance to set one up
        if said:
            return
        said.append(True)
        provider = trace.get_tracer_provider()
        if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
            print("convo: --otel: no OpenTelemetry SDK is set up, so the spans go nowhere; "
                  "run under opentelemetry-instrument or set one up in the bot file "
                  "(docs/telemetry.md)", file=sys.stderr, flush=True)

    telemetry = Telemetry.create(None, None, content)
    install(telemetry if quiet else attrs.evolve(telemetry, on_run=check))
