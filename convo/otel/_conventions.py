"""The GenAI semantic conventions the spans and metrics follow (docs/telemetry.md)."""

from typing import Any, Final

SEMCONV_VERSION: Final = "1.37.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"


def cache_attributes(usage: Any) -> dict[str, int]:
    """A ``Usage``'s cache reads and writes, as the conventions name them (when not 0)."""
    found = {"gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
             "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens}
    return {k: v for k, v in found.items() if v}
