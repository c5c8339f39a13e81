"""Stores keep each distinct binary once, by its hash (API.md §16): the same 1 MB image sent
ten times grows a SQLite store by at most 1.1 MB; every store gives the parts back exactly;
a deleted conversation's attachments go when no other conversation uses them, even one that
stores the same binary at that moment (Postgres)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from convo import Document, Image, Message, Text
from convo.serve._stores import Change, Store, open_store

MEGABYTE = os.urandom(1_000_000)  # random: nothing to compress


def image_message(i: int, data: bytes = MEGABYTE) -> Message:
    return Message("user", [Text(f"look again ({i})"),
                            Image(data, media_type="image/png", filename="big.png")])


@contextlib.asynccontextmanager
async def opened(url: str, *conversations: str) -> AsyncIterator[Store]:
    """The store of ``url``, opened, with ``conversations`` created; closed at the end."""
    store = open_store(url)
    await store.open()
    try:
        for cid in conversations:
            await store.create(cid, {})
        yield store
    finally:
        await store.close()


async def send(store: Store, cid: str, messages: list[Message], start: int = 0) -> None:
    for i, m in enumerate(messages, start):
        await store.write(cid, Change(messages=((i, m),)))


def size(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA page_count").fetchone()[0]) * int(
            db.execute("PRAGMA page_size").fetchone()[0])
    finally:
        db.close()


def test_ten_sends_of_one_megabyte_grow_sqlite_by_at_most_1_1_mb(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    async def scenario() -> list[Message]:
        async with opened(f"sqlite:///{path}", "a") as store:
            await send(store, "a", [Message("user", "hi")])
            before = size(path)
            await send(store, "a", [image_message(i) for i in range(10)], start=1)
            assert size(path) - before <= 1_100_000
            stored = await store.load("a")
        assert stored is not None
        return stored.messages

    messages = asyncio.run(scenario())
    assert messages[1:] == [image_message(i) for i in range(10)]


async def _blobs(store_url: str, path: Path | None) -> int:
    if path is not None:
        db = sqlite3.connect(path)
        try:
            return int(db.execute("SELECT count(*) FROM attachments").fetchone()[0])
        finally:
            db.close()
    import psycopg

    async with await psycopg.AsyncConnection.connect(store_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM attachments")
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


def test_every_store_gives_parts_back_and_drops_unused_ones(store_url: str) -> None:
    path = Path(store_url[len("sqlite:///"):]) if store_url.startswith("sqlite") else None
    other = Document(b"%PDF-1.4 small", media_type="application/pdf", filename="a.pdf")
    url = Image(url="https://example.com/cat.jpg", detail="low")

    async def scenario() -> None:
        async with opened(store_url, "a", "b") as store:
            await send(store, "a", [image_message(0), Message("user", [Text("and"), other,
                                                                      url])])
            await send(store, "b", [image_message(1)])
            for cid, expected in (("a", [image_message(0), Message("user", [Text("and"),
                                                                           other, url])]),
                                  ("b", [image_message(1)])):
                stored = await store.load(cid)
                assert stored is not None and stored.messages == expected
            if store_url == "memory":
                return
            assert await _blobs(store_url, path) == 2
            assert await store.delete("a")
            assert await _blobs(store_url, path) == 1  # "b" still uses the image
            stored = await store.load("b")
            assert stored is not None and stored.messages == [image_message(1)]
            assert await store.delete("b")
            assert await _blobs(store_url, path) == 0

    asyncio.run(scenario())


def test_an_older_row_with_the_data_inline_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    message = image_message(0, b"\x89PNG small")

    async def scenario() -> Message:
        async with opened(f"sqlite:///{path}", "a") as store:
            db = sqlite3.connect(path)  # as schema 3 wrote it: the base64 in the message's JSON
            db.execute("INSERT INTO messages VALUES (?, ?, ?)",
                       ("a", 0, json.dumps(message.to_dict())))
            db.commit()
            db.close()
            stored = await store.load("a")
        assert stored is not None
        return stored.messages[0]

    assert asyncio.run(scenario()) == message


@pytest.mark.parametrize("store_url", ["memory"])
def test_the_memory_store_keeps_parts_too(store_url: str) -> None:
    async def scenario() -> None:
        async with opened(store_url, "a") as store:
            await send(store, "a", [image_message(0, b"x")])
            stored = await store.load("a")
        assert stored is not None and stored.messages == [image_message(0, b"x")]

    asyncio.run(scenario())


# -- a delete racing a send of the same binary (Postgres) ---------------------------------------
# Two conversations share one stored image. Conversation "a" is deleted while a turn of "b"
# stores a message with the same image: the image must stay, or "b" can never be loaded again.
# The two transactions are interleaved by hand: a third connection holds a row lock that one of
# them waits on, so it stays open, half done, while the other one runs.

SMALL = b"\x89PNG shared by two conversations"


async def _waiting(url: str, count: int, done: asyncio.Future[Any] | None = None) -> None:
    """Until ``count`` backends wait for a lock (or ``done`` is done): polled, not timed."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as monitor:
        for _ in range(3000):
            cur = await monitor.execute("SELECT count(*) FROM pg_stat_activity WHERE "
                                        "wait_event_type = 'Lock' AND datname = "
                                        "current_database()")
            row = await cur.fetchone()
            if (row is not None and row[0] >= count) or (done is not None and done.done()):
                return
            await asyncio.sleep(0.01)  # polling for a lock wait, not timing the test
    raise AssertionError(f"gave up waiting for {count} transactions to wait for a lock")


@pytest.mark.parametrize("held", ["send", "delete"])
def test_a_delete_racing_a_send_of_the_same_image_keeps_it(postgres: Any, held: str) -> None:
    import psycopg

    url = postgres.fresh()
    shared = image_message(0, SMALL)

    async def scenario() -> None:
        async with opened(url, "a", "b") as store:
            await send(store, "a", [shared])
            async with await psycopg.AsyncConnection.connect(url) as gate:
                async with gate.transaction():
                    if held == "send":  # b's write waits after it stored its rows
                        await gate.execute("SELECT 1 FROM conversations WHERE id = 'b' FOR SHARE")
                        first = asyncio.ensure_future(send(store, "b", [shared]))
                    else:  # a's delete waits after it dealt with the image
                        await gate.execute("SELECT 1 FROM messages WHERE conversation_id = 'a' "
                                           "FOR KEY SHARE")
                        first = asyncio.ensure_future(store.delete("a"))
                    await _waiting(url, 1)
                    second = asyncio.ensure_future(
                        store.delete("a") if held == "send" else send(store, "b", [shared]))
                    await _waiting(url, 2, second)
                await asyncio.gather(first, second)
            stored = await store.load("b")
            assert stored is not None and stored.messages == [shared]
            assert await store.load("a") is None
            assert await _blobs(url, None) == 1
            assert await store.delete("b")
            assert await _blobs(url, None) == 0

    asyncio.run(scenario())
