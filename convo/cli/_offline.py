"""``convo chat``'s model without an API key: an offline stand-in that echoes what you type.
A module of its own so that building ``convo chat``'s parser imports no model classes."""

from __future__ import annotations

from collections.abc import Sequence

from .._messages import Message
from .._parts import shown
from ..models._base import DeltaCallback, SyncModel, ToolSchemas


class OfflineModel(SyncModel):
    """The stand-in without an API key: echoes the last user message, streamed word by word."""

    __slots__ = ()

    def complete(self, messages: Sequence[Message], tools: ToolSchemas = (), *,
                 on_delta: DeltaCallback | None = None) -> Message:
        said = next((shown(m.content) for m in reversed(messages) if m.role == "user"), "")
        text = f"(offline mock model) You said: {said}"
        if on_delta is not None:
            for i, word in enumerate(text.split(" ")):
                on_delta(word if i == 0 else f" {word}")
        return Message("assistant", text)
