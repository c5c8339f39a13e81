"""What is instrumented now; imports nothing of OpenTelemetry, so that code on every run's
path (the serving app) can ask cheaply whether there is anything to do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .telemetry import Telemetry

# The GenAI semantic conventions these spans and metrics follow (docs/telemetry.md).
SEMCONV_VERSION: Final = "1.37.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

_current: list[Telemetry] = []  # zero or one: the settings of the last instrument()


def active() -> Telemetry | None:
    """The telemetry every new run reports to, or ``None`` when not instrumented."""
    return _current[0] if _current else None


def set_active(telemetry: Telemetry | None) -> None:
    _current[:] = [] if telemetry is None else [telemetry]
