"""``convo run --demo``: the bot file's ``demo_input`` and ``demo_approvals`` answer in place of
the keyboard, and the screen says what they answered, and why the run stops when they run out
(it would otherwise stop as if the user had quit, with nothing said)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._approval import Approval
from .._interfaces.scripted import ScriptedInterface
from .._messages import ToolCall
from .._session import Session


class DemoInterface(ScriptedInterface):
    """A ``ScriptedInterface`` that shows each approval it gives (typed answers show
    themselves, as the user's messages) and says on screen when its script runs out.

    ``path`` is the bot file (named in what is said); ``note`` shows a line about the
    conversation (the printer's ``note``), ``say`` a line in it (the printer's ``say``).
    """

    __slots__ = ("note", "path", "say")

    def __init__(self, path: str, replies: Sequence[str],
                 approvals: Sequence[Approval | bool | str], *,
                 note: Callable[[str], None], say: Callable[[str], None]) -> None:
        super().__init__(replies, approvals)
        self.path = path
        self.note = note
        self.say = say

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        try:
            return super().ask(session, instruction, default)
        except EOFError:
            self.note(f"demo: {self.path}'s demo_input is used up ({_lines(self.replies)}): "
                      "the demo stops here")
            raise

    def approve(self, session: Session, call: ToolCall) -> Approval:
        shown = f"Approve {call.name}({call.arguments_json()})?"
        try:
            approval = Approval.of(super().approve(session, call))
        except EOFError:
            self.say(shown)
            why = (f"'s demo_approvals ran out ({_answers(self.approvals)}) at this call"
                   if self.approvals else " defines no demo_approvals to answer this call")
            self.note(f"demo: {self.path}{why}: the demo stops here; add an answer to "
                      "demo_approvals, or run without --demo to answer yourself")
            raise
        self.say(f"{shown} {_answer(self.approvals[len(self.asked_approvals) - 1], approval)}"
                 " (demo_approvals)")
        return approval


def _answer(given: Approval | bool | str, approval: Approval) -> str:
    """The scripted answer as it would have been typed."""
    if isinstance(given, str) and given.strip():
        return given.strip()
    word = "y" if approval.approved else "n"
    return f"{word}: {approval.reason}" if approval.reason else word


def _lines(items: Sequence[object]) -> str:
    return f"{len(items)} line" + ("" if len(items) == 1 else "s")


def _answers(items: Sequence[object]) -> str:
    return f"{len(items)} answer" + ("" if len(items) == 1 else "s")
