"""LoopGuard: ends a runaway agent turn (repeats, empty or trivial replies, echoes)."""

from __future__ import annotations

import attrs

from .._messages import Message, ToolCall
from .._session import RunStatus

Verdict = tuple[RunStatus, str]


@attrs.frozen(slots=True)
class LoopGuard:
    """Limits on one turn's replies; ``ToolingTemplate(loop_guard=None)`` switches it off.

    - the same reply text, or the same batch of tool calls, ``max_repeats`` times in a row
      → ``implicit_completion``;
    - ``max_empty`` empty or trivial (shorter than ``trivial_chars``) replies in a row →
      ``llm_empty_response_error`` when all were empty, else ``implicit_completion``;
    - with ``detect_echo``, a reply that only repeats the last tool result →
      ``implicit_completion``.
    """

    max_repeats: int = 3
    max_empty: int = 3
    trivial_chars: int = 10
    detect_echo: bool = True

    def watch(self) -> TurnWatch:
        """A fresh watcher for one turn."""
        return TurnWatch(self)


class TurnWatch:
    """The guard's counters for one turn."""

    __slots__ = ("all_empty", "empties", "guard", "last_key", "repeats")

    def __init__(self, guard: LoopGuard) -> None:
        self.guard = guard
        self.last_key: object = None
        self.repeats = 0
        self.empties = 0
        self.all_empty = True

    def verdict(self, reply: Message, text: str, last_tool_text: str | None) -> Verdict | None:
        """Why the turn must end after this reply (``text``: its text), or None."""
        guard = self.guard
        text = text.strip()
        if not reply.tool_calls and len(text) < guard.trivial_chars:
            self.last_key, self.repeats = None, 0
            self.empties += 1
            self.all_empty = self.all_empty and not text
            if guard.max_empty and self.empties >= guard.max_empty:
                if self.all_empty:
                    return (RunStatus.LLM_EMPTY_RESPONSE_ERROR,
                            f"{self.empties} empty replies in a row")
                return (RunStatus.IMPLICIT_COMPLETION,
                        f"{self.empties} empty or trivial replies in a row")
            return None
        self.empties, self.all_empty = 0, True
        # The text, or the calls (the same calls: the same names and arguments as JSON).
        key: object = reply.tool_calls or text
        last = self.last_key
        same = _same(key, last) if key.__class__ is tuple and last.__class__ is tuple else \
            key == last
        self.repeats = self.repeats + 1 if same else 1
        self.last_key = key
        if guard.max_repeats and self.repeats >= guard.max_repeats:
            what = "tool calls" if reply.tool_calls else "reply"
            return (RunStatus.IMPLICIT_COMPLETION,
                    f"the same {what} {self.repeats} times in a row")
        if (guard.detect_echo and not reply.tool_calls and last_tool_text
                and text == last_tool_text.strip()):
            return RunStatus.IMPLICIT_COMPLETION, "the reply only echoed the last tool result"
        return None


def _same(key: tuple[ToolCall, ...], last: tuple[ToolCall, ...]) -> bool:
    """Whether two batches of calls are the same; their arguments become JSON only when the
    names match (most replies differ from the last one sooner)."""
    if len(key) != len(last) or any(a.name != b.name for a, b in zip(key, last, strict=True)):
        return False
    return all(a.arguments_json() == b.arguments_json() for a, b in zip(key, last, strict=True))
