"""UserInterface: how a runner asks the user for a message, or a person for an approval."""

from __future__ import annotations

from abc import ABCMeta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._approval import Approval
    from .._messages import Message, ToolCall
    from .._parts import Content
    from .._session import Session


class UserInterface(metaclass=ABCMeta):  # noqa: B024  (ABCMeta only for isinstance)
    """Answers ``UserTemplate``s that have no fixed content, and tool calls that need approval.

    Subclass it and implement ``ask``, which returns the user's text (or a tuple of parts:
    text with images or files, see docs/parts.md); raising ``EOFError``
    (end of input, ``/exit``) or ``KeyboardInterrupt`` ends the run with status ``stopped``.
    The rest has defaults: ``aask`` (under ``arun()``) runs ``ask`` in a worker thread, so a
    blocking ``ask`` never blocks the event loop; ``approve`` rejects (an unapproved tool
    never runs); ``aapprove`` runs ``approve`` in a worker thread; ``hand_off`` (the
    ``handoff`` tool) hands back at once. Any object with an ``ask``
    method works too (``isinstance`` checks only for that).
    """

    def ask(self, session: Session, instruction: str | None, default: str | None
            ) -> str | Content:
        raise NotImplementedError(f"{type(self).__name__} must implement ask(session, "
                                  "instruction, default)")

    async def aask(self, session: Session, instruction: str | None,
                   default: str | None) -> str | Content:
        import asyncio

        return await asyncio.to_thread(self.ask, session, instruction, default)

    def approve(self, session: Session, call: ToolCall) -> Approval | bool:
        from .._approval import Approval

        return Approval(False)

    async def aapprove(self, session: Session, call: ToolCall) -> Approval | bool:
        import asyncio

        return await asyncio.to_thread(self.approve, session, call)

    def hand_off(self, session: Session, reason: str | None, said: int) -> Message | None:
        """The conversation is handed to a person (the ``handoff`` tool): the next message
        said while handed off (``said`` so far), a user message or an operator's assistant
        message with ``metadata["author"]``; ``None`` hands it back. Default: nobody takes
        over, so it is handed back at once."""
        return None

    async def ahand_off(self, session: Session, reason: str | None, said: int
                        ) -> Message | None:
        import asyncio

        return await asyncio.to_thread(self.hand_off, session, reason, said)

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        # Before it was a base class it was a protocol: an object with `ask` still is one.
        if cls is UserInterface and callable(getattr(other, "ask", None)):
            return True
        return NotImplemented
