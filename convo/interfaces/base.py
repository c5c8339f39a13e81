"""The UserInterface protocol: how a runner asks the user for a message."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..session import Session


@runtime_checkable
class UserInterface(Protocol):
    """Answers ``UserTemplate``s that have no fixed content.

    ``ask`` returns the user's text. Raising ``EOFError`` (end of input, ``/exit``) or
    ``KeyboardInterrupt`` ends the run with status ``stopped``. An interface that blocks (a
    terminal) may also define ``async def aask(...)`` for the async runner.
    """

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str: ...
