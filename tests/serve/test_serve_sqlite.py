"""The SQLite store's two paths: a transaction runs on the event loop when the database is
free, and in a thread that waits for it (busy_timeout) when another process holds the write
lock, while the loop goes on serving."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from convo import Message
from convo.serve._stores import Change
from convo.serve._stores.sqlite import SQLiteStore


def test_a_write_waits_for_another_writer_off_the_loop_and_then_lands(tmp_path: Path) -> None:
    path = str(tmp_path / "busy.db")

    async def main() -> tuple[int, list[str], str]:
        store = SQLiteStore(path)
        await store.open()
        await store.create("c", {})
        await store.write("c", Change(messages=((0, Message("user", "first")),)))
        other = sqlite3.connect(path, isolation_level=None)  # another worker process
        other.execute("BEGIN IMMEDIATE")  # holds the write lock
        write = asyncio.create_task(store.write("c", Change(
            messages=((1, Message("user", "second")),), status="waiting")))
        turns = 0
        for _ in range(20):  # meanwhile the loop runs other tasks
            await asyncio.sleep(0)
            turns += 1
        assert not write.done()
        other.execute("COMMIT")
        other.close()
        await write
        after = await store.load("c")
        await store.close()
        assert after is not None
        return turns, [m.content for m in after.messages], after.status

    turns, contents, status = asyncio.run(main())
    assert turns == 20
    assert contents == ["first", "second"]
    assert status == "waiting"


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    async def main() -> str:
        store = SQLiteStore(str(tmp_path / "closed.db"))
        await store.open()
        await store.close()
        try:
            await store.create("c", {})
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "no error"

    assert asyncio.run(main()) == f"StoreError: the SQLite store {tmp_path / 'closed.db'} is closed"
