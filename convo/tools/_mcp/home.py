"""Where an MCP server's connection lives: its *home*, the event loop the session was opened
on, and which loop a caller's work goes to.

A session belongs to the loop it was opened on, and a call made on that loop goes straight to
it; from any other loop or thread the work is handed there (``loop.py``), which wakes two more
threads per call. So the home is the loop of the server's first user:

- an *async* user's running loop (a ``convo serve`` worker's loop, an ``arun()`` caller's):
  the loop that serves calls its servers with no hand-off;
- the process's background loop for a blocking user (``Runner.run()``, ``tools()``, a bot
  file's ``[*server]`` listed before any loop runs); async users then hand their calls to it;
- when a home loop has ended (an ``asyncio.run`` returned: its teardown cancelled the owner
  task, which stopped the server), the next user opens the server again on the background
  loop, and it stays there: a program that calls ``asyncio.run(runner.arun())`` per request
  starts its servers at most twice, not per request.

A home that was left (its loop stopped, not closed) is closed on its own loop if that loop
runs again, once its calls in flight have ended; work that reaches it goes on to the new home.
Everything of a ``Home`` but ``moved`` is touched only on its loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import attrs

from .connection import Connection, close_later, keep
from .loop import background_loop, is_background

_moving = threading.Lock()


@attrs.define(slots=True, eq=False)
class Home:
    """A server's connection on one loop, and what belongs with it there."""

    loop: asyncio.AbstractEventLoop
    background: bool  # the process's MCP loop
    connection: Connection | None = None
    listed: list[Any] | None = None  # the server's tools as last listed on this connection
    calls: int = 0  # calls in flight
    moved: bool = False  # the server has a new home: work that comes here goes on there
    _lock: asyncio.Lock | None = None
    _due: dict[asyncio.Task[Any], tuple[float, int]] = attrs.field(factory=dict)  # deadlines
    _timer: asyncio.TimerHandle | None = None
    _late: set[asyncio.Task[Any]] = attrs.field(factory=set)  # cancelled by the timer

    def guard(self) -> asyncio.Lock:
        """One connecting or listing at a time (made on the home loop, where it is used)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def open(self) -> bool:
        """Whether the connection is up, on a loop that still lives."""
        connection = self.connection
        return connection is not None and connection.session is not None \
            and not self.loop.is_closed()

    # -- bounding the calls in flight with one timer ----------------------------------------
    # ``asyncio.timeout`` per call schedules and cancels a timer on every call; here one
    # timer, armed at the earliest deadline, re-arms itself for the calls still running when
    # it fires (with calls far shorter than their bound it fires about once per bound).

    def start(self, task: asyncio.Task[Any], seconds: float) -> None:
        """Bound ``task``'s call: cancel it ``seconds`` from now, unless ``end`` comes first."""
        when = self.loop.time() + seconds
        self._due[task] = (when, task.cancelling())
        timer = self._timer
        if timer is None or when < timer.when():
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(when, self._check)

    def end(self, task: asyncio.Task[Any]) -> bool:
        """The call has ended: whether its bound cancelled it, and nothing else did (as
        ``asyncio.timeout`` decides)."""
        _, before = self._due.pop(task)
        if task not in self._late:
            return False
        self._late.discard(task)
        return task.uncancel() <= before

    def _check(self) -> None:
        self._timer = None
        now = self.loop.time() + 0.001  # a timer may run a clock tick early
        for task, (when, _) in self._due.items():
            if when <= now and task not in self._late:
                self._late.add(task)
                task.cancel()
        waiting = [when for task, (when, _) in self._due.items() if task not in self._late]
        if waiting:
            self._timer = self.loop.call_at(min(waiting), self._check)

    def list_changed(self) -> None:  # the connection's ``tools/list_changed``
        self.listed = None

    def call_ended(self) -> None:
        self.calls -= 1
        if self.moved and not self.calls:
            self.forget()

    def forget(self) -> None:
        """Drop the connection, closing it in the background (on this loop)."""
        connection, self.connection, self.listed = self.connection, None, None
        if connection is not None:
            close_later(connection)

    async def retire(self) -> None:
        """After a move: close, once a connecting or listing and the calls have ended."""
        async with self.guard():
            if not self.calls:
                self.forget()


@attrs.define(slots=True, eq=False)
class Where:
    """A server's home in this process, and the choice of it (see the module docstring)."""

    home: Home | None = None
    settled: bool = False  # a home loop ended: the background loop from now on
    pid: int = attrs.field(factory=os.getpid)

    def current(self) -> Home | None:
        """The home in this process (a forked child starts with none: the parent's loop does
        not run there)."""
        if self.pid != os.getpid():
            self.pid, self.home, self.settled = os.getpid(), None, False
        return self.home

    def for_loop(self, here: asyncio.AbstractEventLoop) -> Home:
        """The home for work of a caller on the running loop ``here``."""
        home = self.home
        if home is not None and home.loop is here and self.pid == os.getpid():
            return home  # the common case, without the lock
        if is_background(here):
            return self.for_thread()
        with _moving:
            home = self.current()
            if home is not None and (home.loop is here or home.loop.is_running()):
                return home
            if home is not None and not home.background:
                self.settled = True  # its loop has ended
            if self.settled:
                return self._move(background_loop(), background=True)
            return self._move(here, background=False)

    def for_thread(self) -> Home:
        """The home for a blocking caller (or for work on the background loop)."""
        with _moving:
            home = self.current()
            if home is not None and home.loop.is_running():
                return home
            if home is not None and not home.background:
                self.settled = True
            return self._move(background_loop(), background=True)

    def _move(self, loop: asyncio.AbstractEventLoop, background: bool) -> Home:
        old, self.home = self.home, Home(loop, background)
        if old is not None:
            old.moved = True
            if not old.loop.is_closed():  # closed: its teardown closed the connection
                try:
                    old.loop.call_soon_threadsafe(_retire, old)
                except RuntimeError:  # closed meanwhile
                    pass
        return self.home


def _retire(home: Home) -> None:  # on the old home's loop
    keep(asyncio.get_running_loop().create_task(home.retire()))
