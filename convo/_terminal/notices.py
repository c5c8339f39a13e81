"""Notes the terminal adds about a run, worked out from its events."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from .._reply import Finish
from ..events import Event, ModelCallEnded, ModelCallStarted, TurnEnded

IGNORED_TOOLS_NOTE = (
    "the model was offered tools in this turn, called none and stopped normally. If it "
    "should have called one, the server may be ignoring tools (llama.cpp without a "
    "tool-calling chat format, for one): try --tool-format text (see docs/local-models.md)"
)


def may_ignore_tools(model: Any) -> bool:
    """Whether ``IgnoredTools`` is meant for ``model``: tools sent natively to an
    OpenAI-compatible server other than OpenAI's own — a local server may accept ``tools``
    and ignore them (llama.cpp without a tool-calling chat format). OpenAI's API, the other
    providers, the offline models and the text tool format never ignore them: there a turn
    without a call (a "hello") is only a turn that needed none."""
    if getattr(model, "tool_format", None) != "native":
        return False
    base_url = getattr(model, "base_url", None) or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        return False
    return (urlsplit(str(base_url)).hostname or "") != "api.openai.com"


class IgnoredTools:
    """Says once per run that a turn offered tools and the server never produced a call:
    every model call of the turn offered tools, none came back with a call, the last ended
    with ``finish_reason`` ``stop`` (only real servers report one), and no call came in the
    run before (a server that called a tool once does not ignore them). ``enabled=False``
    (a model for which ``may_ignore_tools`` is false) never says it."""

    __slots__ = ("_called", "_offered", "_stopped", "enabled", "ever_called", "said")

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.said = False
        self.ever_called = False
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
            self.ever_called = self.ever_called or self._called
            self._stopped = event.message.finish is Finish.STOP
        elif isinstance(event, TurnEnded):
            ignored = self._offered and not self.ever_called and self._stopped
            self._reset()
            if ignored and self.enabled and not self.said:
                self.said = True
                return IGNORED_TOOLS_NOTE
        return None
