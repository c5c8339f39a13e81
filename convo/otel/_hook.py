"""How every run gets its span maker: while instrumented, a watcher of every run
(``convo._run.state.watch_runs``) gives each run a ``RunSpans`` listener, whatever its front
end (the runner's ``on_event``, the terminal's, a served conversation's) — the core's own
subscription, so nothing of the run is patched. Uninstrumented, nothing here is loaded."""

from __future__ import annotations

from collections.abc import Callable

from .._run.state import RunState, watch_runs
from ._spans import RunSpans
from ._state import active, set_active
from ._telemetry import Telemetry

_stop: Callable[[], None] | None = None


def _spans(state: RunState) -> RunSpans | None:
    telemetry = active()
    if telemetry is None:
        return None
    if telemetry.on_run is not None:
        telemetry.on_run()
    return RunSpans(telemetry, state, state.settings.model, state.session)


def install(telemetry: Telemetry) -> None:
    global _stop
    set_active(telemetry)
    if _stop is None:
        _stop = watch_runs(_spans)


def remove() -> None:
    global _stop
    set_active(None)
    if _stop is not None:
        _stop()
        _stop = None
