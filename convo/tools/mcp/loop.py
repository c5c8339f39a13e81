"""The one event loop that owns every MCP session of the process, in a daemon thread.

An MCP client session is bound to the event loop it was opened on, while convo runs tools
both under a blocking ``Runner.run()`` (a fresh ``asyncio.run`` per async tool call) and under
``arun()`` / serving (the caller's loop). So no session lives on a caller's loop: each lives on
this background loop, and callers submit coroutines to it — a blocking caller waits on the
``concurrent.futures.Future``, an async caller awaits it wrapped for its own loop.

A process that forks (a server's workers) gets a new loop in the child: the parent's thread
does not exist there.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

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


def started() -> bool:
    """Whether this process has an MCP loop running."""
    return _loop is not None and _pid == os.getpid() and _loop.is_running()


def on_loop() -> bool:
    """Whether the caller runs on the MCP loop itself (where it must not block)."""
    try:
        return asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False
