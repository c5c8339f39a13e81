"""The threads that run synchronous tools off the event loop (``calls.py``), reused from one
call to the next: starting a thread costs more than a small tool takes to run.

A call takes an idle thread, or starts a new one when none is idle, so a slow tool (or one
abandoned after its timeout) never holds up another; the threads are daemons, so none holds
up the process's exit, and one left idle for ``IDLE_S`` ends. A forked child starts with none.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Final

IDLE_S: Final = 60.0


class Workers:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job that no call has claimed yet

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Run ``job()`` in a worker thread, then what it returns (it must not raise): the
        thread is idle again before that second part (which says the job is done), so the
        next call finds it."""
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
        self._jobs.put(job)
        if not claimed:
            threading.Thread(target=self._serve, name="convo tool", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody claimed a waiting thread: this one ends
                        self._idle -= 1
                        return
                continue  # a call claimed this thread: its job is on the way
            finish = job()
            del job  # what the tool returned is not kept while the thread waits
            with self._lock:
                self._idle += 1
            finish()
            del finish


_workers = Workers()


def _forked() -> None:
    global _workers
    _workers = Workers()  # the parent's threads are not in the child


os.register_at_fork(after_in_child=_forked)


def submit(job: Callable[[], Callable[[], None]]) -> None:
    _workers.submit(job)
