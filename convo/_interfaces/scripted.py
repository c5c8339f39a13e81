"""User interfaces for tests and offline runs."""

from __future__ import annotations

from collections.abc import Iterable

from .._approval import Approval
from .._messages import Message, ToolCall
from .._session import Session
from .base import UserInterface

HANDBACK = "/handback"
OPERATOR = "operator"
"""The ``metadata["author"]`` of the messages a scripted or terminal operator says."""
YES = frozenset({"y", "yes"})
NO = frozenset({"", "n", "no"})


def typed_approval(answer: str) -> Approval:
    """An approval from text as typed at the terminal: ``"y"``/``"yes"``, ``"n"``/``"no"``/
    empty, or any other text, which rejects with that text as the reason."""
    text = answer.strip()
    if text.lower() in YES:
        return Approval(True)
    return Approval(False) if text.lower() in NO else Approval(False, text)


class ScriptedInterface(UserInterface):
    """Answers with the given replies, in order; running out ends the run with ``stopped``.

    ``approvals`` answers tool calls that need approval, in order (each a bool, an
    ``Approval``, or text as typed at the terminal: ``"y"``, ``"n"`` or a reason to reject);
    running out of them also ends the run ``stopped``.

    ``operator`` answers a handoff (the ``handoff`` tool): from the handoff on, an operator
    line (an assistant message with ``metadata["author"] = "operator"``), then the user's
    next reply, in turn; the entry ``"/handback"``, or running out of operator lines (or of
    replies, at the user's turn), hands the conversation back to the bot.
    """

    __slots__ = ("approvals", "asked", "asked_approvals", "operator", "operator_said",
                 "replies")

    def __init__(self, replies: Iterable[str] = (),
                 approvals: Iterable[Approval | bool | str] = (), *,
                 operator: Iterable[str] = ()) -> None:
        self.replies: list[str] = list(replies)
        self.approvals: list[Approval | bool | str] = list(approvals)
        self.operator: list[str] = list(operator)
        self.asked: list[str | None] = []
        self.asked_approvals: list[ToolCall] = []
        self.operator_said = 0  # operator entries used ("/handback" included)

    def hand_off(self, session: Session, reason: str | None, said: int) -> Message | None:
        if said % 2:  # the user's turn: their next reply
            if len(self.asked) >= len(self.replies):
                return None
            self.asked.append(None)
            return Message("user", self.replies[len(self.asked) - 1])
        if self.operator_said >= len(self.operator):
            return None
        line = self.operator[self.operator_said]
        self.operator_said += 1
        if line.strip() == HANDBACK:
            return None
        return Message("assistant", line, metadata={"author": OPERATOR})

    async def ahand_off(self, session: Session, reason: str | None, said: int
                        ) -> Message | None:
        return self.hand_off(session, reason, said)

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        index = len(self.asked)
        self.asked.append(instruction)
        if index >= len(self.replies):
            raise EOFError(
                f"ScriptedInterface ran out of replies ({len(self.replies)} scripted)"
            )
        return self.replies[index]

    def approve(self, session: Session, call: ToolCall) -> Approval | bool:
        index = len(self.asked_approvals)
        self.asked_approvals.append(call)
        if index >= len(self.approvals):
            raise EOFError(f"ScriptedInterface ran out of approvals ({len(self.approvals)} "
                           f"scripted) at the call {call.name}({call.arguments_json()})")
        answer = self.approvals[index]
        # A bool or an Approval is answered as scripted: the runner reads it (``Approval.of``,
        # once); only typed text is this interface's to read.
        return typed_approval(answer) if isinstance(answer, str) else answer

    # Scripted answers never block: no worker thread under arun().
    async def aask(self, session: Session, instruction: str | None, default: str | None) -> str:
        return self.ask(session, instruction, default)

    async def aapprove(self, session: Session, call: ToolCall) -> Approval | bool:
        return self.approve(session, call)

    @property
    def remaining(self) -> int:
        return max(0, len(self.replies) - len(self.asked)) + max(
            0, len(self.approvals) - len(self.asked_approvals)) + max(
            0, len(self.operator) - self.operator_said)

    def assert_complete(self) -> None:
        """Fail if scripted replies or approvals were left unused."""
        replies_left = max(0, len(self.replies) - len(self.asked))
        if replies_left:
            raise AssertionError(
                f"ScriptedInterface: {replies_left} of {len(self.replies)} replies were not "
                f"used; next unused: {self.replies[len(self.asked)]!r}"
            )
        approvals_left = max(0, len(self.approvals) - len(self.asked_approvals))
        if approvals_left:
            raise AssertionError(
                f"ScriptedInterface: {approvals_left} of {len(self.approvals)} approvals were "
                f"not used; next unused: {self.approvals[len(self.asked_approvals)]!r}"
            )
        operator_left = max(0, len(self.operator) - self.operator_said)
        if operator_left:
            raise AssertionError(
                f"ScriptedInterface: {operator_left} of {len(self.operator)} operator lines "
                f"were not used; next unused: {self.operator[self.operator_said]!r}"
            )


class EchoMockInterface(UserInterface):
    """Answers with the last message's content (empty when there is none)."""

    __slots__ = ()

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        last = session.last_message
        return last.text if last is not None else (default or "")

    async def aask(self, session: Session, instruction: str | None, default: str | None) -> str:
        return self.ask(session, instruction, default)
