"""The settings of one ``instrument()``: a tracer, a meter with the two GenAI histograms, and
whether content is recorded; plus what a model says of itself (name, provider, server)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

import attrs
from opentelemetry import metrics, trace

from .._version import __version__
from ._conventions import SCHEMA_URL

# Bucket boundaries the conventions ask for (gen-ai-metrics.md).
TOKEN_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576,
                        4194304, 16777216, 67108864)
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12,
                           10.24, 20.48, 40.96, 81.92)

# Model classes whose provider is known (gen_ai.provider.name); test models have none.
PROVIDERS: Final = {"OpenAIModel": "openai", "OpenAIResponsesModel": "openai",
                    "AnthropicModel": "anthropic", "GeminiModel": "gcp.gemini"}
_DEFAULT_URLS: Final = {"openai": "https://api.openai.com/v1",
                        "anthropic": "https://api.anthropic.com",
                        "gcp.gemini": "https://generativelanguage.googleapis.com"}
_SDKS: Final = {"openai": "openai", "anthropic": "anthropic", "gcp.gemini": "google.genai"}


@attrs.frozen
class Telemetry:
    tracer: trace.Tracer
    token_usage: metrics.Histogram
    duration: metrics.Histogram
    capture_content: bool = False
    # Called as each run starts (``convo run --otel`` checks that an SDK is set up by then).
    on_run: Callable[[], None] | None = None

    @classmethod
    def create(cls, tracer_provider: Any, meter_provider: Any,
               capture_content: bool) -> Telemetry:
        tracer = trace.get_tracer("convo", __version__, tracer_provider, schema_url=SCHEMA_URL)
        meter = metrics.get_meter("convo", __version__, meter_provider, schema_url=SCHEMA_URL)
        return cls(
            tracer=tracer,
            token_usage=meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS)),
            duration=meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS)),
            capture_content=capture_content,
        )


def model_attributes(model: Any) -> dict[str, Any]:
    """``gen_ai.request.model``, ``gen_ai.provider.name`` and ``server.*`` of a model, as far
    as it says (a test model says nothing)."""
    attributes: dict[str, Any] = {}
    if model is None:
        return attributes
    provider = PROVIDERS.get(type(model).__name__)
    module = type(model).__module__  # convo's own (its face, "convo", or a room of convo)
    if provider is not None and (module == "convo" or module.startswith("convo.")):
        attributes["gen_ai.provider.name"] = provider
    name = getattr(model, "model", None)
    if isinstance(name, str) and name:
        attributes["gen_ai.request.model"] = name
    if provider is not None and _SDKS[provider] in sys.modules:  # only a real client has a URL
        attributes.update(_server(model, _DEFAULT_URLS[provider]))
    return attributes


def _server(model: Any, default: str) -> dict[str, Any]:
    base_url = getattr(model, "_base_url", None)
    url = base_url() if callable(base_url) else ""
    parts = urlsplit(url or default)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server.address": parts.hostname, "server.port": port}
