"""What is instrumented now; imports nothing of OpenTelemetry, so that code on every run's
path (the serving app) can ask cheaply whether there is anything to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._conventions import SCHEMA_URL, SEMCONV_VERSION

if TYPE_CHECKING:
    from ._telemetry import Telemetry

__all__ = ["SCHEMA_URL", "SEMCONV_VERSION", "active", "set_active"]

_current: list[Telemetry] = []  # zero or one: the settings of the last instrument()


def active() -> Telemetry | None:
    """The telemetry every new run reports to, or ``None`` when not instrumented."""
    return _current[0] if _current else None


def set_active(telemetry: Telemetry | None) -> None:
    _current[:] = [] if telemetry is None else [telemetry]
