"""Streamed text from a worker's model activity to the HTTP process whose client waits for it,
through the store both share (Temporal itself streams nothing).

The model activity (``activities.py``) publishes the reply's text and reasoning as it arrives,
in batches of at most ``BATCH_S``; the HTTP process (``engine.py``) listens to the
conversation while its Update runs and turns what it hears into the served events
(``TextDelta``, ``ReasoningDelta``) of SSE and the other faces. Each note carries the id the
reply is stored under (the activity chose it at its first delta; the workflow stores the
reply under it), so a face's streamed message and the committed one are the same.

How each store carries the notes:

- Postgres: ``NOTIFY convo_deltas`` (a JSON payload of at most ``NOTIFY_BYTES``: longer text
  goes in several), heard on one ``LISTEN`` connection per HTTP process.
- SQLite: rows of a table ``convo_deltas`` in the store's own file (created when first
  used), read every ``POLL_S`` by the HTTP process (so at most about 200 ms late); rows are
  dropped by the listener once read and by the publisher once older than ``KEEP_S``.
- memory: within one process only (a worker and the app in one process, as tests run
  them); ``convo worker`` and ``convo serve --engine`` refuse a memory store, which no other
  process could read.
- any other store: no notes (the turn's messages still come, once its Update returns).

Notes are best effort: the store's messages are the record, and a note that is lost costs a
client only the live text (the committed message follows as always).

(Over 300 lines: one channel, written once per store that can carry it, with its publisher.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

import attrs

from ..serve._events import ReasoningDelta, Retract, ServedEvent, TextDelta
from ..serve._stores.base import Store

logger = logging.getLogger("convo.temporal")

BATCH_S: Final = 0.05  # a publisher sends what streamed at most this long ago
POLL_S: Final = 0.1  # SQLite: how often a listener reads the table
KEEP_S: Final = 60.0  # SQLite: rows older than this are dropped by the next publisher
NOTIFY_BYTES: Final = 7000  # Postgres: a payload stays under NOTIFY's 8000 bytes
CHANNEL: Final = "convo_deltas"
SYNC: Final = "sync"  # the kind of a note a Postgres listener sends itself (``caught_up``)


@attrs.frozen(slots=True)
class Note:
    """A piece of a streamed reply: ``kind`` ``"text"`` or ``"reasoning"``, or ``"retract"``
    (a live output guard took the reply back: no text); ``message_id``: the id the reply is
    stored under."""

    kind: str
    text: str
    message_id: str | None = None

    def event(self) -> ServedEvent:
        if self.kind == "reasoning":
            return ReasoningDelta(self.text, self.message_id)
        if self.kind == "retract":
            return Retract(self.message_id)
        return TextDelta(self.text, self.message_id)

    def to_json(self) -> list[Any]:
        return [self.kind, self.text, self.message_id]

    @classmethod
    def from_json(cls, data: Any) -> Note:
        kind, text, message_id = data
        return cls(str(kind), str(text), None if message_id is None else str(message_id))


class Heard:
    """What a listener heard of one conversation, in order."""

    def __init__(self, caught_up: Callable[[], Any] | None = None) -> None:
        self.notes: asyncio.Queue[Note] = asyncio.Queue()
        self._caught_up = caught_up

    async def get(self) -> Note:
        return await self.notes.get()

    def ready(self) -> list[Note]:
        """The notes heard and not yet taken."""
        taken = []
        while not self.notes.empty():
            taken.append(self.notes.get_nowait())
        return taken

    async def caught_up(self) -> None:
        """Once this returns, every note published before it was called is heard."""
        if self._caught_up is not None:
            await self._caught_up()


class Channel:
    """How notes go from a publisher to the listeners of a conversation (this base: nowhere,
    for a store that has no way to carry them)."""

    async def publish(self, conversation_id: str, notes: Sequence[Note]) -> None:
        return None

    @contextlib.asynccontextmanager
    async def listen(self, conversation_id: str) -> AsyncIterator[Heard]:
        yield Heard()

    async def close(self) -> None:
        return None


class LocalChannel(Channel):
    """Within one process (the memory store): straight to the listeners, whichever event loop
    each listens on."""

    def __init__(self) -> None:
        self.listeners: dict[str, list[tuple[asyncio.AbstractEventLoop, Heard]]] = {}

    async def publish(self, conversation_id: str, notes: Sequence[Note]) -> None:
        for loop, heard in list(self.listeners.get(conversation_id, ())):
            for note in notes:
                loop.call_soon_threadsafe(heard.notes.put_nowait, note)

    @contextlib.asynccontextmanager
    async def listen(self, conversation_id: str) -> AsyncIterator[Heard]:
        heard = Heard(lambda: asyncio.sleep(0))  # (what was published is scheduled already)
        entry = (asyncio.get_running_loop(), heard)
        self.listeners.setdefault(conversation_id, []).append(entry)
        try:
            yield heard
        finally:
            self.listeners[conversation_id].remove(entry)
            if not self.listeners[conversation_id]:
                del self.listeners[conversation_id]


SQLITE_TABLE: Final = ("CREATE TABLE IF NOT EXISTS convo_deltas (seq INTEGER PRIMARY KEY "
                       "AUTOINCREMENT, conversation_id TEXT NOT NULL, at REAL NOT NULL, "
                       "notes TEXT NOT NULL)")


class SQLiteChannel(Channel):
    """Rows in the store's own file, polled (module docstring)."""

    def __init__(self, store: Any) -> None:
        self.store = store  # a SQLiteStore: its one connection, a transaction a call

    async def publish(self, conversation_id: str, notes: Sequence[Note]) -> None:
        text = json.dumps([n.to_json() for n in notes], ensure_ascii=False)
        now = time.time()

        def insert(db: Any) -> None:
            db.execute(SQLITE_TABLE)
            db.execute("INSERT INTO convo_deltas (conversation_id, at, notes) VALUES (?, ?, ?)",
                       (conversation_id, now, text))
            db.execute("DELETE FROM convo_deltas WHERE at < ?", (now - KEEP_S,))

        await self.store._do(insert)

    @contextlib.asynccontextmanager
    async def listen(self, conversation_id: str) -> AsyncIterator[Heard]:
        def newest(db: Any) -> int:
            db.execute(SQLITE_TABLE)
            return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM convo_deltas"
                                  ).fetchone()[0])

        seen = await self.store._do(newest)
        first = seen

        async def read() -> None:
            nonlocal seen

            def rows(db: Any) -> list[tuple[int, str]]:
                return list(db.execute(
                    "SELECT seq, notes FROM convo_deltas WHERE conversation_id = ? AND seq > ? "
                    "ORDER BY seq", (conversation_id, seen)))

            for seq, text in await self.store._do(rows):
                seen = seq
                for note in json.loads(text):
                    heard.notes.put_nowait(Note.from_json(note))

        async def poll() -> None:
            while True:
                await asyncio.sleep(POLL_S)
                try:
                    await read()
                except Exception as exc:  # (the store is down: the messages still come)
                    logger.warning("conversation %s: streamed text not read: %s",
                                   conversation_id, exc)

        heard = Heard(read)
        polling = asyncio.ensure_future(poll())
        try:
            yield heard
        finally:
            polling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await polling
            if seen > first:
                with contextlib.suppress(Exception):
                    await self.store._do(lambda db: db.execute(
                        "DELETE FROM convo_deltas WHERE conversation_id = ? AND seq <= ?",
                        (conversation_id, seen)))


class PostgresChannel(Channel):
    """``NOTIFY``/``LISTEN`` (module docstring): one listening connection per process, its
    notes handed to the listeners of each conversation."""

    def __init__(self, store: Any) -> None:
        self.store = store  # a PostgresStore: its pool sends, its URL listens
        self.listeners: dict[str, list[Heard]] = {}
        self.syncs: dict[str, asyncio.Event] = {}
        self._connection: Any = None
        self._reading: asyncio.Task[None] | None = None
        self._started: asyncio.Lock | None = None

    async def publish(self, conversation_id: str, notes: Sequence[Note]) -> None:
        payloads = _payloads(conversation_id, notes)
        async with self.store._conn() as conn:
            for payload in payloads:
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

    async def _start(self) -> None:
        if self._started is None:
            self._started = asyncio.Lock()
        async with self._started:
            if self._reading is not None and not self._reading.done():
                return
            import psycopg

            self._connection = await psycopg.AsyncConnection.connect(self.store.url,
                                                                     autocommit=True)
            await self._connection.execute(f"LISTEN {CHANNEL}")
            self._reading = asyncio.ensure_future(self._read(self._connection))

    async def _read(self, connection: Any) -> None:
        try:
            async for notify in connection.notifies():
                data = json.loads(notify.payload)
                cid, notes = data["c"], data["n"]
                if data.get("k") == SYNC:
                    synced = self.syncs.pop(cid, None)
                    if synced is not None:
                        synced.set()
                    continue
                for heard in self.listeners.get(cid, ()):
                    for note in notes:
                        heard.notes.put_nowait(Note.from_json(note))
        except Exception as exc:  # (the connection was lost: the next listener reconnects)
            logger.warning("streamed text: the LISTEN connection was lost: %s", exc)
        finally:
            for synced in self.syncs.values():
                synced.set()
            self.syncs.clear()
            with contextlib.suppress(Exception):
                await connection.close()

    @contextlib.asynccontextmanager
    async def listen(self, conversation_id: str) -> AsyncIterator[Heard]:
        try:
            await self._start()
        except Exception as exc:
            logger.warning("conversation %s: streamed text not heard: %s", conversation_id,
                           exc)
            yield Heard()
            return

        async def caught_up() -> None:
            token = f"{conversation_id} {secrets.token_hex(8)}"
            synced = self.syncs[token] = asyncio.Event()
            async with self.store._conn() as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(
                    {"c": token, "k": SYNC, "n": []})))
            # Notifications arrive in the order their transactions committed: once this one
            # is heard, so is every note published before it was sent.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(synced.wait(), 5.0)

        heard = Heard(caught_up)
        self.listeners.setdefault(conversation_id, []).append(heard)
        try:
            yield heard
        finally:
            self.listeners[conversation_id].remove(heard)
            if not self.listeners[conversation_id]:
                del self.listeners[conversation_id]

    async def close(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reading
            self._reading = None


def _payloads(conversation_id: str, notes: Sequence[Note]) -> list[str]:
    """The notes as ``NOTIFY`` payloads, each under ``NOTIFY_BYTES`` (a long text split)."""
    pieces: list[Note] = []
    for note in notes:
        text = note.text
        step = NOTIFY_BYTES // 8  # (a character is at most 4 bytes, 6 once JSON-escaped)
        for at in range(0, max(len(text), 1), step):
            pieces.append(attrs.evolve(note, text=text[at:at + step]))
    payloads: list[str] = []
    batch: list[list[Any]] = []
    size = 0
    for piece in pieces:
        encoded = json.dumps(piece.to_json(), ensure_ascii=False)
        if batch and size + len(encoded.encode()) > NOTIFY_BYTES - 200:
            payloads.append(json.dumps({"c": conversation_id, "n": batch}, ensure_ascii=False))
            batch, size = [], 0
        batch.append(piece.to_json())
        size += len(encoded.encode())
    if batch:
        payloads.append(json.dumps({"c": conversation_id, "n": batch}, ensure_ascii=False))
    return payloads


_LOCAL: dict[int, LocalChannel] = {}


def channel(store: Store) -> Channel:
    """The channel of ``store``'s kind (module docstring)."""
    from ..serve._stores.memory import MemoryStore

    if isinstance(store, MemoryStore):
        return _LOCAL.setdefault(id(store), LocalChannel())
    kind = type(store).__name__
    if kind == "SQLiteStore":
        return SQLiteChannel(store)
    if kind == "PostgresStore":
        return PostgresChannel(store)
    return Channel()


class Publisher:
    """A model activity's sink: the served events of its reply's text, sent as notes every
    ``BATCH_S`` while ``running``."""

    def __init__(self, channel: Channel, conversation_id: str) -> None:
        self.channel = channel
        self.conversation_id = conversation_id
        self.pending: list[Note] = []
        self._more = asyncio.Event()

    def __call__(self, event: ServedEvent) -> None:
        if isinstance(event, TextDelta):
            self.pending.append(Note("text", event.text, event.message_id))
        elif isinstance(event, ReasoningDelta):
            self.pending.append(Note("reasoning", event.text, event.message_id))
        else:
            return
        self._more.set()

    async def retract(self, message_ids: Sequence[str | None]) -> None:
        """Say that the streamed replies ``message_ids`` were taken back (a live output guard
        tripped on them, in the workflow), each as a ``"retract"`` note."""
        self.pending = [Note("retract", "", i) for i in message_ids]
        await self._send()

    async def _send(self) -> None:
        notes, self.pending = self.pending, []
        if notes:
            try:
                await self.channel.publish(self.conversation_id, notes)
            except Exception as exc:  # best effort: the committed message follows anyway
                logger.warning("conversation %s: streamed text not sent: %s",
                               self.conversation_id, exc)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Publisher]:
        """Sending while the block runs; what is left, sent before it ends (a publish is
        never cut off half way)."""
        stopping = False

        async def loop() -> None:
            while True:
                await self._more.wait()
                self._more.clear()
                await self._send()
                if stopping:
                    return
                await asyncio.sleep(BATCH_S)

        sending = asyncio.ensure_future(loop())
        try:
            yield self
        finally:
            stopping = True
            self._more.set()
            await sending
            await self._send()
