"""CLIInterface: asks the user in the terminal, with a line editor, history and slash commands.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .._approval import Approval
from .._interfaces.base import UserInterface
from .._interfaces.scripted import HANDBACK, OPERATOR, typed_approval
from .._messages import Message, ToolCall
from .._parts import Content
from .._session import Session
from .cancel import drop_empty_cancelled
from .paths import input_history_path
from .slash_commands import Commands

FENCE = '"""'
OPERATOR_PROMPT = "Operator: "


class CLIInterface(UserInterface):
    """Reads what the user types; a ``/command`` is carried out and never sent to the model.

    When both input and output are a terminal, input has a full line editor (prompt_toolkit,
    see ``convo._terminal.editor``): multi-line messages, pasting, completion of ``/commands``,
    history kept between sessions. When only input is a terminal, lines are read with
    ``input()``; when input is not a terminal (a pipe), lines are read without a prompt, a
    ``\"\"\"`` line starts a multi-line message, and the printer shows what was read.

    ``/exit``, ``/quit`` and Ctrl-D end the run (``EOFError``). Ctrl-C at an empty prompt asks
    to press it again (or Ctrl-D) to leave; twice in a row ends the run. Empty lines are not
    sent (unless the question has a ``default``).
    """

    __slots__ = ("_editor", "_handed_off", "_readline_ready", "commands", "prompt",
                 "typed_ahead")

    def __init__(self, prompt: str = "You: ", commands: Commands | None = None) -> None:
        self.prompt = prompt
        self.commands = commands if commands is not None else Commands()
        self.commands.prefilled = self._prefilled
        self._editor: Any = None
        self._readline_ready = False
        self._handed_off = False  # answering as the operator now (the handoff tool)
        #: Commands typed during a reply (``convo._terminal.steering``): each is in the line
        #: of a later prompt, as typed, for Enter to carry out.
        self.typed_ahead: list[str] = []

    @property
    def echoes_input(self) -> bool:
        """Whether what the user types is already on the screen."""
        return _is_terminal(sys.stdin)

    def ask(self, session: Session, instruction: str | None, default: str | None) -> Content:
        if drop_empty_cancelled(session) and self.commands.changed is not None:
            self.commands.changed()
        if instruction:
            print(instruction, flush=True)
        hint = f"[{default}] " if default else ""
        sending = self.commands.sending
        if sending is not None:  # an edited message, sent first on its branch
            self.commands.sending = None
            if self.echoes_input:
                print(f"{self.prompt}{sending}", flush=True)
            return sending
        interrupted = False
        while True:
            pending = self.commands.pending()
            if pending:  # files /attach read, until the message they go with is sent
                self.commands.say(pending)
            try:  # a Ctrl-C between two prompts counts as one at the prompt
                text = self._read(f"{self.prompt}{hint}")
                interrupted = False
                if not text.strip():
                    if default is not None:
                        return text
                    continue
                answer = self.commands.handle(text, session)
                if answer is not None:
                    return answer
            except KeyboardInterrupt:
                if interrupted or not _is_terminal(sys.stdin):
                    raise
                interrupted = True
                self.commands.say("(press Ctrl-C again or Ctrl-D to leave)")

    def approve(self, session: Session, call: ToolCall) -> Approval:
        """Show the call and ask ``y`` / ``n`` / a reason. Ctrl-C or Ctrl-D here rejects; it
        does not end the chat."""
        print(f"Approve {call.name}({_shown_arguments(call)})?", flush=True)
        question = "[y]es / [n]o / or type a reason to reject: "
        editing = _is_terminal(sys.stdin) and _is_terminal(sys.stdout)
        try:
            if editing:
                answer = self._line_editor().answer(question)  # Ctrl-C is a key, not a race
            elif _is_terminal(sys.stdin):
                answer = input(question)
            else:
                answer = sys.stdin.readline()
                if not answer:
                    raise EOFError("end of input")
        except (EOFError, KeyboardInterrupt):
            _calm_interrupts()
            # The line editor ends its own line; input() leaves the cursor on the prompt's.
            print("(rejected)" if editing else "\n(rejected)", flush=True)
            return Approval(False)
        return typed_approval(answer)

    async def aapprove(self, session: Session, call: ToolCall) -> Approval:
        approval: Approval = await _in_thread(self.approve, session, call)
        return approval

    def hand_off(self, session: Session, reason: str | None, said: int) -> Message | None:
        """The model handed the conversation to a person: the person at the terminal answers
        as the operator (lines after ``Operator:``) until ``/handback`` (or Ctrl-D)."""
        if not self._handed_off:  # a new handoff, or one a continued chat goes on with
            self._handed_off = True
            why = f": {reason}" if reason else ""
            self.commands.say(f"(the bot handed the conversation to a person{why}. You answer "
                              f"as the operator now; {HANDBACK} gives it back to the bot)")
        while True:
            try:
                text = self._read(OPERATOR_PROMPT)
            except (EOFError, KeyboardInterrupt):
                _calm_interrupts()
                text = HANDBACK
            if text.strip() == HANDBACK:
                self._handed_off = False
                self.commands.say("(handed back to the bot)")
                return None
            if text.strip():
                return Message("assistant", text, metadata={"author": OPERATOR})

    async def ahand_off(self, session: Session, reason: str | None, said: int
                        ) -> Message | None:
        said_now: Message | None = await _in_thread(self.hand_off, session, reason, said)
        return said_now

    async def aask(self, session: Session, instruction: str | None, default: str | None
                   ) -> Content:
        answer: Content = await _in_thread(self.ask, session, instruction, default)
        return answer

    def _read(self, prompt: str) -> str:
        if not _is_terminal(sys.stdin):
            return _read_piped()
        if _is_terminal(sys.stdout):
            typed = self.typed_ahead.pop(0) if self.typed_ahead else ""
            text: str = self._line_editor().read(prompt, typed)
            return text
        self._setup_readline()
        try:
            return input(prompt)
        except (EOFError, KeyboardInterrupt):
            print(flush=True)  # the cursor is still on the prompt's line
            raise

    def _prefilled(self, prompt: str, text: str) -> str:
        """A line read with ``text`` already typed (``/edit``); Ctrl-C gives it up
        (``KeyboardInterrupt``). Without a terminal there is nothing to edit: ``""``."""
        if not _is_terminal(sys.stdin):
            return ""
        if _is_terminal(sys.stdout):
            edited: str = self._line_editor().edit(prompt, text)
            return edited
        self._setup_readline()
        return input(prompt)

    def _line_editor(self) -> Any:
        if self._editor is None:
            from .editor import Editor

            self._editor = Editor(input_history_path())
        return self._editor

    def _setup_readline(self) -> None:
        if not self._readline_ready:
            self._readline_ready = True
            try:
                import readline  # noqa: F401  (importing it gives input() line editing)
            except ImportError:  # Windows: plain input()
                pass


async def _in_thread(ask: Callable[..., Any], *args: Any) -> Any:
    """Wait for the user in a thread, so the loop goes on; Ctrl-C is the line editor's."""
    import asyncio  # only async runs need it, and it is slow to import

    from .async_cancel import asking

    with asking():
        return await asyncio.to_thread(ask, *args)


def _read_piped() -> str:
    line = sys.stdin.readline()
    if not line:
        raise EOFError("end of input")
    text = line.rstrip("\n")
    if text.strip() != FENCE:
        return text
    lines = []
    while True:  # a """ block: up to the closing """ (or the end of input)
        line = sys.stdin.readline()
        if not line or line.rstrip("\n").rstrip().endswith(FENCE):
            lines.append(line.rstrip("\n").rstrip()[: -len(FENCE)] if line else "")
            return "\n".join(lines).rstrip("\n")
        lines.append(line.rstrip("\n"))


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
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
