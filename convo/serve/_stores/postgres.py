"""Postgres store: psycopg 3 with a connection pool that checks each connection before use,
so a database restart or a connection reaped during a long model call does not break the next
turn. Several workers (and machines) share it. After the database was down, the pool would
wait out its own growing back-off before it connects again (up to minutes); so the first
request after a failure checks the database with a connection of its own and, when it answers,
starts a fresh pool at once: the first request after a restart is served, not a 503.

The turn lock is a lease on the conversation row (``lock_owner``, ``lock_until`` by the
database's clock), set, renewed and cleared by atomic updates, so a turn holds no connection
while it waits for the model (a pool of 20 serves any number of turns at once). Liveness rests
on the lease alone, not on a connection: a worker whose connections were cut (a database
restart, an idle reaper, ``pg_terminate_backend``) keeps its turns, renewing their leases on
fresh connections; a worker that died loses them once their leases lapse — at once when it
ran on the worker's own machine (``lock_holder``, holders.py: its process is gone). (Version 3
held an advisory lock per worker instead: see ``OLDER_REFUSED`` for such workers during an
upgrade.)

(Over 300 lines: one store is one idea — the Store protocol's methods in one dialect, with
its schema and migrations — and splitting it would scatter the SQL of one table.)
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

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
from .holders import gone, this_process
from .listing import Query, Summary, as_datetime, micros, now_us, text_of_record, title_of
from .releases import Unreleased
from .rows import message_row, read_message

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS convo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, state JSONB NOT NULL, status TEXT NOT NULL, waiting_for JSONB,
    outcome JSONB, approvals JSONB NOT NULL DEFAULT '{}', length INTEGER NOT NULL DEFAULT 0,
    lock_owner BIGINT, created TIMESTAMPTZ NOT NULL DEFAULT now());
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS lock_owner BIGINT;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS lock_until TIMESTAMPTZ;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS cancel_requested BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS lock_holder TEXT;
CREATE TABLE IF NOT EXISTS messages (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, message JSONB NOT NULL,
    PRIMARY KEY (conversation_id, idx));
CREATE TABLE IF NOT EXISTS subroutines (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, length INTEGER NOT NULL,
    record JSONB NOT NULL, PRIMARY KEY (conversation_id, idx));
CREATE TABLE IF NOT EXISTS idempotency (
    conversation_id TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, response JSONB,
    PRIMARY KEY (conversation_id, key));
CREATE TABLE IF NOT EXISTS attachments (digest TEXT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS message_attachments (
    conversation_id TEXT NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (conversation_id, digest));
CREATE INDEX IF NOT EXISTS message_attachments_digest ON message_attachments (digest);
CREATE TABLE IF NOT EXISTS feedback (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, rating INTEGER NOT NULL,
    comment TEXT, "user" TEXT NOT NULL, time TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (conversation_id, idx));
CREATE INDEX IF NOT EXISTS feedback_time ON feedback (time);
CREATE TABLE IF NOT EXISTS queued (
    conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
    steer BOOLEAN NOT NULL, message JSONB NOT NULL, PRIMARY KEY (conversation_id, seq));
"""
# Schema 5: the row's owner, title and time of the last message, for lists that read no
# message (rows of earlier versions: the user "default", their creation time).
TO_V5: Final = """
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL DEFAULT 'default';
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS updated_at TIMESTAMPTZ;
UPDATE conversations SET updated_at = created WHERE updated_at IS NULL;
ALTER TABLE conversations ALTER COLUMN updated_at SET DEFAULT now();
CREATE INDEX IF NOT EXISTS conversations_owner_updated ON conversations (owner, updated_at, id);
CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at, id);
"""
# Schema 6: a branch's parent (``NULL`` in every row before it).
TO_V6: Final = """
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS parent JSONB;
"""
# Schema 3: an idempotency record names the messages its answer added instead of copying them.
TO_V3: Final = """
UPDATE idempotency SET response = jsonb_build_object(
    'status', response->'status',
    'messages', jsonb_build_array(
        jsonb_array_length(response->'body'->'messages')
        - COALESCE(jsonb_array_length(response->'body'->'added'), 0),
        jsonb_array_length(response->'body'->'messages')),
    'fields', (response->'body') - 'messages' - 'added')
WHERE response IS NOT NULL AND jsonb_typeof(response->'body') = 'object'
"""


# Workers before leases (schema 3) took a turn by setting ``lock_owner`` alone, and judged
# its holder alive by an advisory lock keyed by the owner id, held on a connection of its own.
# Mixed with them, a turn could run twice (each takes the other's); so, from a worker of
# schema 4 on, the database refuses a take that sets no new lease (an older worker's: it
# fails, a 503, and runs nothing), and a lock an older worker holds counts as held while its
# advisory lock is (pg_locks); once that worker is gone, any worker takes it over.
OLDER_REFUSED: Final = """
CREATE OR REPLACE FUNCTION convo_lease_taken() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.lock_owner IS NOT NULL AND NEW.lock_owner IS DISTINCT FROM OLD.lock_owner
            AND NEW.lock_until IS NOT DISTINCT FROM OLD.lock_until THEN
        RAISE EXCEPTION 'a convo worker older than this store (schema 4) tried to take a turn '
            'of conversation %: stop or upgrade it; workers before schema 4 cannot share a '
            'store with later ones', NEW.id USING ERRCODE = '55000';
    END IF;
    RETURN NEW;
END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'convo_lease_taken'
                   AND tgrelid = 'conversations'::regclass) THEN
        CREATE TRIGGER convo_lease_taken BEFORE UPDATE OF lock_owner ON conversations
            FOR EACH ROW EXECUTE FUNCTION convo_lease_taken();
    END IF;
END $$;
"""
# A lease lapsed, or an older worker's lock (no ``lock_until``) whose worker is gone: any
# worker may take it over.
LAPSED: Final = """(CASE WHEN lock_until IS NULL THEN NOT EXISTS (
    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid::bigint = lock_owner >> 32 AND l.objid::bigint = lock_owner & 4294967295)
    ELSE lock_until < now() END)"""


class PostgresStore:
    def __init__(self, url: str, *, max_size: int = 20, lease: float = LEASE_S) -> None:
        self.url = url
        self.lease = lease
        self.max_size = max_size
        self._pool: Any = None
        self._failed = False  # the pool lost the database: recover before the next use
        self._recovering: Any = None  # an asyncio.Lock: one request recovers, the rest wait
        self._owner = secrets.randbits(62)  # this worker's id, the owner of its leases
        self._unreleased = Unreleased(self._release_all, lambda: min(1.0, self.lease / 3))
        self.clock = now_us

    async def open(self) -> None:
        import asyncio

        self._recovering = asyncio.Lock()
        try:
            self._pool = await self._new_pool(timeout=30)
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(424242)")  # one migrator
                await conn.execute(SCHEMA)
                await conn.execute(OLDER_REFUSED)
                cur = await conn.execute(
                    "SELECT value FROM convo_meta WHERE key = 'schema_version'")
                known = await cur.fetchone()
                if known is not None and int(known[0]) < 3:
                    await conn.execute(TO_V3)
                await _to_v4(conn)
                await _to_v5(conn)
                await conn.execute(
                    "INSERT INTO convo_meta VALUES ('schema_version', %s) ON CONFLICT (key) DO "
                    "UPDATE SET value = EXCLUDED.value WHERE convo_meta.value::int < "
                    "EXCLUDED.value::int", (str(SCHEMA_VERSION),))
        except Exception as exc:
            raise StoreError(f"cannot open the Postgres store: {exc}") from exc

    async def _new_pool(self, timeout: float) -> Any:
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - the extra is missing
            from .._problems import INSTALL_SERVE

            raise StoreError(f"the Postgres store needs psycopg and psycopg-pool: {INSTALL_SERVE}"
                             ) from exc
        pool = AsyncConnectionPool(self.url, min_size=1, max_size=self.max_size, open=False,
                                   check=AsyncConnectionPool.check_connection,
                                   kwargs={"autocommit": True})
        await pool.open(wait=True, timeout=timeout)
        return pool

    async def _recover(self, wait_s: float) -> None:
        """The pool lost the database: if it answers now, replace the pool (whose back-off
        could keep it away for minutes); if not, a ``StoreError`` at once."""
        import psycopg

        async with self._recovering:
            if not self._failed:  # another request recovered while this one waited
                return
            try:
                probe = await psycopg.AsyncConnection.connect(
                    self.url, connect_timeout=max(1, round(wait_s)))
                await probe.close()
                pool = await self._new_pool(timeout=wait_s)
            except Exception as exc:
                raise StoreError(f"Postgres store: {exc}") from exc
            old, self._pool, self._failed = self._pool, pool, False
            await old.close(timeout=1.0)  # connections still lent out close when returned

    async def close(self) -> None:
        await self._unreleased.close()
        if self._pool is not None:
            await self._pool.close()

    @contextlib.asynccontextmanager
    async def _conn(self, wait_s: float = 10.0) -> AsyncIterator[Any]:
        """A pooled connection; a database that does not answer within ``wait_s`` seconds is a
        ``StoreError`` (a 503), not a request left hanging."""
        import psycopg

        if self._failed:
            await self._recover(wait_s)
        pool = self._pool
        try:
            async with pool.connection(timeout=wait_s) as conn:
                yield conn
        except (psycopg.OperationalError, OSError) as exc:  # PoolTimeout is one too
            self._failed = self._failed or pool is self._pool  # not if already replaced
            raise StoreError(f"Postgres store: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"Postgres store: {exc}") from exc

    async def ping(self) -> bool:
        try:
            await self._unreleased.let_go()
            async with self._conn(wait_s=3.0) as conn:
                await conn.execute("SELECT 1")
            return True
        except StoreError:
            return False

    async def create(self, conversation_id: str, state: Mapping[str, Any], *,
                     owner: str = "default", parent: dict[str, Any] | None = None) -> None:
        async with self._conn() as conn:
            await conn.execute("INSERT INTO conversations (id, state, status, internal, owner, "
                               "updated_at, parent) VALUES (%s, %s, 'waiting', '{}', %s, %s, "
                               "%s)", (conversation_id, dumps(dict(state)), owner,
                                       as_datetime(self.clock()),
                                       None if parent is None else dumps(parent)))

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        async with self._conn() as conn:
            if messages:  # one snapshot: the row, its queue and its messages agree (a turn
                # taking a queued message writes all three at once; read committed would
                # show each statement a later commit, e.g. the queue empty, not yet running)
                async with conn.transaction():
                    await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, "
                                       "READ ONLY")
                    stored, raw = await self._read(conn, conversation_id, messages=True)
            else:
                stored, raw = await self._read(conn, conversation_id, messages=False)
            if stored is not None and raw is None:  # an older worker wrote it: moved now
                await conn.execute("UPDATE conversations SET state = %s, internal = %s WHERE "
                                   "id = %s AND internal IS NULL", (
                                       dumps(stored.state), dumps(stored.internal),
                                       conversation_id))
            return stored

    async def _read(self, conn: Any, conversation_id: str, *, messages: bool
                    ) -> tuple[Stored | None, Any]:
        """The conversation as stored, and its row's ``internal`` as read (``None``: written
        by a worker before schema 4, its records still in the state; moved after the read,
        whose snapshot writes nothing)."""
        cur = await conn.execute(
            "SELECT state, status, waiting_for, outcome, approvals, length, (SELECT "
            "COALESCE(SUM(s.length), 0) FROM subroutines s WHERE s.conversation_id = c.id), "
            "internal, owner, title, updated_at, parent FROM conversations c WHERE id = %s",
            (conversation_id,))
        row = await cur.fetchone()
        if row is None:
            return None, None
        state, internal = split(conversation_id, row[0], row[7])
        stored = Stored(conversation_id, state, row[1], row[2], row[3], row[4],
                        length=row[5], child_length=int(row[6]), internal=internal,
                        owner=row[8], title=row[9],
                        updated=0 if row[10] is None else micros(row[10]), parent=row[11])
        if messages:
            cur = await conn.execute("SELECT steer, message FROM queued WHERE "
                                     "conversation_id = %s ORDER BY seq", (conversation_id,))
            stored.queued = [Queued(Message.from_dict(m), bool(steer))
                             for steer, m in await cur.fetchall()]
            cur = await conn.execute(
                "SELECT a.digest, a.data FROM attachments a JOIN message_attachments m ON "
                "a.digest = m.digest WHERE m.conversation_id = %s", (conversation_id,))
            blobs = {digest: bytes(data) for digest, data in await cur.fetchall()}
            cur = await conn.execute("SELECT message FROM messages WHERE conversation_id "
                                     "= %s ORDER BY idx", (conversation_id,))
            stored.messages = [read_message(m, blobs) for (m,) in await cur.fetchall()]
            cur = await conn.execute("SELECT record FROM subroutines WHERE "
                                     "conversation_id = %s ORDER BY idx", (conversation_id,))
            stored.subroutines = [SubroutineRun.from_dict(r) for (r,) in await cur.fetchall()]
        return stored, row[7]

    async def write(self, conversation_id: str, change: Change) -> None:
        # Why longer than 40 lines: one transaction's statements, in the order they must run.
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute("SELECT 1 FROM conversations WHERE id = %s FOR SHARE",
                                     (conversation_id,))
            if await cur.fetchone() is None:
                return  # deleted while the turn ran: nothing of it stays
            if change.messages:
                rows = [(i, *message_row(m)) for i, m in change.messages]
                blobs = dict(b for _, _, found in rows for b in found)
                async with conn.cursor() as cur:
                    await cur.executemany("INSERT INTO messages VALUES (%s, %s, %s)", [
                        (conversation_id, i, text) for i, text, _ in rows])
                    if blobs:  # each row kept and locked until this commits (``delete``)
                        await cur.executemany(
                            "INSERT INTO attachments VALUES (%s, %s) ON CONFLICT (digest) DO "
                            "UPDATE SET digest = EXCLUDED.digest", sorted(blobs.items()))
                        await cur.executemany(
                            "INSERT INTO message_attachments VALUES (%s, %s) ON CONFLICT DO "
                            "NOTHING", [(conversation_id, digest) for digest in blobs])
                await conn.execute(
                    "UPDATE conversations SET length = %s, updated_at = %s, title = "
                    "COALESCE(title, %s) WHERE id = %s",
                    (change.messages[-1][0] + 1, as_datetime(self.clock()),
                     title_of(change.messages), conversation_id))
            if change.subroutines:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO subroutines VALUES (%s, %s, %s, %s) ON CONFLICT "
                        "(conversation_id, idx) DO UPDATE SET length = EXCLUDED.length, "
                        "record = EXCLUDED.record", [
                            (conversation_id, i, r.size, dumps(r.to_dict()))
                            for i, r in change.subroutines])
            if change.state is not None:
                await conn.execute("UPDATE conversations SET state = %s WHERE id = %s",
                                   (dumps(change.state), conversation_id))
            if change.internal is not None:
                await conn.execute("UPDATE conversations SET internal = %s WHERE id = %s",
                                   (dumps(change.internal), conversation_id))
            if change.approvals is not None:
                await conn.execute("UPDATE conversations SET approvals = %s WHERE id = %s",
                                   (dumps(change.approvals), conversation_id))
            if change.status is not None:
                await conn.execute(
                    "UPDATE conversations SET status = %s, waiting_for = %s, outcome = %s "
                    "WHERE id = %s", (change.status, _json(change.waiting_for),
                                      _json(change.outcome), conversation_id))
            if change.status == "ended":  # its queue is dropped
                await conn.execute("DELETE FROM queued WHERE conversation_id = %s",
                                   (conversation_id,))
            elif change.dequeued:
                await conn.execute("DELETE FROM queued WHERE conversation_id = %s AND id = "
                                   "ANY(%s)", (conversation_id, list(change.dequeued)))

    async def delete(self, conversation_id: str) -> bool:
        """The conversation and all of it; its attachments too, unless another conversation
        uses them. A write of another conversation that keeps the same binary at the same
        time (``write``) locks its row (an insert, or an update to itself), in digest order;
        so the rows are locked here first, which waits for such a write to commit, and only
        then, in a statement of its own (which sees that commit, at read committed), are those
        no conversation uses deleted. The other order is safe too: a write that comes while
        the row is locked or deleted here waits, and inserts it anew. (A single statement
        would not do: its subquery would not see the other reference, and Postgres rechecks
        only the locked row itself.)"""
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE",
                               (conversation_id,))  # a write of this one: done first
            cur = await conn.execute("DELETE FROM message_attachments WHERE conversation_id = "
                                     "%s RETURNING digest", (conversation_id,))
            used = sorted(d for (d,) in await cur.fetchall())
            if used:
                await conn.execute("SELECT 1 FROM attachments WHERE digest = ANY(%s) ORDER BY "
                                   "digest FOR UPDATE", (used,))
                await conn.execute("DELETE FROM attachments a WHERE a.digest = ANY(%s) AND NOT "
                                   "EXISTS (SELECT 1 FROM message_attachments m WHERE m.digest "
                                   "= a.digest)", (used,))
            for table in ("messages", "subroutines", "idempotency", "feedback", "queued"):
                await conn.execute(f"DELETE FROM {table} WHERE conversation_id = %s",
                                   (conversation_id,))
            cur = await conn.execute("DELETE FROM conversations WHERE id = %s",
                                     (conversation_id,))
            return bool(cur.rowcount)

    async def swap(self, conversation_id: str, branch_id: str, kept_as: str) -> bool:
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute("SELECT id, lock_owner, lock_until, lock_holder, "
                                     "cancel_requested FROM conversations WHERE id = ANY(%s) "
                                     "ORDER BY id FOR UPDATE", ([conversation_id, branch_id],))
            rows = {row[0]: row[1:] for row in await cur.fetchall()}
            if len(rows) != 2:
                return False
            await conn.execute("UPDATE conversations SET id = %s, lock_owner = NULL, lock_until "
                               "= NULL, lock_holder = NULL, cancel_requested = false WHERE id "
                               "= %s", (kept_as, conversation_id))
            await conn.execute("UPDATE conversations SET id = %s, lock_owner = %s, lock_until = "
                               "%s, lock_holder = %s, cancel_requested = %s WHERE id = %s",
                               (conversation_id, *rows[conversation_id], branch_id))
            for table in MOVED:
                await conn.execute(f"UPDATE {table} SET conversation_id = %s WHERE "
                                   "conversation_id = %s", (kept_as, conversation_id))
                await conn.execute(f"UPDATE {table} SET conversation_id = %s WHERE "
                                   "conversation_id = %s", (conversation_id, branch_id))
            return True

    @contextlib.asynccontextmanager
    async def created(self, conversation_id: str, state: Mapping[str, Any], *,
                      owner: str = "default") -> AsyncIterator[bool]:
        await self._unreleased.let_go()
        async with self._conn() as conn:
            cur = await conn.execute(
                "INSERT INTO conversations (id, state, status, internal, owner, updated_at, "
                "lock_owner, lock_until, lock_holder) VALUES (%s, %s, 'waiting', '{}', %s, %s, "
                "%s, now() + %s * interval '1 second', %s) ON CONFLICT (id) DO NOTHING "
                "RETURNING 1", (conversation_id, dumps(dict(state)), owner,
                                as_datetime(self.clock()), self._owner, self.lease,
                                this_process()))
            taken = bool(await cur.fetchone())
        try:
            yield taken
        finally:
            if taken:
                await self._release(conversation_id)

    @contextlib.asynccontextmanager
    async def turn(self, conversation_id: str) -> AsyncIterator[bool]:
        take = ("UPDATE conversations SET lock_owner = %s, lock_until = now() + %s * interval "
                "'1 second', lock_holder = %s, cancel_requested = false WHERE id = %s AND ")
        holder = this_process()
        await self._unreleased.let_go()  # leases of this worker's turns that failed: gone
        async with self._conn() as conn:
            cur = await conn.execute(take + f"(lock_owner IS NULL OR {LAPSED}) RETURNING 1",
                                     (self._owner, self.lease, holder, conversation_id))
            taken = bool(await cur.fetchone())
            if not taken:  # held: by a process of this machine that died? (holders.py)
                cur = await conn.execute("SELECT lock_owner, lock_holder FROM conversations "
                                         "WHERE id = %s", (conversation_id,))
                row = await cur.fetchone()
                if row is not None and gone(row[1]):
                    cur = await conn.execute(take + "lock_owner = %s RETURNING 1", (
                        self._owner, self.lease, holder, conversation_id, row[0]))
                    taken = bool(await cur.fetchone())
        try:
            yield taken
        finally:
            if taken:
                await self._release(conversation_id)

    async def _release(self, conversation_id: str) -> None:
        """Clear the lease; once more on a fresh connection when the first try finds the
        connection cut (the pool recovers), so a turn that failed with the store lets go; if
        the database is down, as soon as it answers again (``releases.py``)."""
        for attempt in (1, 2):
            try:
                await self._release_all([conversation_id])
                return
            except StoreError:
                if attempt == 2:
                    self._unreleased.add(conversation_id)
                    raise

    async def _release_all(self, conversation_ids: list[str]) -> None:
        """Clear this worker's leases of these conversations."""
        async with self._conn() as conn:
            await conn.execute(
                "UPDATE conversations SET lock_owner = NULL, lock_until = NULL, lock_holder = "
                "NULL, cancel_requested = false WHERE id = ANY(%s) AND lock_owner = %s",
                (conversation_ids, self._owner))

    async def renew(self, conversation_id: str, *, extend: bool = True) -> str:
        async with self._conn() as conn:
            if extend:
                cur = await conn.execute(
                    "UPDATE conversations SET lock_until = now() + %s * interval '1 second' "
                    "WHERE id = %s AND lock_owner = %s RETURNING cancel_requested",
                    (self.lease, conversation_id, self._owner))
            else:
                cur = await conn.execute(
                    "SELECT cancel_requested FROM conversations WHERE id = %s AND "
                    "lock_owner = %s", (conversation_id, self._owner))
            row = await cur.fetchone()
        return LOST if row is None else CANCEL if row[0] else HELD

    async def request_cancel(self, conversation_id: str) -> bool:
        async with self._conn() as conn:
            cur = await conn.execute(
                "UPDATE conversations SET cancel_requested = true WHERE id = %s AND lock_owner "
                f"IS NOT NULL AND NOT {LAPSED} RETURNING 1", (conversation_id,))
            return bool(await cur.fetchone())

    async def running(self, conversation_id: str) -> bool:
        async with self._conn() as conn:
            cur = await conn.execute(
                "SELECT lock_holder FROM conversations WHERE id = %s AND lock_owner IS NOT "
                f"NULL AND NOT {LAPSED}", (conversation_id,))
            row = await cur.fetchone()
            return row is not None and not gone(row[0])

    async def idempotent(self, conversation_id: str, key: str
                         ) -> tuple[str, dict[str, Any] | None] | None:
        async with self._conn() as conn:
            cur = await conn.execute("SELECT digest, response FROM idempotency WHERE "
                                     "conversation_id = %s AND key = %s", (conversation_id, key))
            row = await cur.fetchone()
            return None if row is None else (row[0], row[1])

    async def remember(self, conversation_id: str, key: str, digest: str,
                       response: dict[str, Any] | None) -> bool:
        async with self._conn() as conn:
            if response is None:
                cur = await conn.execute("INSERT INTO idempotency VALUES (%s, %s, %s, NULL) "
                                         "ON CONFLICT DO NOTHING", (conversation_id, key, digest))
                return bool(cur.rowcount)
            await conn.execute(
                "INSERT INTO idempotency VALUES (%s, %s, %s, %s) ON CONFLICT (conversation_id, "
                "key) DO UPDATE SET response = EXCLUDED.response",
                (conversation_id, key, digest, dumps(response)))
            return True

    async def forget(self, conversation_id: str, key: str) -> None:
        async with self._conn() as conn:
            await conn.execute("DELETE FROM idempotency WHERE conversation_id = %s AND key = %s "
                               "AND response IS NULL", (conversation_id, key))

    async def enqueue(self, conversation_id: str, queued: Queued, *, limit: int) -> bool:
        async with self._conn() as conn, conn.transaction():
            cur = await conn.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE",
                                     (conversation_id,))  # one enqueue at a time: the count
            if await cur.fetchone() is None:
                return False
            cur = await conn.execute(
                "INSERT INTO queued SELECT %s, COALESCE(MAX(seq), 0) + 1, %s, %s, %s FROM "
                "queued WHERE conversation_id = %s HAVING COUNT(*) < %s",
                (conversation_id, queued.message.id, queued.steer,
                 dumps(queued.message.to_dict()), conversation_id, limit))
            return bool(cur.rowcount)

    async def queued(self, conversation_id: str) -> list[Queued]:
        async with self._conn() as conn:
            cur = await conn.execute("SELECT steer, message FROM queued WHERE conversation_id "
                                     "= %s ORDER BY seq", (conversation_id,))
            rows = await cur.fetchall()
        return [Queued(Message.from_dict(m), bool(steer)) for steer, m in rows]

    async def withdraw(self, conversation_id: str, message_id: str) -> bool:
        async with self._conn() as conn:
            cur = await conn.execute("DELETE FROM queued WHERE conversation_id = %s AND id = "
                                     "%s", (conversation_id, message_id))
            return bool(cur.rowcount)

    async def conversations(self, query: Query) -> list[Summary]:
        where: list[str] = ["true"]
        params: list[Any] = []
        for clause, value in (("owner = %s", query.owner), ("status = %s", query.status), (
                "waiting_for->>'type' = %s", query.waiting_for)):
            if value is not None:
                where.append(clause)
                params.append(value)
        if query.before is not None:
            where.append("(updated_at, id) < (%s, %s)")
            params += [as_datetime(query.before[0]), query.before[1]]
        async with self._conn() as conn:
            cur = await conn.execute(
                "SELECT id, title, status, waiting_for, updated_at, owner, parent FROM "
                "conversations "
                f"WHERE {' AND '.join(where)} ORDER BY updated_at DESC, id DESC LIMIT %s",
                (*params, query.limit + 1))
            rows = await cur.fetchall()
        return [Summary(r[0], r[1], r[2], r[3], 0 if r[4] is None else micros(r[4]), r[5], r[6])
                for r in rows]

    async def rate(self, conversation_id: str, index: int, rating: int, comment: str | None,
                   user: str) -> None:
        async with self._conn() as conn:
            await conn.execute(
                'INSERT INTO feedback (conversation_id, idx, rating, comment, "user", time) '
                "SELECT %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM conversations WHERE "
                "id = %s) ON CONFLICT (conversation_id, idx) DO UPDATE SET rating = "
                'EXCLUDED.rating, comment = EXCLUDED.comment, "user" = EXCLUDED."user", '
                "time = EXCLUDED.time", (conversation_id, index, rating, comment, user,
                                         as_datetime(self.clock()), conversation_id))

    async def feedback(self, since: int | None = None) -> list[Feedback]:
        async with self._conn() as conn:
            cur = await conn.execute(
                'SELECT f.conversation_id, f.idx, m.message, f.rating, f.comment, f."user", '
                "f.time FROM feedback f LEFT JOIN messages m ON m.conversation_id = "
                "f.conversation_id AND m.idx = f.idx WHERE %s::timestamptz IS NULL OR f.time "
                ">= %s ORDER BY f.time, f.conversation_id, f.idx",
                (None if since is None else as_datetime(since),) * 2)
            rows = await cur.fetchall()
        return [Feedback(r[0], r[1], text_of_record(r[2]), r[3], r[4], r[5], micros(r[6]))
                for r in rows]

    async def ratings(self, conversation_id: str, user: str) -> dict[int, Rating]:
        async with self._conn() as conn:
            cur = await conn.execute(
                'SELECT idx, rating, comment FROM feedback WHERE conversation_id = %s AND "user" '
                "= %s ORDER BY idx", (conversation_id, user))
            rows = await cur.fetchall()
        return {r[0]: Rating(r[1], r[2]) for r in rows}


async def _to_v5(conn: Any) -> None:
    """Schema 5: add the list's columns when missing (in the migrator's transaction), and
    give the rows of earlier versions their titles, from their first user message."""
    cur = await conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = "
                             "current_schema() AND table_name = 'conversations' AND "
                             "column_name = 'title'")
    titled = await cur.fetchone()
    await conn.execute(TO_V5)
    await conn.execute(TO_V6)
    if titled:
        return
    await conn.execute("ALTER TABLE conversations ADD COLUMN title TEXT")
    cur = await conn.execute(
        "SELECT DISTINCT ON (conversation_id) conversation_id, message FROM messages WHERE "
        "message->>'role' = 'user' ORDER BY conversation_id, idx")
    for conversation_id, message in await cur.fetchall():
        await conn.execute("UPDATE conversations SET title = %s WHERE id = %s",
                           (text_of_record(message)[:80], conversation_id))


async def _to_v4(conn: Any) -> None:
    """Schema 4: convo's own records get a column apart from the state, and are moved out of
    the state of the rows that had them there (once, when the column is added, in the
    migrator's transaction; rows an older worker writes later are moved when read)."""
    cur = await conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = "
                             "current_schema() AND table_name = 'conversations' AND "
                             "column_name = 'internal'")
    if await cur.fetchone():
        return
    await conn.execute("ALTER TABLE conversations ADD COLUMN internal JSONB")
    cur = await conn.execute("SELECT id, state FROM conversations")
    for conversation_id, state in await cur.fetchall():
        moved = split(conversation_id, state, None)
        await conn.execute("UPDATE conversations SET state = %s, internal = %s WHERE id = %s",
                           (dumps(moved[0]), dumps(moved[1]), conversation_id))


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)
