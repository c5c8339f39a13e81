"""User interfaces for tests and offline runs."""

from __future__ import annotations

from collections.abc import Iterable

from ..session import Session


class ScriptedInterface:
    """Answers with the given replies, in order; running out ends the run with ``stopped``."""

    __slots__ = ("asked", "replies")

    def __init__(self, replies: Iterable[str] = ()) -> None:
        self.replies: list[str] = list(replies)
        self.asked: list[str | None] = []

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        index = len(self.asked)
        self.asked.append(instruction)
        if index >= len(self.replies):
            raise EOFError(
                f"ScriptedInterface ran out of replies ({len(self.replies)} scripted)"
            )
        return self.replies[index]

    @property
    def remaining(self) -> int:
        return max(0, len(self.replies) - len(self.asked))

    def assert_complete(self) -> None:
        """Fail if scripted replies were left unused."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedInterface: {self.remaining} of {len(self.replies)} replies were not "
                f"used; next unused: {self.replies[len(self.asked)]!r}"
            )


class EchoMockInterface:
    """Answers with the last message's content (empty when there is none)."""

    __slots__ = ()

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        last = session.last_message
        return last.content if last is not None else (default or "")
