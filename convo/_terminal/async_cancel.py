"""Ctrl-C under ``await CommandLineRunner(...).arun()``: the same cancel as under ``run()``.

Under asyncio a ``KeyboardInterrupt`` may not be raised just anywhere: raised while the event
loop waits, it would end the loop (and ``asyncio.run``'s own handler cancels the whole run).
So ``arun()`` installs ``LoopInterrupts`` for its duration, and a model call or a batch of tools
runs as tasks in a ``cancellable`` scope. The first Ctrl-C

- during a model call or a tool: when the loop's thread is inside the call's own code (a
  model or tool that blocks), raises ``KeyboardInterrupt`` there, as ``run()`` does; when the
  call awaits, cancels its tasks. Either way the call's result is ``CUT``, and the run makes of
  it what ``run()`` makes of a ``KeyboardInterrupt`` (``convo._terminal.cancel``; the scopes and
  the cut are the one cancel's, ``convo._run.cancel``).
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
from typing import Any

from .._run.cancel import CUT, Scope, cut, cut_off
from .interrupts import Interrupts

__all__ = ["CUT", "LoopInterrupts", "asking", "cancellable", "handling_interrupts", "installed"]


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
        cut(self.scopes)

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
    ``CUT`` (``convo._run.cancel.cut_off``, where ``LoopInterrupts`` finds it)."""
    interrupts = installed()
    return await cut_off(calls, [] if interrupts is None else interrupts.scopes, ctrl_c=True)
