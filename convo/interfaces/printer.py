"""ConsolePrinter: shows a conversation in the terminal as it happens (an on_event handler)."""

from __future__ import annotations

import sys
from typing import TextIO

from ..events import Event, MessageAdded, RunEnded, TextDelta, ToolCallEnded
from ..messages import Message

LABELS = {"system": "System", "user": "You", "assistant": "Assistant", "tool": "Tool"}


class ConsolePrinter:
    """Prints each message with who is speaking, streamed text as it arrives, and the outcome.

    Messages the user typed are not printed again (``skip_next_user``).
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.skip_next_user = False
        self._streaming = False

    def write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def start(self) -> None:
        self.write("--- conversation started (/exit or Ctrl-D to quit) ---\n")

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if not self._streaming:
                self.write(f"{LABELS['assistant']}: ")
                self._streaming = True
            self.write(event.text)
        elif isinstance(event, MessageAdded):
            self._message(event.message)
        elif isinstance(event, ToolCallEnded):
            pass  # shown as the tool message
        elif isinstance(event, RunEnded):
            self.write(f"--- conversation {event.outcome.describe()} ---\n")

    def _message(self, message: Message) -> None:
        if self._streaming and message.role == "assistant":
            self._streaming = False
            self.write("\n")
            self._calls(message)
            return
        if message.role == "user" and self.skip_next_user:
            self.skip_next_user = False
            return
        if message.role == "tool":
            self.write(f"  ↳ {message.name or 'tool'}: {_one_line(message.content)}\n")
            return
        if message.content:
            self.write(f"{LABELS[message.role]}: {message.content}\n")
        self._calls(message)

    def _calls(self, message: Message) -> None:
        for call in message.tool_calls:
            self.write(f"  → {call.name}({_one_line(call.arguments_json())})\n")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
