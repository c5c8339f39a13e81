"""A walk over the conversation list, page by page with its cursor, sees every conversation
once in order, whatever the timestamps and their ties (hypothesis, on each store); and stores
of schema 4 gain the list's columns on start, their rows owned by "default"."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_kit import TEMPLATE, Postgres, model
from starlette.testclient import TestClient

from convo.serve import create_app
from convo.serve._stores import open_store
from convo.serve._stores.listing import Query, iso, page, read_cursor

BASE = 1_700_000_000_000_000


async def walk(url: str, times: list[int], limit: int) -> tuple[list[str], list[str]]:
    """Create a conversation at each time (one owner of its own), then walk its list:
    the ids seen, and the ids sorted as the list promises."""
    store = open_store(url)
    await store.open()
    owner, made = uuid.uuid4().hex, []
    try:
        for moment in times:
            store.clock = lambda moment=moment: BASE + moment  # type: ignore[attr-defined]
            cid = uuid.uuid4().hex  # (six hex digits met twice in 360 ids: a CI failure)
            await store.create(cid, {}, owner=owner)
            made.append((BASE + moment, cid))
        seen: list[str] = []
        before = None
        while True:
            query = Query(owner=owner, limit=limit, before=before)
            body = page(await store.conversations(query), query, with_user=False)
            seen += [item["id"] for item in body["conversations"]]
            if body["next"] is None:
                break
            before = read_cursor(body["next"])
    finally:
        await store.close()
    return seen, [cid for _, cid in sorted(made, reverse=True)]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(times=st.lists(st.integers(0, 4), max_size=12), limit=st.integers(1, 5))
def test_a_walk_equals_the_sorted_list(store_url: str, times: list[int], limit: int) -> None:
    seen, expected = asyncio.run(walk(store_url, times, limit))
    assert seen == expected


def test_iso_times_are_utc_microseconds() -> None:
    assert iso(BASE + 5) == "2023-11-14T22:13:20.000005Z"


V4_ROW = ("old", json.dumps({"customer": "Ann"}), "waiting",
          json.dumps({"type": "user", "prompt": None}))


def test_a_schema_4_sqlite_store_gains_owners_titles_and_times(tmp_path: Path) -> None:
    from convo.serve._stores.base import SCHEMA_VERSION
    from convo.serve._stores.sqlite import SCHEMA

    path = tmp_path / "v4.db"
    with sqlite3.connect(path) as db:  # as convo 4 left it
        base = SCHEMA[:SCHEMA.index("CREATE TABLE IF NOT EXISTS feedback")]
        db.executescript(base)
        db.execute("ALTER TABLE conversations ADD COLUMN internal TEXT")
        db.execute("INSERT INTO convo_meta VALUES ('schema_version', '4')")
        db.execute("INSERT INTO conversations (id, state, status, waiting_for, created, "
                   "internal, length) VALUES (?, ?, ?, ?, 1700000000.25, '{}', 2)", V4_ROW)
        db.executemany("INSERT INTO messages VALUES ('old', ?, ?)", [
            (0, json.dumps({"role": "system", "content": "Be brief."})),
            (1, json.dumps({"role": "user", "content": [{"type": "text", "text": "x" * 90}]}))])
    db.close()
    with TestClient(create_app(TEMPLATE, model(), store=f"sqlite:///{path}")) as client:
        items = client.get("/api/conversations").json()["conversations"]
    assert items == [{"id": "old", "title": "x" * 80, "status": "waiting",
                      "waiting_for": {"type": "user", "prompt": None},
                      "updated_at": "2023-11-14T22:13:20.250000Z", "parent": None}]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT owner, value FROM conversations, convo_meta").fetchone() == (
            "default", str(SCHEMA_VERSION))
        indexes = {r[1] for r in db.execute("PRAGMA index_list(conversations)")}
    db.close()
    assert {"conversations_owner_updated", "conversations_updated"} <= indexes


def test_a_schema_4_postgres_store_gains_owners_titles_and_times(postgres: Postgres) -> None:
    import psycopg

    from convo.serve._stores.postgres import SCHEMA

    url = postgres.fresh()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SCHEMA[:SCHEMA.index("CREATE TABLE IF NOT EXISTS feedback")])
        conn.execute("ALTER TABLE conversations ADD COLUMN internal JSONB")
        conn.execute("INSERT INTO convo_meta VALUES ('schema_version', '4')")
        conn.execute("INSERT INTO conversations (id, state, status, waiting_for, created, "
                     "internal, length) VALUES (%s, %s, %s, %s, "
                     "'2023-11-14T22:13:20.25Z', '{}', 2)", V4_ROW)
        for index, message in enumerate([{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "hello there"}]):
            conn.execute("INSERT INTO messages VALUES ('old', %s, %s)",
                         (index, json.dumps(message)))
    with TestClient(create_app(TEMPLATE, model(), store=url)) as client:
        items = client.get("/api/conversations").json()["conversations"]
        assert items[0] == {"id": "old", "title": "hello there", "status": "waiting",
                            "waiting_for": {"type": "user", "prompt": None},
                            "updated_at": "2023-11-14T22:13:20.250000Z", "parent": None}
        new = client.post("/api/conversations", json={}).json()["id"]
        assert [i["id"] for i in client.get("/api/conversations").json()[
            "conversations"]] == [new, "old"]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT owner FROM conversations WHERE id = 'old'").fetchone() == (
            "default",)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_an_open_server_lists_the_default_users_conversations(kind: str,
                                                              tmp_path: Path) -> None:
    store = "memory" if kind == "memory" else f"sqlite:///{tmp_path / 'c.db'}"
    with TestClient(create_app(TEMPLATE, model(), store=store, token="s")) as client:
        headers = {"Authorization": "Bearer s"}
        cid = client.post("/api/conversations", json={}, headers=headers).json()["id"]
        assert [i["id"] for i in client.get("/api/conversations", headers=headers).json()[
            "conversations"]] == [cid]
