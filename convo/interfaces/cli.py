"""CLIInterface: asks the user in the terminal."""

from __future__ import annotations

import asyncio
from typing import Final

from ..session import Session

EXIT_COMMANDS: Final = frozenset({"/exit", "/quit"})


class CLIInterface:
    """Reads a line from the terminal. ``/exit``, ``/quit`` and Ctrl-D end the run."""

    __slots__ = ("prompt",)
    echoes_input = True  # what the user types is already on the screen

    def __init__(self, prompt: str = "You: ") -> None:
        self.prompt = prompt

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        if instruction:
            print(instruction, flush=True)
        hint = f"[{default}] " if default else ""
        text = input(f"{self.prompt}{hint}")
        if text.strip() in EXIT_COMMANDS:
            raise EOFError(text.strip())
        return text

    async def aask(self, session: Session, instruction: str | None, default: str | None) -> str:
        return await asyncio.to_thread(self.ask, session, instruction, default)
