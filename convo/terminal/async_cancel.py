"""Ctrl-C under ``await CommandLineRunner(...).arun()``: the same cancel as under ``run()``.

Under asyncio a ``KeyboardInterrupt`` may not be raised just anywhere: raised while the event
loop waits, it would end the loop (and ``asyncio.run``'s own handler cancels the whole run).
So ``arun()`` installs ``LoopInterrupts`` for its duration, and a model call or a batch of tools
runs as tasks in a ``cancellable`` scope. The first Ctrl-C

- during a model call or a tool: when the loop's thread is inside the call's own code (a
  model or tool that blocks), raises ``KeyboardInterrupt`` there, as ``run()`` does; when the
  call awaits, cancels its tasks. Either way the call's result is ``CUT``, and the run makes of
  it what ``run()`` makes of a ``KeyboardInterrupt`` (``convo.terminal.cancel``).
- while ``CLIInterface`` waits for a line in a thread (``asking``): nothing. Its line editor
  reads Ctrl-C as a key; a signal comes only in the instant before the editor is drawn, or
  when input is read without the editor (stdout is not a terminal): Ctrl-D still leaves.
- anywhere else: raises ``KeyboardInterrupt`` when the run's code holds the thread (a user
  interface whose ``ask`` blocks the loop, say), else cancels the run's task (an interface's
  own ``aask``, say); either way the run ends with status ``stopped``, as under ``run()``.

A second Ctrl-C before the cancel is done quits at once (``Interrupts``).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Final

from .interrupts import Interrupts

CUT: Final = object()  # the result of a call that Ctrl-C cancelled


class Scope:
    """The tasks of one model call or one batch of tools, which Ctrl-C cancels together."""

    __slots__ = ("hit", "tasks")

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []
        self.hit = False  # Ctrl-C was pressed during it

    def cancel(self) -> None:
        """On the loop: cancel the tasks that have not finished (not the one running now)."""
        self.hit = True
        running = asyncio.current_task()
        for task in self.tasks:
            if task is not running and not task.done():
                task.cancel()


class LoopInterrupts(Interrupts):
    """The SIGINT handler of ``arun()``, for the run's task on its loop (module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        super().__init__()
        self.loop = loop
        self.task = task
        self.scopes: list[Scope] = []
        self.asking = 0  # prompts waiting in a thread
        self.stopped = False  # Ctrl-C cancelled the run's task

    def first(self, frame: FrameType | None) -> None:
        running = asyncio.current_task(self.loop)
        if self.scopes:
            for scope in self.scopes:
                if running in scope.tasks:  # the call's own code holds the thread
                    scope.hit = True
                    raise KeyboardInterrupt
            self.loop.call_soon_threadsafe(self._cancel_scopes)
        elif running is self.task:  # the run's own code (or a prompt that blocks the loop)
            raise KeyboardInterrupt  # as in run()
        elif self.asking:
            self.reset()  # the prompt's line editor reads Ctrl-C as a key
        else:
            self.loop.call_soon_threadsafe(self._stop)

    def _cancel_scopes(self) -> None:
        for scope in self.scopes:
            scope.cancel()

    def _stop(self) -> None:
        if self.scopes:  # a call began since: it is what Ctrl-C cancels
            self._cancel_scopes()
        elif not self.task.done() and not self.asking:
            self.stopped = True
            self.task.cancel()


def installed() -> LoopInterrupts | None:
    """The ``LoopInterrupts`` handling SIGINT for the running loop, if any."""
    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, LoopInterrupts) and handler.loop is asyncio.get_running_loop():
        return handler
    return None


@contextmanager
def handling_interrupts() -> Iterator[LoopInterrupts | None]:
    """Install ``LoopInterrupts`` for the current task while the block runs (only on the main
    thread, where signals arrive; an outer run's handler is kept), then restore the previous
    handler."""
    if threading.current_thread() is not threading.main_thread() or installed() is not None:
        yield None
        return
    task = asyncio.current_task()
    assert task is not None, "arun() runs in a task"
    interrupts = LoopInterrupts(asyncio.get_running_loop(), task)
    previous = signal.signal(signal.SIGINT, interrupts)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def asking() -> Iterator[None]:
    """While a prompt in a thread waits for a line, Ctrl-C is its line editor's key."""
    interrupts = installed()
    if interrupts is None:
        yield
        return
    interrupts.asking += 1
    try:
        yield
    finally:
        interrupts.asking -= 1


async def cancellable(calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """Make and await ``calls`` at once, each in a task of its own, and return their results
    in order; a call that Ctrl-C cancelled (or that never started because of it) gives
    ``CUT``."""
    scope = Scope()

    async def guarded(call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await call()
        except KeyboardInterrupt:  # raised in the call's own (blocking) code
            scope.cancel()
            return CUT
        except asyncio.CancelledError:
            if scope.hit:
                return CUT
            raise

    scope.tasks = [asyncio.ensure_future(guarded(call)) for call in calls]
    interrupts = installed()
    if interrupts is not None:
        interrupts.scopes.append(scope)
    try:
        await asyncio.wait(scope.tasks)
    except asyncio.CancelledError:  # the run itself is cancelled: so are its calls
        for task in scope.tasks:
            task.cancel()
        raise
    finally:
        if interrupts is not None:
            interrupts.scopes.remove(scope)
    return [CUT if task.cancelled() else task.result() for task in scope.tasks]
