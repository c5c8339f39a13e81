"""A line typed while the model answers goes to the run at once, as a steer (``Runner.steer``).

While a model call or a batch of tools runs, ``LineReader`` waits in a thread for whole lines
on the terminal. The terminal is in canonical mode then (the line editor has given it back), so
the kernel hands over nothing before Enter: a half-typed line stays where it was and the next
prompt shows it as typed (``convo._terminal.typeahead``), and echo stays off. A line ended with
Enter is handed to the run in progress; the printer shows it dimmed ("You (waiting): …") until
the run takes it — at its next safe point (before the model call that follows tool results),
so the model sees it in this turn, or as the answer to its next question — and then shows it as
the user's message. A line that starts with ``/`` is a command, not a message: it waits for the
next prompt, typed there. Empty lines are dropped.

Ctrl-C is untouched: the signal reaches the main thread as before (``convo._terminal.cancel``);
the reader only reads, and stops before the next prompt reads. Only when both input and output
are a terminal, on POSIX (the reader selects on the terminal and a pipe that wakes it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from .._messages import Message
from .._requests import AskUser, CallModel, RunTools
from .._run.stack import Forwarding
from ..tools._calls import ToolRun
from .cancel import drop_empty_cancelled

__all__ = ["LineReader", "Steering"]


class LineReader:
    """Reads whole lines typed on ``stream`` while ``watching()`` (nested: the outermost
    counts), each given to ``on_line`` in the reader's thread."""

    def __init__(self, on_line: Callable[[str], None], stream: TextIO | None = None,
                 output: TextIO | None = None) -> None:
        self.on_line = on_line
        self.stream = stream if stream is not None else sys.stdin
        self.output = output if output is not None else sys.stdout
        self._depth = 0
        self._thread: threading.Thread | None = None
        self._wake = -1  # the write end of the pipe that stops the thread

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        self._depth += 1
        if self._depth == 1:
            self._start()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._stop()

    def _start(self) -> None:
        fd = _canonical_terminal(self.stream, self.output)
        if fd is None:
            return
        woken, self._wake = os.pipe()
        self._thread = threading.Thread(target=self._read, args=(fd, woken), daemon=True,
                                        name="convo-typed-lines")
        self._thread.start()

    def _stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        os.write(self._wake, b"x")
        thread.join()
        os.close(self._wake)

    def _read(self, fd: int, woken: int) -> None:
        import select

        encoding = getattr(self.stream, "encoding", None) or "utf-8"
        try:
            while True:
                ready, _, _ = select.select([fd, woken], [], [])
                if woken in ready:
                    return
                data = os.read(fd, 65536)  # one whole line (canonical mode); b"": a Ctrl-D
                for line in data.decode(encoding, "replace").splitlines():
                    if line.strip():
                        self.on_line(line)
        except OSError:
            return  # the terminal went away: the next prompt will say so
        finally:
            os.close(woken)


def _canonical_terminal(stream: TextIO, output: TextIO) -> int | None:
    """The file descriptor of ``stream`` when it is a terminal in canonical mode and ``output``
    a terminal too (else None: a pipe, Windows, a terminal someone put in raw mode)."""
    try:
        import termios

        if not (stream.isatty() and output.isatty()):
            return None
        fd = stream.fileno()
        return fd if termios.tcgetattr(fd)[3] & termios.ICANON else None
    except (ImportError, AttributeError, ValueError, OSError):
        return None


class Steering(Forwarding):
    """In front of the terminal's answerers: lines typed during a model call or a batch of
    tools are read (``LineReader``) and given to ``steer``; before a question the run answers
    from what was steered, a cancelled empty reply is dropped as a prompt drops it
    (``interface``: the ``CLIInterface``, whose ``commands.changed`` says so to the
    history)."""

    __slots__ = ("interface", "reader", "session")

    def __init__(self, inner: Any, session: Any, interface: Any,
                 steer: Callable[[str], None]) -> None:
        super().__init__(inner)
        self.session = session
        self.interface = interface
        self.reader = LineReader(steer)

    def call_model(self, request: CallModel) -> Message:
        with self.reader.watching():
            return self.inner.answer(request)  # type: ignore[no-any-return]

    def run_tools(self, request: RunTools) -> list[ToolRun]:
        with self.reader.watching():
            return self.inner.answer(request)  # type: ignore[no-any-return]

    def ask_user(self, request: AskUser) -> Any:
        self._before_asking()
        return self.inner.answer(request)

    async def acall_model(self, request: CallModel) -> Message:
        with self.reader.watching():
            return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def arun_tools(self, request: RunTools) -> list[ToolRun]:
        with self.reader.watching():
            return await self.inner.aanswer(request)  # type: ignore[no-any-return]

    async def aask_user(self, request: AskUser) -> Any:
        self._before_asking()
        return await self.inner.aanswer(request)

    def _before_asking(self) -> None:
        if not self.session.queued:
            return  # the prompt asks, and drops a cancelled empty reply itself
        changed = getattr(getattr(self.interface, "commands", None), "changed", None)
        if drop_empty_cancelled(self.session) and changed is not None:
            changed()
