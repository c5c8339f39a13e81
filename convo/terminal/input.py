"""CLIInterface: asks the user in the terminal, with line editing and history."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

from ..approval import Approval
from ..interfaces.scripted import approval_of
from ..messages import ToolCall
from ..session import Session

EXIT_COMMANDS: Final = frozenset({"/exit", "/quit"})
HISTORY_ENV: Final = "CONVO_HISTORY"


def history_path() -> Path | None:
    """Where typed lines are kept between runs: ``$CONVO_HISTORY`` (empty: nowhere), else
    ``~/.convo_history``."""
    value = os.environ.get(HISTORY_ENV)
    if value is None:
        return Path.home() / ".convo_history"
    return Path(value) if value else None


class CLIInterface:
    """Reads a line from the terminal. ``/exit``, ``/quit`` and Ctrl-D end the run.

    In a terminal, input has line editing and history (stdlib ``readline``: arrow keys,
    Ctrl-R; kept in ``~/.convo_history``, see ``history_path``). When input is not a terminal
    (a pipe), lines are read without a prompt, and the printer shows them instead.
    """

    __slots__ = ("_history", "_readline_ready", "prompt")

    def __init__(self, prompt: str = "You: ") -> None:
        self.prompt = prompt
        self._readline_ready = False
        self._history: Path | None = None

    @property
    def echoes_input(self) -> bool:
        """Whether what the user types is already on the screen."""
        return _interactive()

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        if instruction:
            print(instruction, flush=True)
        if not _interactive():
            line = sys.stdin.readline()
            if not line:
                raise EOFError("end of input")
            text = line.rstrip("\n")
        else:
            self._setup_readline()
            hint = f"[{default}] " if default else ""
            try:
                text = input(f"{self.prompt}{hint}")
            except (EOFError, KeyboardInterrupt):
                print(flush=True)  # the cursor is still on the prompt's line
                raise
            self._save_history()
        if text.strip() in EXIT_COMMANDS:
            raise EOFError(text.strip())
        return text

    def approve(self, session: Session, call: ToolCall) -> Approval:
        """Show the call and ask ``y`` / ``n`` / a reason. Ctrl-C or Ctrl-D here rejects; it
        does not end the chat."""
        print(f"Approve {call.name}({_shown_arguments(call)})?", flush=True)
        try:
            if _interactive():
                self._setup_readline()
                answer = input("[y]es / [n]o / or type a reason to reject: ")
            else:
                answer = sys.stdin.readline()
                if not answer:
                    raise EOFError("end of input")
        except (EOFError, KeyboardInterrupt):
            _calm_interrupts()
            print("\n(rejected)", flush=True)
            return Approval(False)
        return approval_of(answer)

    async def aapprove(self, session: Session, call: ToolCall) -> Approval:
        import asyncio  # only async runs need it, and it is slow to import

        return await asyncio.to_thread(self.approve, session, call)

    async def aask(self, session: Session, instruction: str | None, default: str | None) -> str:
        import asyncio  # only async runs need it, and it is slow to import

        return await asyncio.to_thread(self.ask, session, instruction, default)

    def _setup_readline(self) -> None:
        if self._readline_ready:
            return
        self._readline_ready = True
        try:
            import readline  # importing it gives input() line editing and history
        except ImportError:  # Windows without pyreadline: plain input()
            return
        self._history = history_path()
        if self._history is not None:
            try:
                readline.read_history_file(self._history)
            except OSError:
                pass  # none yet
            readline.set_history_length(1000)

    def _save_history(self) -> None:
        if self._history is None:
            return
        import readline  # importing it gives input() line editing and history

        try:
            readline.write_history_file(self._history)
        except OSError:
            self._history = None  # not writable: keep history for this run only


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _shown_arguments(call: ToolCall, limit: int = 400) -> str:
    """The call's arguments as indented JSON when short enough to read, cut when long."""
    text = call.arguments_json()
    if len(text) > 60:
        import json

        text = json.dumps(call.arguments, ensure_ascii=False, indent=2)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _calm_interrupts() -> None:
    """A Ctrl-C answered here is spent: the command's second-Ctrl-C-quits count starts again."""
    import signal

    handler = signal.getsignal(signal.SIGINT)
    reset = getattr(handler, "reset", None)
    if callable(reset):
        reset()
