"""ConsolePrinter: shows a conversation in the terminal as it happens (an on_event handler).

In a terminal it adds colour (unless ``NO_COLOR`` is set), a spinner while the model is
thinking, and renders replies as Markdown as they stream (``markdown=False``: raw text);
anywhere else (a pipe, a file) the output is plain text, one message per line.

(Just over 300 lines: how each event looks on screen is one dispatch, kept in one place.)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TextIO

from .._messages import Message
from .._parts import shown
from .._reply import Finish
from .._session import NO_USAGE, Usage
from ..events import (
    CaughtUp,
    ContextTrimmed,
    Event,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    ReasoningDelta,
    ReplyRetracted,
    ReplyTruncated,
    RunEnded,
    SubroutineEnded,
    SubroutineStarted,
    TextDelta,
    UserInput,
)
from .notices import IgnoredTools
from .typeahead import TypeAhead

LABELS: Final = {"system": "System", "user": "You", "assistant": "Assistant", "tool": "Tool"}
_COLORS: Final = {"system": "2", "user": "1;32", "assistant": "1;36", "tool": "2", "dim": "2",
                  "bold": "1"}
_FRAMES: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Spinner:
    """A one-line progress indicator, drawn by a thread until ``stop()`` erases it.

    It appears only after ``delay_s``, so a fast reply shows no flicker.
    """

    def __init__(self, stream: TextIO, lock: threading.Lock, delay_s: float = 0.15) -> None:
        self.stream = stream
        self.lock = lock
        self.delay_s = delay_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def start(self, label: str) -> None:
        self.stop()
        self._stop.clear()
        self._thread = threading.Thread(target=self._spin, args=(label,), daemon=True)
        self._thread.start()

    def _spin(self, label: str) -> None:
        started = time.monotonic()
        if self._stop.wait(self.delay_s):
            return
        frame = 0
        while not self._stop.is_set():
            elapsed = time.monotonic() - started
            with self.lock:
                if self._stop.is_set():
                    return
                self.stream.write(f"\r{_FRAMES[frame % len(_FRAMES)]} {label} {elapsed:.0f}s "
                                  "(Ctrl-C cancels)\x1b[K")
                self.stream.flush()
                self._drawn = True
            frame += 1
            self._stop.wait(0.1)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._drawn:
            self._drawn = False
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class ConsolePrinter:
    """Prints each message with who is speaking, streamed text as it arrives, and the outcome.

    Tool calls and results take one compact line each; the calls of tools that end a turn
    (``finish``, terminal tools: ``hidden_tools``) are not shown, their effect is. Token usage
    follows each reply in a dim line when the model reports it. Messages the user typed are
    not printed again (``skip_next_user``). ``fancy`` (default: the stream is a terminal)
    turns on colour and the spinner; ``markdown`` (default: ``fancy``) renders replies.
    A reasoning model's streamed reasoning is shown dimmed before its reply, on its own line
    (``show_reasoning=False``, ``--hide-reasoning``: not at all).
    """

    def __init__(self, stream: TextIO | None = None, *, fancy: bool | None = None,
                 markdown: bool | None = None, show_reasoning: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.show_reasoning = show_reasoning
        self._thinking = False  # a line of reasoning is being written
        self.fancy = is_terminal(self.stream) if fancy is None else fancy
        self.color = self.fancy and not os.environ.get("NO_COLOR")
        self.markdown = self.fancy if markdown is None else markdown
        self.skip_next_user = False
        self.hidden_tools: set[str] = set()
        self._streaming = False
        self._trimmed: ContextTrimmed | None = None
        self._cut_off = False
        self._usage: Usage = NO_USAGE
        self._view: Any = None
        self._lock = threading.Lock()
        #: One event, or one line typed during a reply (``waiting``), drawn at a time.
        self._screen = threading.RLock()
        self._waiting: list[str] = []  # lines typed during a plain reply: shown after it
        self.spinner = Spinner(self.stream, self._lock)
        self.ignored_tools = IgnoredTools()
        #: Keys typed while the model answers are not echoed (fancy output only); they wait for
        #: the prompt. ``quiet_until_prompt``: the prompt reads with the line editor, so echo
        #: stays off until the run ends (see ``convo._terminal.typeahead``).
        self.typeahead = TypeAhead()
        self.quiet_until_prompt = False
        #: A replay shows nothing until it catches up (a continued chat shows its last
        #: messages itself).
        self.quiet_replay = False
        self._subroutines = 0  # how deep in subroutines, whose messages come as no event

    @property
    def view(self) -> Any:
        """The Markdown renderer (``convo._terminal.markdown``; rich is loaded on first use)."""
        if self._view is None:
            from .markdown import MarkdownView

            self._view = MarkdownView(self.stream, color=self.color)
        return self._view

    def write(self, text: str) -> None:
        with self._lock:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:  # a lone surrogate, a character the stream lacks
                encoding = getattr(self.stream, "encoding", None) or "utf-8"
                self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
            self.stream.flush()

    def paint(self, text: str, style: str) -> str:
        return f"\x1b[{_COLORS[style]}m{text}\x1b[0m" if self.color else text

    def say(self, text: str) -> None:
        """An answer to the user (a slash command's), as it is."""
        self.write(text + "\n")

    def note(self, text: str) -> None:
        """A line about the conversation rather than in it."""
        self.write(self.paint(f"--- {text} ---", "dim") + "\n")

    def start(self) -> None:
        self.note("conversation started (/help for commands, /exit or Ctrl-D to quit)")

    def waiting(self, text: str, hand_over: Callable[[], object]) -> None:
        """A line the user typed during a reply: ``hand_over()`` gives it to the run, and it is
        shown dimmed until the run takes it (then it shows as the user's message;
        ``convo._terminal.steering``). Nothing is shown when ``hand_over`` raises."""
        with self._screen:  # the run may take it at once: its message is shown after this
            hand_over()
            self.aside(f"  {LABELS['user']} (waiting): {_one_line(text)}")

    def aside(self, line: str) -> None:
        """A dim line while a reply is being made: above a reply streaming as Markdown, after
        one streaming as plain text, else at once (over the spinner, which draws itself again
        below)."""
        with self._screen:
            if self._streaming and self.markdown:
                from rich.text import Text

                self.view.console.print(Text(line, style="dim"))  # above the live region
            elif self._streaming or self._thinking:
                self._waiting.append(line)  # not inside the line being written
            else:
                self.write(("\r\x1b[K" if self.fancy else "") + self.paint(line, "dim") + "\n")

    def _show_waiting(self) -> None:
        while self._waiting:
            self.write(self.paint(self._waiting.pop(0), "dim") + "\n")

    def __call__(self, event: Event) -> None:
        with self._screen:
            self._event(event)

    def _event(self, event: Event) -> None:
        # Why longer than 40 lines: one dispatch on the event's type, each branch a line or two.
        if self.quiet_replay:
            if isinstance(event, CaughtUp | RunEnded):
                self.quiet_replay = False
            if not isinstance(event, RunEnded):
                return
        notice = self.ignored_tools(event)
        if notice is not None:
            self.end_stream()
            self.note(notice)
        if isinstance(event, ModelCallStarted):
            if self.fancy:
                self.typeahead.hold()
                self.spinner.start("thinking…")
            return
        self.spinner.stop()
        if isinstance(event, ReasoningDelta):
            self._reasoning(event.text)
            return
        if self._thinking:  # the reasoning's line ends where anything else begins
            self._thinking = False
            self.write("\n")
            self._show_waiting()
        if isinstance(event, TextDelta):
            if self.markdown:
                self._streaming = True
                self.view.add(f"{LABELS['assistant']}:", event.text)
                return
            if not self._streaming:
                self.write(self._label("assistant"))
                self._streaming = True
            self.write(event.text)
        elif isinstance(event, MessageAdded) and not event.scope:  # a subroutine's: unshown
            self._message(event.message)
            if self._cut_off and event.message.role == "assistant":
                self._cut_off = False
                self.note("the reply was cut off at the model's token limit (max_tokens)")
        elif isinstance(event, ReplyTruncated):
            self._cut_off = True
        elif isinstance(event, ReplyRetracted):  # a guard took it back: its replacement follows
            self.end_stream()
            self.write(self.paint("  (the reply above was withdrawn by a guard)", "dim") + "\n")
        elif isinstance(event, ModelCallEnded):
            self._usage = event.usage  # shown after the reply, once it is a message
            if self._subroutines:  # a subroutine's reply becomes no MessageAdded: end it here
                self.end_stream()
        elif isinstance(event, SubroutineStarted):
            self._subroutines += 1
        elif isinstance(event, SubroutineEnded):
            self._subroutines = max(0, self._subroutines - 1)
        elif isinstance(event, RunEnded):
            self.typeahead.release()
            self.end_stream()
            self.note(f"conversation {event.outcome.describe()}")
        elif isinstance(event, CaughtUp):
            self._caught_up(event.replayed, event.saved)
        elif isinstance(event, ContextTrimmed):
            self._context_trimmed(event)
        elif isinstance(event, UserInput):
            self.skip_next_user = event.echoed

    def _reasoning(self, text: str) -> None:
        if not self.show_reasoning or not text:
            return
        if not self._thinking:
            self.end_stream()
            self._thinking = True
            text = "Thinking: " + text.lstrip()
        self.write(self.paint(text.replace("\n", " "), "dim"))

    def end_stream(self) -> None:
        """Finish a streamed line that never became a message (a cancelled call)."""
        if self._streaming:
            self._streaming = False
            if self.markdown:
                self.view.end()
            else:
                self.write("\n")
            self._show_waiting()

    def show(self, message: Message) -> None:
        """Print one message (for showing a saved conversation)."""
        self._message(message)

    def _label(self, role: str) -> str:
        return self.paint(f"{LABELS[role]}:", role) + " "

    def _message(self, message: Message) -> None:
        if self._streaming and message.role == "assistant":
            self.end_stream()
            self._after_reply(message)
            return
        self.end_stream()
        staff = message.role == "assistant" and "author" in message.metadata  # an operator's
        if (message.role == "user" or staff) and self.skip_next_user:
            self.skip_next_user = False
            return
        if staff:  # said during a handoff (typed at a pipe, or replayed)
            self.write(f"{self.paint('Operator:', 'assistant')} {shown(message.content)}\n")
            return
        if message.role == "tool":
            if message.name not in self.hidden_tools:
                line = f"  ↳ {message.name or 'tool'}: {_one_line(shown(message.content))}"
                self.write(self.paint(line, "tool") + "\n")
            return
        if message.content:
            if message.role == "assistant" and self.markdown:
                self.view.show(f"{LABELS['assistant']}:", shown(message.content))
            else:
                text = shown(message.content)
                if message.role == "system":
                    text = self.paint(text, "system")
                self.write(f"{self._label(message.role)}{text}\n")
        if message.role == "assistant":
            self._after_reply(message)

    def _after_reply(self, message: Message) -> None:
        """The reply's tool calls, whether it was cancelled, and the tokens it took."""
        if not self.quiet_until_prompt:
            self.typeahead.release()
        for call in message.tool_calls:
            if call.name not in self.hidden_tools:
                line = f"  → {call.name}({_one_line(call.arguments_json())})"
                self.write(self.paint(line, "tool") + "\n")
        if message.finish is Finish.CANCELLED:
            kept = "; the partial reply is kept" if message.content else ""
            self.write(self.paint(f"  (reply cancelled with Ctrl-C{kept})", "dim") + "\n")
        usage, self._usage = self._usage, NO_USAGE
        if usage:
            self.write(self.paint(f"  ({usage.prompt_tokens} tokens in, "
                                  f"{usage.completion_tokens} out)", "dim") + "\n")

    def _context_trimmed(self, event: ContextTrimmed) -> None:
        # Once per change: the calls of one turn usually leave out the same messages.
        last, self._trimmed = self._trimmed, event
        if last is None or (last.dropped, last.summarized) != (event.dropped, event.summarized):
            how = "summarised" if event.summarized else "not sent"
            self.note(f"context: {event.dropped} earlier messages {how}")

    def _caught_up(self, replayed: int, saved: int) -> None:
        if replayed < saved:
            self.note(f"the template took another path at saved message {replayed + 1} of "
                      f"{saved}: the rest of the saved conversation is dropped; live from here")
        else:
            self.note(f"resumed after {saved} saved messages; live from here")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
