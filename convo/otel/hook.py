"""How every run gets its span maker: while instrumented, ``Run.on_event`` (where a run keeps
its event handler) is wrapped so that whatever handler a run is given — the runner's
``on_event``, the terminal's, a served conversation's — also feeds the run's ``RunSpans``.

The core has no process-wide event subscription yet; this is the one place that stands in
for it (docs/telemetry.md). Uninstrumented, nothing here is loaded and ``Run`` is untouched.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..driving import Run
from ..events import Event
from .spans import RunSpans
from .state import active, set_active
from .telemetry import Telemetry

Handler = Callable[[Event], None]


class _Fed:
    """Stands for the ``on_event`` slot of ``Run``: what is stored there also feeds spans.

    It has no ``__get__``: what ``__set__`` stores goes in the run's ``__dict__``, which a
    read then finds at C speed (a run reads ``on_event`` for every message and event).
    """

    def __init__(self, slot: Any) -> None:
        self.slot = slot
        self.sinks: weakref.WeakKeyDictionary[Any, RunSpans] = weakref.WeakKeyDictionary()

    def __set__(self, run: Any, handler: Handler | None) -> None:
        sink = self.sinks.get(run)
        if sink is None:
            telemetry = active()
            if telemetry is None:  # uninstrumented since: plain
                run.__dict__["on_event"] = handler
                return
            if telemetry.on_run is not None:
                telemetry.on_run()
            sink = self.sinks[run] = RunSpans(telemetry, run, run.runner.model, run.session)
        run.__dict__["on_event"] = _both(sink, handler)

    def restore(self) -> None:
        """Back to the slot; runs under way keep their handlers (and their spans)."""
        Run.on_event = self.slot
        for run in list(self.sinks):
            handler = run.__dict__.pop("on_event", None)
            self.slot.__set__(run, handler)


def _both(sink: RunSpans, handler: Handler | None) -> Handler:
    if handler is None:
        return sink

    def both(event: Event) -> None:
        sink(event)
        handler(event)

    return both


def install(telemetry: Telemetry) -> None:
    set_active(telemetry)
    if not isinstance(Run.__dict__.get("on_event"), _Fed):
        slot = Run.__dict__.get("on_event")
        if slot is None or not hasattr(slot, "__set__") or not Run.__dictoffset__:
            set_active(None)
            raise RuntimeError(
                "convo.otel cannot follow this version's runs: convo.driving.Run has no "
                f"on_event slot and instance dict (found {slot!r}); update convo and "
                "convo[otel] together")
        Run.on_event = _Fed(slot)  # type: ignore[assignment]


def remove() -> None:
    set_active(None)
    fed = Run.__dict__.get("on_event")
    if isinstance(fed, _Fed):
        fed.restore()
