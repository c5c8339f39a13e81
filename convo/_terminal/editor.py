"""The line editor of the chat prompt, on prompt_toolkit (imported only when a terminal chat
asks its first question: ``import convo`` does not load it).

Enter sends; Alt+Enter or Esc Enter adds a line; a paste arrives as one message however many
lines it has; a message that starts with a line of ``\"\"\"`` goes on until the closing
``\"\"\"``; Tab completes slash commands (and the path after ``/attach``); Up/Down and
Ctrl-R search earlier messages, kept in a file between sessions. Ctrl-C clears what is
typed, and at an empty prompt ends the prompt with ``KeyboardInterrupt``; Ctrl-D at an empty
prompt ends it with ``EOFError``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from .slash_commands import ALIASES, COMMANDS

FENCE = '"""'


def open_block(text: str) -> bool:
    """Whether ``text`` is a ``\"\"\"`` block still waiting for its closing ``\"\"\"``."""
    text = text.strip()
    return text.startswith(FENCE) and (len(text) < 2 * len(FENCE) or not text.endswith(FENCE))


def unfence(text: str) -> str:
    """The message inside a ``\"\"\"`` block (other text as it is)."""
    stripped = text.strip()
    if stripped.startswith(FENCE) and stripped.endswith(FENCE) and len(stripped) >= 6:
        return stripped[3:-3].strip("\n")
    return text


class SlashCompleter(Completer):
    """Completes ``/com`` to the slash commands, with what each does, and the path after
    ``/attach``."""

    def __init__(self) -> None:
        self._paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: CompleteEvent
                        ) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/attach ") and "\n" not in before:
            path = before[len("/attach "):]
            yield from self._paths.get_completions(Document(path, len(path)), complete_event)
            return
        if not before.startswith("/") or " " in before or "\n" in before:
            return
        for name, (args, what) in {**COMMANDS, **{a: ("", f"= /{n}") for a, n in
                                                   ALIASES.items()}}.items():
            if name.startswith(before[1:].lower()):
                yield Completion(f"/{name}", start_position=-len(before),
                                 display_meta=f"{args} {what}".strip())


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)  # Tab chose it: Enter sends it
        if open_block(buffer.text):
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return keys


class Editor:
    """One prompt_toolkit session for the whole chat (its history lives as long as it)."""

    def __init__(self, history_file: Path | None) -> None:
        self._answers: PromptSession[str] | None = None
        self._edits: PromptSession[str] | None = None
        history: History = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history_file.touch()
                history = FileHistory(str(history_file))
            except OSError:
                pass  # not writable: this session's history only
        self.session: PromptSession[str] = PromptSession(
            history=history, completer=SlashCompleter(), complete_while_typing=True,
            key_bindings=_bindings(), reserve_space_for_menu=4,
            prompt_continuation=lambda width, line, wrapped: "." * (width - 1) + " ",
        )

    def read(self, prompt: str, typed: str = "") -> str:
        """A message (or a command); ``typed``: already in the line, as if typed."""
        return unfence(self.session.prompt(prompt, default=typed))

    def edit(self, prompt: str, text: str) -> str:
        """A line read with ``text`` already typed, to edit (``/edit``): Enter takes it,
        Ctrl-C gives it up (``KeyboardInterrupt``, whatever is typed), Ctrl-D too
        (``EOFError``)."""
        if self._edits is None:
            self._edits = PromptSession()
        return unfence(self._edits.prompt(prompt, default=text))

    def answer(self, prompt: str) -> str:
        """A short answer to a question of the chat (an approval): one line, kept out of the
        message history. Ctrl-C ends it with ``KeyboardInterrupt``, Ctrl-D with ``EOFError``."""
        if self._answers is None:
            self._answers = PromptSession()
        return self._answers.prompt(prompt)
