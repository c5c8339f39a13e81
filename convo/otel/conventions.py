"""The GenAI semantic conventions the spans and metrics follow (docs/telemetry.md)."""

from typing import Final

SEMCONV_VERSION: Final = "1.37.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
