"""A whole conversation is read in one snapshot (API.md §26): a turn that takes a queued
message writes, in one store write, the message, its leaving the queue and ``running``; a
``GET`` read across that write must not see the queue empty beside the status it had before
(a client waiting for "queue empty and not running" would stop before the reply is stored).

Each store's read is stopped right after it read the conversation's row (a wrapper around
its connection), another worker's store makes the take's write then, and the read goes on.
The memory store reads everything at once, with no point to stop at."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from convo import Message
from convo.serve._stores import Change, Store
from convo.serve._stores.base import Queued

ROW = ("SELECT state, status", "SELECT c.state, c.status")  # how a read of the row begins


def _take(queued: Message) -> Change:
    """A drained turn's first write: the queued message added, dequeued, and running."""
    return Change(messages=((1, queued),), status="running", dequeued=(queued.id or "",))


async def _prepared(store: Store) -> Message:
    await store.create("c", {})
    await store.write("c", Change(messages=((0, Message("user", "one", id="m1")),),
                                  status="waiting", waiting_for={"type": "user"}))
    queued = Message("user", "two", id="q1")
    assert await store.enqueue("c", Queued(queued), limit=16)  # type: ignore[attr-defined]
    return queued


def _as_it_was(stored: Any) -> None:
    """The read shows the conversation before the take, every part of it."""
    assert stored.status == "waiting"
    assert [q.message.text for q in stored.queued] == ["two"]
    assert [m.text for m in stored.messages] == ["one"]


def _read_across_the_take(stores: Callable[[], tuple[Any, Any]],
                          paused: Callable[[Any, Any, Message], Any]) -> None:
    """A reader and a worker of one database (``stores()``): while ``paused(reader, worker,
    queued)`` is entered, the reader's read stops after the row and the worker takes the queued
    message; that read shows the conversation as it was, the next one the take."""

    async def scenario() -> None:
        reader, worker = stores()
        await reader.open()
        await worker.open()
        try:
            queued = await _prepared(reader)
            with paused(reader, worker, queued):
                _as_it_was(await reader.load("c"))
            after = await reader.load("c")  # the take, once it is read after its write
            assert (after.status, after.queued, [m.text for m in after.messages]) == (
                "running", [], ["one", "two"])
        finally:
            await reader.close()
            await worker.close()

    asyncio.run(scenario())


class _PausingConnection:
    """A Postgres connection that runs ``after_row`` once its row was read."""

    def __init__(self, conn: Any, after_row: Callable[[], Any]) -> None:
        self._conn, self._after_row = conn, after_row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    async def execute(self, query: str, *args: Any) -> Any:
        cur = await self._conn.execute(query, *args)
        if query.startswith(ROW):
            await self._after_row()
        return cur


def test_postgres_reads_the_row_the_queue_and_the_messages_in_one_snapshot(
        postgres: Any) -> None:
    from convo.serve._stores.postgres import PostgresStore

    url = postgres.fresh()

    @contextmanager
    def paused(reader: Any, worker: Any, queued: Message) -> Iterator[None]:
        plain = reader._conn

        async def took() -> None:
            await worker.write("c", _take(queued))

        @asynccontextmanager
        async def pausing(wait_s: float = 10.0) -> AsyncIterator[Any]:
            async with plain(wait_s) as conn:
                yield _PausingConnection(conn, took)

        reader._conn = pausing
        try:
            yield
        finally:
            reader._conn = plain

    _read_across_the_take(lambda: (PostgresStore(url), PostgresStore(url)), paused)


class _PausingDatabase:
    """A SQLite connection that runs ``after_row`` once its row was read."""

    def __init__(self, db: Any, after_row: Callable[[], None]) -> None:
        self._db, self._after_row = db, after_row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    def __enter__(self) -> Any:
        return self._db.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._db.__exit__(*exc)

    def execute(self, query: str, *args: Any) -> Any:
        cur = self._db.execute(query, *args)
        if query.startswith(ROW):
            self._after_row()
        return cur


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "convo.db")


def test_sqlite_reads_the_row_the_queue_and_the_messages_in_one_snapshot(
        sqlite_path: str) -> None:
    from convo.serve._stores.sqlite import SQLiteStore

    @contextmanager
    def paused(reader: Any, worker: Any, queued: Message) -> Iterator[None]:
        def took() -> None:  # another worker process's write, while the read is open
            failed: list[BaseException] = []

            def write() -> None:
                try:
                    asyncio.run(worker.write("c", _take(queued)))
                except BaseException as exc:
                    failed.append(exc)

            thread = threading.Thread(target=write)
            thread.start()
            thread.join()
            assert failed == []

        plain = reader._db
        reader._db = _PausingDatabase(plain, took)
        try:
            yield
        finally:
            reader._db = plain

    _read_across_the_take(lambda: (SQLiteStore(sqlite_path), SQLiteStore(sqlite_path)), paused)
