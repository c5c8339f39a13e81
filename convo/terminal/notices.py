"""Notes the terminal adds about a run, worked out from its events."""

from __future__ import annotations

from ..events import Event, ModelCallEnded, ModelCallStarted, TurnEnded
from ..reply import Finish

IGNORED_TOOLS_NOTE = (
    "the model was offered tools in this turn, called none and stopped normally. If it "
    "should have called one, the server may be ignoring tools (llama.cpp without a "
    "tool-calling chat format, for one): try --tool-format text (see docs/local-models.md)"
)


class IgnoredTools:
    """Says once per run that a turn offered tools and the server never produced a call:
    every model call of the turn offered tools, none came back with a call, and the last
    ended with ``finish_reason`` ``stop`` (only real servers report one). ``enabled=False``
    (the text tool format) never says it."""

    __slots__ = ("_called", "_offered", "_stopped", "enabled", "said")

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.said = False
        self._reset()

    def _reset(self) -> None:
        self._offered = True
        self._called = False
        self._stopped = False

    def __call__(self, event: Event) -> str | None:
        """The note to show after ``event``, if any."""
        if isinstance(event, ModelCallStarted):
            self._offered = self._offered and event.tools > 0
        elif isinstance(event, ModelCallEnded):
            self._called = self._called or bool(event.message.tool_calls)
            self._stopped = event.message.finish is Finish.STOP
        elif isinstance(event, TurnEnded):
            ignored = self._offered and not self._called and self._stopped
            self._reset()
            if ignored and self.enabled and not self.said:
                self.said = True
                return IGNORED_TOOLS_NOTE
        return None
