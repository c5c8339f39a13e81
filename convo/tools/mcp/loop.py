"""The one event loop that owns every MCP session of the process, in a daemon thread.

An MCP client session is bound to the event loop it was opened on, while convo runs tools
both under a blocking ``Runner.run()`` (a fresh ``asyncio.run`` per async tool call) and under
``arun()`` / serving (the caller's loop). So no session lives on a caller's loop: each lives on
this background loop, and callers hand coroutines to it — a blocking caller waits on a
``concurrent.futures.Future`` (``submit``), an async caller awaits a future of its own loop
(``hand_off``: a call is two wake-ups, one each way, and nothing more).

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


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Run ``coro`` on the MCP loop; its future, for any thread or loop to wait on."""
    return asyncio.run_coroutine_threadsafe(coro, background_loop())


def hand_off(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run ``coro`` on the MCP loop, from a running loop: a future of the caller's loop for its
    result. Cancelling that future (the caller's timeout, or its own cancellation) cancels the
    coroutine. Cheaper than ``run_coroutine_threadsafe`` + ``wrap_future``, which settle a
    thread-safe future in between, under its lock, on every call."""
    hop = _Hop(asyncio.get_running_loop(), background_loop(), coro)
    hop.mcp.call_soon_threadsafe(hop.start)
    return hop.future


class _Hop(Generic[T]):
    """One coroutine handed to the MCP loop and its result handed back (see ``hand_off``)."""

    __slots__ = ("caller", "coro", "future", "mcp", "task")

    def __init__(self, caller: asyncio.AbstractEventLoop, mcp: asyncio.AbstractEventLoop,
                 coro: Coroutine[Any, Any, T]) -> None:
        self.caller, self.mcp, self.coro = caller, mcp, coro
        self.future: asyncio.Future[T] = caller.create_future()
        self.future.add_done_callback(self._given_up)
        self.task: asyncio.Task[T] | None = None

    def start(self) -> None:  # on the MCP loop
        self.task = self.mcp.create_task(self.coro)
        self.task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[T]) -> None:  # on the MCP loop
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
            with contextlib.suppress(RuntimeError):  # the MCP loop has stopped
                self.mcp.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:  # on the MCP loop, after ``start`` (queued after it)
        if self.task is not None:
            self.task.cancel()


def started() -> bool:
    """Whether this process has an MCP loop running."""
    return _loop is not None and _pid == os.getpid() and _loop.is_running()


def on_loop() -> bool:
    """Whether the caller runs on the MCP loop itself (where it must not block)."""
    try:
        return asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False
