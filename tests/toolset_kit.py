"""Steps of the toolset tests in templates/ (toolsets of their own) and tools/ (MCP servers):
``ran`` runs a runner sync or async (the tests' ``mode``), ``tool_messages`` reads its tool
messages, and ``Between`` answers as a ``ScriptedInterface`` that does something of the
test's (a toolset brought back up, a server started again) before the second message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from convo import Runner, ScriptedInterface, Session


def ran(runner: Runner, mode: str, session: Session | None = None) -> Session:
    """``runner.run`` (``mode`` "run") or ``runner.arun`` ("arun"), from ``session``."""
    return runner.run(session) if mode == "run" else asyncio.run(runner.arun(session))


def tool_messages(session: Session) -> list[tuple[str, bool]]:
    """Each tool message's content, and whether it is an error."""
    return [(m.content, bool(m.metadata.get("error"))) for m in session.messages
            if m.role == "tool"]


class Between(ScriptedInterface):
    """Says ``replies`` in turn, calling ``between()`` after the first, before the second."""

    def __init__(self, replies: Sequence[str], between: Callable[[], object]) -> None:
        super().__init__(replies)
        self.between = between

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        if len(self.asked) == 1:
            self.between()
        return super().ask(session, instruction, default)
