"""SQLite store: stdlib ``sqlite3`` in WAL mode with a busy timeout, so concurrent
conversations (and several worker processes on one machine) never see "database is locked".

The turn lock is a lease on the conversation's row (``lock_owner``, ``lock_until``), taken with
one atomic ``UPDATE`` and renewed by the engine while the turn runs: its owner names the host
and process, so a lock left by a killed process on this machine is taken over at once; any
other once its lease lapsed.

(Over 300 lines: one store is one idea — the Store protocol's methods in one dialect, with
its schema and migrations — and splitting it would scatter the SQL of one table.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final, TypeVar

from ..._messages import Message
from ..._session import SubroutineRun
from .base import (
    CANCEL,
    HELD,
    LEASE_S,
    LOST,
    MOVED,
    SCHEMA_VERSION,
    Change,
    Queued,
    Stored,
    StoreError,
    dumps,
    split,
)
from .feedback import Feedback, Rating
from .listing import Query, Summary, now_us, text_of_record, title_of
from .releases import Unreleased
from .rows import message_row, read_message

BUSY_TIMEOUT_MS: Final = 30000
_BUSY: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_NO_ROOM: Final = (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)
T = TypeVar("T")

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS convo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, state TEXT NOT NULL, status TEXT NOT NULL, waiting_for TEXT,
    outcome TEXT, approvals TEXT NOT NULL DEFAULT '{}', length INTEGER NOT NULL DEFAULT 0,
    lock_owner TEXT, lock_until REAL, created REAL NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (conversation_id, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subroutines (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, length INTEGER NOT NULL,
    record TEXT NOT NULL, PRIMARY KEY (conversation_id, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency (
    conversation_id TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, response TEXT,
    PRIMARY KEY (conversation_id, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attachments (digest TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS message_attachments (
    conversation_id TEXT NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (conversation_id, digest)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS message_attachments_digest ON message_attachments (digest);
CREATE TABLE IF NOT EXISTS feedback (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, rating INTEGER NOT NULL,
    comment TEXT, user TEXT NOT NULL, time INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, idx)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS feedback_time ON feedback (time);
CREATE TABLE IF NOT EXISTS queued (
    conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
    steer INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)) WITHOUT ROWID;
"""
# Schema 3: an idempotency record names the messages its answer added instead of copying them.
TO_V3: Final = """
UPDATE idempotency SET response = json_object(
    'status', json_extract(response, '$.status'),
    'messages', json_array(
        json_array_length(response, '$.body.messages')
        - COALESCE(json_array_length(response, '$.body.added'), 0),
        json_array_length(response, '$.body.messages')),
    'fields', json_remove(json_extract(response, '$.body'), '$.messages', '$.added'))
WHERE response IS NOT NULL AND json_type(response, '$.body') = 'object'
"""




def _to_v4(db: sqlite3.Connection) -> None:
    """Schema 4: convo's own records get a column apart from the state, and are moved out of
    the state of the rows that had them there (once, when the column is added: one
    transaction, one process at a time; rows an older worker writes later are moved when
    read)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
        if "internal" in columns:
            db.execute("COMMIT")
            return
        db.execute("ALTER TABLE conversations ADD COLUMN internal TEXT")
        rows = db.execute("SELECT id, state FROM conversations").fetchall()
        for conversation_id, state in rows:
            moved = split(conversation_id, json.loads(state), None)
            db.execute("UPDATE conversations SET state = ?, internal = ? WHERE id = ?",
                       (dumps(moved[0]), dumps(moved[1]), conversation_id))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# Schema 5: the row's owner, title and time of the last message, for lists that read no
# message (rows of earlier versions: the user "default", their creation time).
TO_V5: Final = (
    ("owner", "ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT 'default'"),
    ("title", "ALTER TABLE conversations ADD COLUMN title TEXT"),
    ("updated_at", "ALTER TABLE conversations ADD COLUMN updated_at INTEGER"),
)
V5_INDEXES: Final = (
    "UPDATE conversations SET updated_at = CAST(created * 1000000 AS INTEGER) "
    "WHERE updated_at IS NULL",
    "CREATE INDEX IF NOT EXISTS conversations_owner_updated ON conversations "
    "(owner, updated_at, id)",
    "CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at, id)",
)


def _to_v6(db: sqlite3.Connection) -> None:
    """Schema 6: a branch's ``parent`` (JSON text; ``NULL`` in every row before it)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
    if "parent" not in columns:
        db.execute("ALTER TABLE conversations ADD COLUMN parent TEXT")


def _to_v5(db: sqlite3.Connection) -> None:
    """Schema 5: add the list's columns when missing, and give the rows of earlier versions
    their titles (from their first user message, read once); one transaction, one process
    at a time."""
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
        for column, sql in TO_V5:
            if column not in columns:
                db.execute(sql)
        for sql in V5_INDEXES:
            db.execute(sql)
        if "title" not in columns:
            _titles(db)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _titles(db: sqlite3.Connection) -> None:
    rows = db.execute(
        "SELECT m.conversation_id, m.message FROM messages m WHERE m.idx = (SELECT MIN(n.idx) "
        "FROM messages n WHERE n.conversation_id = m.conversation_id AND "
        "json_extract(n.message, '$.role') = 'user')").fetchall()
    db.executemany("UPDATE conversations SET title = ? WHERE id = ?", [
        (text_of_record(json.loads(message))[:80], conversation_id)
        for conversation_id, message in rows])


class _Busy(Exception):
    """The database was busy and the caller would not wait: try again in a thread."""


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _dead(owner: str | None) -> bool:
    """Whether a lock's owner is a process of this machine that no longer runs."""
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(rest.partition(":")[0]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


class SQLiteStore:
    def __init__(self, path: str, *, lease: float = LEASE_S) -> None:
        self.path = path
        self.lease = lease
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one user of the connection at a time
        self._waits = True  # the connection's busy_timeout is on (else 0: busy at once)
        self._owner = _owner()
        self._unreleased = Unreleased(self._release_all, lambda: min(1.0, self.lease / 3))
        self.clock = now_us

    async def _do(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # A statement or two of a WAL database take tens of microseconds: they run here, on
        # the event loop, without a thread hop each. Only when the database is busy (another
        # worker process writes, or a thread of ours holds the connection) does the work go
        # to a thread, which waits for its turn (busy_timeout) without stalling the loop.
        if self._lock.acquire(blocking=False):
            try:
                return self._run(fn, wait=False)
            except _Busy:
                pass
            finally:
                self._lock.release()
        return await asyncio.to_thread(self._waiting, fn)

    def _waiting(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return self._run(fn, wait=True)

    def _run(self, fn: Callable[[sqlite3.Connection], T], *, wait: bool) -> T:
        """One transaction (the caller holds the lock); ``_Busy`` if the database is busy
        and ``wait`` is false (nothing was written: the transaction rolled back)."""
        db = self._db
        if db is None:
            raise StoreError(f"the SQLite store {self.path} is closed")
        try:
            if wait != self._waits:
                db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS if wait else 0}")
                self._waits = wait
            with db:  # one transaction
                return fn(db)
        except sqlite3.Error as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if not wait and code in _BUSY:
                raise _Busy from exc
            if code in _NO_ROOM:  # a full disk: empty the log, so the next write has room
                with contextlib.suppress(sqlite3.Error):
                    _checkpoint(db)
            raise StoreError(_said(self.path, exc, f"SQLite store {self.path}: {exc}")) from exc

    async def open(self) -> None:
        def connect() -> None:
            db = sqlite3.connect(self.path, timeout=30, check_same_thread=False,
                                 isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            columns = {r[1] for r in db.execute("PRAGMA table_info(conversations)")}
            if "cancel_requested" not in columns:  # schema 4: a store of an earlier version
                db.execute("ALTER TABLE conversations ADD COLUMN cancel_requested INTEGER "
                           "NOT NULL DEFAULT 0")
            known = db.execute("SELECT value FROM convo_meta WHERE key = 'schema_version'"
                               ).fetchone()
            if known is not None and int(known[0]) < 3:
                db.execute(TO_V3)
            _to_v4(db)
            _to_v5(db)
            _to_v6(db)
            db.execute("INSERT INTO convo_meta VALUES ('schema_version', ?) ON CONFLICT (key) "
                       "DO UPDATE SET value = excluded.value WHERE CAST(convo_meta.value AS "
                       "INTEGER) < CAST(excluded.value AS INTEGER)", (str(SCHEMA_VERSION),))
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the schema's writes leave the log
            db.isolation_level = "DEFERRED"
            self._db = db

        try:
            await asyncio.to_thread(connect)
        except sqlite3.Error as exc:
            raise StoreError(_said(self.path, exc, f"cannot open the SQLite store {self.path}: "
                                   f"{exc}")) from exc

    async def close(self) -> None:
        await self._unreleased.close()
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    async def ping(self) -> bool:
        try:
            await self._unreleased.let_go()
            return await self._do(lambda db: db.execute("SELECT 1").fetchone() == (1,))
        except StoreError:
            return False

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = "default", parent: dict[str, Any] | None = None) -> None:
        await self._do(lambda db: db.execute(
            "INSERT INTO conversations (id, state, status, created, internal, owner, "
            "updated_at, parent) VALUES (?, ?, ?, ?, '{}', ?, ?, ?)",
            (conversation_id, dumps(dict(state)), "waiting", time.time(), owner,
             self.clock(), None if parent is None else dumps(parent))))

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        def read(db: sqlite3.Connection) -> Stored | None:
            if messages:  # one snapshot: the row, its queue and its messages agree (a turn
                db.execute("BEGIN")  # taking a queued message writes all three at once)
            row = db.execute(
                "SELECT state, status, waiting_for, outcome, approvals, length, (SELECT "
                "COALESCE(SUM(s.length), 0) FROM subroutines s WHERE s.conversation_id = c.id), "
                "internal, owner, title, updated_at, parent FROM conversations c WHERE id = ?",
                (conversation_id,)).fetchone()
            if row is None:
                return None
            state, internal = split(conversation_id, json.loads(row[0]),
                                    None if row[7] is None else json.loads(row[7]))
            if row[7] is None:  # written by an older worker since the start: moved now
                db.execute("UPDATE conversations SET state = ?, internal = ? WHERE id = ? AND "
                           "internal IS NULL", (dumps(state), dumps(internal), conversation_id))
            stored = Stored(conversation_id, state, row[1],
                            json.loads(row[2]) if row[2] else None,
                            json.loads(row[3]) if row[3] else None, json.loads(row[4]),
                            length=row[5], child_length=row[6], internal=internal,
                            owner=row[8], title=row[9], updated=row[10] or 0,
                            parent=json.loads(row[11]) if row[11] else None)
            if messages:
                stored.queued = [Queued(Message.from_dict(json.loads(m)), bool(steer))
                                 for steer, m in db.execute(
                                     "SELECT steer, message FROM queued WHERE conversation_id "
                                     "= ? ORDER BY seq", (conversation_id,))]
                blobs = dict(db.execute(
                    "SELECT a.digest, a.data FROM attachments a JOIN message_attachments m ON "
                    "a.digest = m.digest WHERE m.conversation_id = ?", (conversation_id,)))
                stored.messages = [read_message(json.loads(m), blobs) for (m,) in db.execute(
                    "SELECT message FROM messages WHERE conversation_id = ? ORDER BY idx",
                    (conversation_id,))]
                stored.subroutines = [SubroutineRun.from_dict(json.loads(r)) for (r,) in
                                      db.execute("SELECT record FROM subroutines WHERE "
                                                 "conversation_id = ? ORDER BY idx",
                                                 (conversation_id,))]
            return stored

        return await self._do(read)

    async def write(self, conversation_id: str, change: Change) -> None:
        def write(db: sqlite3.Connection) -> None:
            if db.execute("SELECT 1 FROM conversations WHERE id = ?",
                          (conversation_id,)).fetchone() is None:
                return  # deleted while the turn ran: nothing of it stays
            if change.messages:
                rows = [(i, *message_row(m)) for i, m in change.messages]
                db.executemany("INSERT INTO messages VALUES (?, ?, ?)", [
                    (conversation_id, i, text) for i, text, _ in rows])
                blobs = dict(b for _, _, found in rows for b in found)
                db.executemany("INSERT OR IGNORE INTO attachments VALUES (?, ?)", blobs.items())
                db.executemany("INSERT OR IGNORE INTO message_attachments VALUES (?, ?)",
                               [(conversation_id, digest) for digest in blobs])
                db.execute("UPDATE conversations SET length = ?, updated_at = ?, title = "
                           "COALESCE(title, ?) WHERE id = ?",
                           (change.messages[-1][0] + 1, self.clock(),
                            title_of(change.messages), conversation_id))
            db.executemany("INSERT OR REPLACE INTO subroutines VALUES (?, ?, ?, ?)", [
                (conversation_id, i, r.size, dumps(r.to_dict()))
                for i, r in change.subroutines])
            for column, value in (("state", change.state), ("internal", change.internal),
                                  ("approvals", change.approvals)):
                if value is not None:
                    db.execute(f"UPDATE conversations SET {column} = ? WHERE id = ?",
                               (dumps(value), conversation_id))
            if change.status is not None:
                db.execute("UPDATE conversations SET status = ?, waiting_for = ?, outcome = ? "
                           "WHERE id = ?", (change.status, _json(change.waiting_for),
                                            _json(change.outcome), conversation_id))
            if change.status == "ended":  # its queue is dropped
                db.execute("DELETE FROM queued WHERE conversation_id = ?", (conversation_id,))
            elif change.dequeued:
                db.executemany("DELETE FROM queued WHERE conversation_id = ? AND id = ?",
                               [(conversation_id, i) for i in change.dequeued])

        await self._do(write)

    async def delete(self, conversation_id: str) -> bool:
        # An attachment another conversation stores meanwhile is never deleted from under it:
        # the check that no conversation uses it and the delete are one write transaction,
        # and SQLite runs one at a time (a write of another worker comes wholly before it,
        # and is seen, or wholly after, and stores the binary anew).
        def delete(db: sqlite3.Connection) -> bool:
            used = [d for (d,) in db.execute("SELECT digest FROM message_attachments WHERE "
                                             "conversation_id = ?", (conversation_id,))]
            for table in ("messages", "subroutines", "idempotency", "message_attachments",
                          "feedback", "queued"):
                db.execute(f"DELETE FROM {table} WHERE conversation_id = ?", (conversation_id,))
            db.executemany("DELETE FROM attachments WHERE digest = ? AND NOT EXISTS (SELECT 1 "
                           "FROM message_attachments WHERE digest = ?)",
                           [(d, d) for d in used])
            return db.execute("DELETE FROM conversations WHERE id = ?",
                              (conversation_id,)).rowcount > 0

        return await self._do(delete)

    async def swap(self, conversation_id: str, branch_id: str, kept_as: str) -> bool:
        def swap(db: sqlite3.Connection) -> bool:
            lease = db.execute("SELECT lock_owner, lock_until, cancel_requested FROM "
                               "conversations WHERE id = ?", (conversation_id,)).fetchone()
            if lease is None or db.execute("SELECT 1 FROM conversations WHERE id = ?",
                                           (branch_id,)).fetchone() is None:
                return False
            db.execute("UPDATE conversations SET id = ?, lock_owner = NULL, lock_until = NULL, "
                       "cancel_requested = 0 WHERE id = ?", (kept_as, conversation_id))
            db.execute("UPDATE conversations SET id = ?, lock_owner = ?, lock_until = ?, "
                       "cancel_requested = ? WHERE id = ?",
                       (conversation_id, *lease, branch_id))
            for table in MOVED:
                db.execute(f"UPDATE {table} SET conversation_id = ? WHERE conversation_id = ?",
                           (kept_as, conversation_id))
                db.execute(f"UPDATE {table} SET conversation_id = ? WHERE conversation_id = ?",
                           (conversation_id, branch_id))
            return True

        return await self._do(swap)

    @contextlib.asynccontextmanager
    async def created(self, conversation_id: str, state: Mapping[str, Any], *,
                      owner: str = "default") -> AsyncIterator[bool]:
        def create(db: sqlite3.Connection) -> bool:
            return db.execute(
                "INSERT OR IGNORE INTO conversations (id, state, status, created, internal, "
                "owner, updated_at, lock_owner, lock_until) VALUES (?, ?, 'waiting', ?, '{}', ?, "
                "?, ?, ?)",
                (conversation_id, dumps(dict(state)), time.time(), owner, self.clock(),
                 self._owner, time.time() + self.lease)).rowcount == 1

        await self._unreleased.let_go()
        async with self._leased(conversation_id, await self._do(create)) as taken:
            yield taken

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[bool]:
        def take(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT lock_owner, lock_until FROM conversations WHERE id = ?",
                             (conversation_id,)).fetchone()
            if row is None or self._live(*row):
                return False
            return db.execute(
                "UPDATE conversations SET lock_owner = ?, lock_until = ?, cancel_requested = 0 "
                "WHERE id = ? AND lock_owner IS ?", (self._owner, time.time() + self.lease,
                                                    conversation_id, row[0])).rowcount == 1

        await self._unreleased.let_go()  # leases of this worker's turns that failed: gone
        async with self._leased(conversation_id, await self._do(take)) as taken:
            yield taken

    @contextlib.asynccontextmanager
    async def _leased(self, conversation_id: str, taken: bool) -> AsyncIterator[bool]:
        """``taken``: whether this worker holds the lease; released when the block ends."""
        def release(db: sqlite3.Connection) -> None:
            db.execute("UPDATE conversations SET lock_owner = NULL, lock_until = NULL, "
                       "cancel_requested = 0 WHERE id = ? AND lock_owner = ?",
                       (conversation_id, self._owner))

        try:
            yield taken
        finally:
            if taken:
                try:
                    await self._do(release)
                except StoreError:  # a full disk: the write-ahead log cannot grow
                    try:
                        await self._do(_checkpoint)  # emptied, it takes the release again
                        await self._do(release)
                    except StoreError:  # let go once the store answers (releases.py)
                        self._unreleased.add(conversation_id)
                        raise

    async def _release_all(self, conversation_ids: list[str]) -> None:
        """Clear this worker's leases of these conversations (``releases.py``)."""
        marks = ", ".join("?" * len(conversation_ids))
        await self._do(lambda db: db.execute(
            "UPDATE conversations SET lock_owner = NULL, lock_until = NULL, cancel_requested = 0 "
            f"WHERE lock_owner = ? AND id IN ({marks})", (self._owner, *conversation_ids)))

    def _live(self, owner: str | None, until: float | None) -> bool:
        """Whether a lease holds the row: an owner whose lease has not lapsed, and (on this
        machine) whose process still runs."""
        return bool(owner) and (until or 0) > time.time() and not _dead(owner)

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        def renew(db: sqlite3.Connection) -> str:
            if extend:
                db.execute("UPDATE conversations SET lock_until = ? WHERE id = ? AND "
                           "lock_owner = ?", (time.time() + self.lease, conversation_id,
                                              self._owner))
            row = db.execute("SELECT lock_owner, cancel_requested FROM conversations WHERE "
                             "id = ?", (conversation_id,)).fetchone()
            if row is None or row[0] != self._owner:
                return LOST
            return CANCEL if row[1] else HELD

        return await self._do(renew)

    async def request_cancel(self, conversation_id: str) -> bool:
        def ask(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT lock_owner, lock_until FROM conversations WHERE id = ?",
                             (conversation_id,)).fetchone()
            return row is not None and self._live(*row) and db.execute(
                "UPDATE conversations SET cancel_requested = 1 WHERE id = ? AND lock_owner = ?",
                (conversation_id, row[0])).rowcount == 1

        return await self._do(ask)

    async def running(self, conversation_id: str) -> bool:
        row = await self._do(lambda db: db.execute(
            "SELECT lock_owner, lock_until FROM conversations WHERE id = ?",
            (conversation_id,)).fetchone())
        return row is not None and self._live(*row)

    async def idempotent(self, conversation_id: str, key: str
                         ) -> tuple[str, dict[str, Any] | None] | None:
        row = await self._do(lambda db: db.execute(
            "SELECT digest, response FROM idempotency WHERE conversation_id = ? AND key = ?",
            (conversation_id, key)).fetchone())
        return None if row is None else (row[0], json.loads(row[1]) if row[1] else None)

    async def remember(self, conversation_id: str, key: str, digest: str,
                       response: dict[str, Any] | None) -> bool:
        if response is None:
            return await self._do(lambda db: db.execute(
                "INSERT OR IGNORE INTO idempotency VALUES (?, ?, ?, NULL)",
                (conversation_id, key, digest)).rowcount == 1)
        await self._do(lambda db: db.execute(
            "INSERT OR REPLACE INTO idempotency VALUES (?, ?, ?, ?)",
            (conversation_id, key, digest, dumps(response))))
        return True

    async def forget(self, conversation_id: str, key: str) -> None:
        await self._do(lambda db: db.execute(
            "DELETE FROM idempotency WHERE conversation_id = ? AND key = ? AND response IS NULL",
            (conversation_id, key)))

    async def enqueue(self, conversation_id: str, queued: Queued, *, limit: int) -> bool:
        return await self._do(lambda db: db.execute(  # one statement: the count and the add
            "INSERT INTO queued SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM queued WHERE "
            "conversation_id = ? HAVING COUNT(*) < ? AND EXISTS (SELECT 1 FROM conversations "
            "WHERE id = ?)", (conversation_id, queued.message.id, int(queued.steer),
                              dumps(queued.message.to_dict()), conversation_id, limit,
                              conversation_id)).rowcount == 1)

    async def queued(self, conversation_id: str) -> list[Queued]:
        rows = await self._do(lambda db: db.execute(
            "SELECT steer, message FROM queued WHERE conversation_id = ? ORDER BY seq",
            (conversation_id,)).fetchall())
        return [Queued(Message.from_dict(json.loads(m)), bool(steer)) for steer, m in rows]

    async def withdraw(self, conversation_id: str, message_id: str) -> bool:
        return await self._do(lambda db: db.execute(
            "DELETE FROM queued WHERE conversation_id = ? AND id = ?",
            (conversation_id, message_id)).rowcount > 0)

    async def conversations(self, query: Query) -> list[Summary]:
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        for clause, value in (("owner = ?", query.owner), ("status = ?", query.status), (
                "json_extract(waiting_for, '$.type') = ?", query.waiting_for)):
            if value is not None:
                where.append(clause)
                params.append(value)
        if query.before is not None:
            where.append("(updated_at, id) < (?, ?)")  # a range of the index, not a skip
            params += list(query.before)
        rows = await self._do(lambda db: db.execute(
            "SELECT id, title, status, waiting_for, updated_at, owner, parent FROM conversations "
            "WHERE "
            f"{' AND '.join(where)} ORDER BY updated_at DESC, id DESC LIMIT ?",
            (*params, query.limit + 1)).fetchall())
        return [Summary(r[0], r[1], r[2], json.loads(r[3]) if r[3] else None, r[4] or 0, r[5],
                        json.loads(r[6]) if r[6] else None)
                for r in rows]

    async def rate(self, conversation_id: str, index: int, rating: int, comment: str | None,
                   user: str) -> None:
        await self._do(lambda db: db.execute(
            "INSERT OR REPLACE INTO feedback SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 "
            "FROM conversations WHERE id = ?)",
            (conversation_id, index, rating, comment, user, self.clock(), conversation_id)))

    async def feedback(self, since: int | None = None) -> list[Feedback]:
        rows = await self._do(lambda db: db.execute(
            "SELECT f.conversation_id, f.idx, m.message, f.rating, f.comment, f.user, f.time "
            "FROM feedback f LEFT JOIN messages m ON m.conversation_id = f.conversation_id AND "
            "m.idx = f.idx WHERE f.time >= ? ORDER BY f.time, f.conversation_id, f.idx",
            (since if since is not None else -(2 ** 62),)).fetchall())
        return [Feedback(r[0], r[1], text_of_record(json.loads(r[2]) if r[2] else None), r[3],
                         r[4], r[5], r[6]) for r in rows]

    async def ratings(self, conversation_id: str, user: str) -> dict[int, Rating]:
        rows = await self._do(lambda db: db.execute(
            "SELECT idx, rating, comment FROM feedback WHERE conversation_id = ? AND user = ? "
            "ORDER BY idx", (conversation_id, user)).fetchall())
        return {r[0]: Rating(r[1], r[2]) for r in rows}


def _said(path: str, exc: sqlite3.Error, otherwise: str) -> str:
    """What went wrong with the store at ``path``, in words that say what to do when the file
    or its folder cannot be written (SQLite's own words are "attempt to write a readonly
    database" and "unable to open database file"); else ``otherwise``."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
        return otherwise
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        why = "the file is read-only for this process"
    elif not os.access(folder, os.W_OK):
        why = (f"its folder {folder} is read-only for this process (SQLite writes the file "
               "and its -wal and -shm files there)")
    else:
        return otherwise
    return (f"SQLite store {path} cannot be written: {why}; convo serve writes every turn to "
            f"it: make it writable, or choose another --store ({exc})")


def _checkpoint(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)
