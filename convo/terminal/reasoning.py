"""A reasoning model's streamed reasoning, shown in the terminal.

The runner hands a model a plain text ``on_delta`` (no reasoning callback yet: issue 26 asks
the core to pass ``Deltas`` and emit ``ReasoningDelta`` itself); until it does, the terminal
wraps the model so that its reasoning reaches the printer as ``ReasoningDelta`` events.
Everything else passes through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..events import Event
from ..messages import Message
from ..models.base import DeltaCallback, Model, ToolSchemas
from ..models.deltas import Deltas, ReasoningDelta, reasoning_callback


class ShowsReasoning:
    """``model``, with its streamed reasoning handed to ``show`` (an on_event handler) as
    ``ReasoningDelta`` events, unless the runner's ``on_delta`` already takes reasoning."""

    def __init__(self, model: Model, show: Callable[[Event], None]) -> None:
        self.model = model
        self.show = show

    def _deltas(self, on_delta: DeltaCallback | None) -> DeltaCallback | None:
        if on_delta is None or reasoning_callback(on_delta) is not None:
            return on_delta
        show = self.show
        return Deltas(on_delta, lambda text: show(ReasoningDelta(text)))

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        return self.model.complete(messages, tools, on_delta=self._deltas(on_delta))

    async def acomplete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                        on_delta: DeltaCallback | None = None) -> Message:
        return await self.model.acomplete(messages, tools, on_delta=self._deltas(on_delta))

    def __getattr__(self, name: str) -> Any:  # model, tool_format, close(), ... as they are
        return getattr(self.model, name)
