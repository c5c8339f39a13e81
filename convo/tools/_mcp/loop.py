"""The process's background event loop for MCP sessions (in a daemon thread), and the hand-off
of a coroutine to the loop a session lives on.

An MCP client session is bound to the event loop it was opened on. A server's session lives on
the loop of its first async user (``home.py``) or, for a blocking ``Runner.run()``, on this
background loop; a caller on another loop or thread hands its coroutine to the session's loop —
a blocking caller waits on a ``concurrent.futures.Future`` (``submit``), an async caller awaits
a future of its own loop (``hand_off``: a call is two wake-ups, one each way, and nothing
more).

A process that forks (a server's workers) gets a new loop in the child: the parent's thread
does not exist there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_pid: int | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's MCP loop, started on first use."""
    global _loop, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or not _loop.is_running():
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            loop.call_soon(ready.set)
            thread = threading.Thread(target=loop.run_forever, name="convo MCP", daemon=True)
            thread.start()
            ready.wait()
            _loop, _pid = loop, os.getpid()
        return _loop


def submit(coro: Coroutine[Any, Any, T], target: asyncio.AbstractEventLoop | None = None
           ) -> Future[T]:
    """Run ``coro`` on ``target`` (by default the MCP loop); its future, for any thread or
    loop to wait on."""
    return asyncio.run_coroutine_threadsafe(coro, target or background_loop())


def hand_off(coro: Coroutine[Any, Any, T], target: asyncio.AbstractEventLoop | None = None
             ) -> asyncio.Future[T]:
    """Run ``coro`` on ``target`` (by default the MCP loop), from another running loop: a
    future of the caller's loop for its result. Cancelling that future (the caller's timeout,
    or its own cancellation) cancels the coroutine. Cheaper than ``run_coroutine_threadsafe``
    + ``wrap_future``, which settle a thread-safe future in between, under its lock, on every
    call."""
    hop = _Hop(asyncio.get_running_loop(), target or background_loop(), coro)
    hop.mcp.call_soon_threadsafe(hop.start)
    return hop.future


class _Hop(Generic[T]):
    """One coroutine handed to another loop (``mcp``: the session's) and its result handed
    back (see ``hand_off``)."""

    __slots__ = ("caller", "coro", "future", "mcp", "task")

    def __init__(self, caller: asyncio.AbstractEventLoop, mcp: asyncio.AbstractEventLoop,
                 coro: Coroutine[Any, Any, T]) -> None:
        self.caller, self.mcp, self.coro = caller, mcp, coro
        self.future: asyncio.Future[T] = caller.create_future()
        self.future.add_done_callback(self._given_up)
        self.task: asyncio.Task[T] | None = None

    def start(self) -> None:  # on the target loop
        self.task = self.mcp.create_task(self.coro)
        self.task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[T]) -> None:  # on the target loop
        if not task.cancelled():
            task.exception()  # retrieved here, so that a result nobody waits for is not logged
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
            self.caller.call_soon_threadsafe(self._settle, task)

    def _settle(self, task: asyncio.Task[T]) -> None:  # on the caller's loop
        if self.future.done():
            return
        if task.cancelled():
            self.future.cancel()
        elif (exc := task.exception()) is not None:
            self.future.set_exception(exc)
        else:
            self.future.set_result(task.result())

    def _given_up(self, future: asyncio.Future[T]) -> None:  # on the caller's loop
        if future.cancelled():
            with contextlib.suppress(RuntimeError):  # the target loop is closed
                self.mcp.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:  # on the target loop, after ``start`` (queued after it)
        if self.task is not None:
            self.task.cancel()


def started() -> bool:
    """Whether this process has an MCP loop running."""
    return _loop is not None and _pid == os.getpid() and _loop.is_running()


def is_background(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is this process's MCP loop."""
    return loop is _loop and _pid == os.getpid()


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, if any (where a blocking call must not wait)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
