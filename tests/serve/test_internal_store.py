"""Schema 4: convo's own records in a column apart from ``state``, on SQLite and a real
Postgres. A store of schema 3 (tests/data/legacy/store_v3.db, made by convo before the move:
a long chat whose state held its context summary) is migrated on start and its conversations
go on; a malformed record of an old row is dropped with a warning, never a 500. The API shows
``state`` without convo's records."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from serve_kit import Postgres
from starlette.testclient import TestClient

from convo import FunctionModel, Message
from convo.serve import create_app
from convo.serve._stores import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent.parent
OLD = "41iUgl9W69BVu367vR7O0g"  # the conversation of store_v3.db
SUMMARY_TEXT = "The customer asked about prices, 6 more questions; all were answered."
SHOWN = {"id", "status", "messages", "state", "outcome", "waiting_for", "parent", "queued"}


def long_chat() -> ModuleType:
    spec = importlib.util.spec_from_file_location("internal_store_long_chat",
                                                  ROOT / "examples" / "long_chat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Seen:
    """The example's model, noting what it is sent."""

    def __init__(self, chat: ModuleType) -> None:
        self.fn = chat.shopkeeper
        self.sent: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> Any:
        self.sent.append(list(messages))
        return self.fn(messages, tools)


def app(store: str) -> tuple[Any, Seen]:
    chat = long_chat()
    seen = Seen(chat)
    return create_app(chat.template, FunctionModel(seen), store=store,
                      context=chat.context), seen


def goes_on(client: TestClient, seen: Seen, cid: str) -> None:
    """The migrated conversation: state without the record, and its summary still used."""
    shown = client.get(f"/api/conversations/{cid}").json()
    assert set(shown) == SHOWN | {"title", "feedback"} and shown["state"] == {"customer": "Ann"}
    said = client.post(f"/api/conversations/{cid}/messages",
                       json={"content": "What does tea cost?"})
    assert said.status_code == 200, said.text
    assert said.json()["state"] == {"customer": "Ann"}
    first = seen.sent[0]  # the summary is sent, or (a new cut) summarised further
    assert any(SUMMARY_TEXT in m.content for m in first), first


def test_a_schema_3_sqlite_store_is_migrated_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "convo.db"
    shutil.copyfile(ROOT / "tests" / "data" / "legacy" / "store_v3.db", path)
    with sqlite3.connect(path) as db:  # an old row whose record is malformed, and one forged
        for cid, record in (("bad", {"summary": "s", "upto": 1, "check": "c", "calls": 1,
                                     "usage": "lots"}),
                            ("negative", {"summary": "s", "upto": 1, "check": "c", "calls": 1,
                                          "usage": {"total_tokens": -10**6}})):
            db.execute("INSERT INTO conversations (id, state, status, waiting_for, length, "
                       "created) VALUES (?, ?, 'waiting', ?, 0, 0)",
                       (cid, json.dumps({"convo.context": record}),
                        json.dumps({"type": "user", "prompt": None})))
    db.close()
    served, seen = app(f"sqlite:///{path}")
    with pytest.warns(UserWarning) as caught, TestClient(served) as client:
        goes_on(client, seen, OLD)
        for cid in ("bad", "negative"):
            assert client.get(f"/api/conversations/{cid}").json()["state"] == {}
        with sqlite3.connect(path) as db:  # a row an older worker writes after the start
            db.execute("INSERT INTO conversations (id, state, status, waiting_for, length, "
                       "created) VALUES ('later', ?, 'waiting', ?, 0, 0)",
                       (json.dumps({"x": 1, "_convo_state": "billing"}),
                        json.dumps({"type": "user", "prompt": None})))
        db.close()
        assert client.get("/api/conversations/later").json()["state"] == {"x": 1}
        with sqlite3.connect(path) as db:  # and moved in the store, as at the start
            assert db.execute("SELECT state, internal FROM conversations WHERE id = 'later'"
                              ).fetchone() == ('{"x":1}', '{"machine":"billing"}')
        db.close()
    assert sorted(str(w.message) for w in caught) == [
        "stored conversation 'bad': convo ignored the 'context' record it keeps for itself "
        "('usage' is 'lots', expected an object of token counts); a summary is made again "
        "when one is needed",
        "stored conversation 'negative': convo ignored the 'context' record it keeps for "
        "itself ('usage.total_tokens' is -1000000, expected a count (0 or more)); a summary "
        "is made again when one is needed"]
    with sqlite3.connect(path) as db:
        rows = dict(db.execute("SELECT id, internal FROM conversations").fetchall())
        version = db.execute("SELECT value FROM convo_meta").fetchone()[0]
    db.close()
    assert version == str(SCHEMA_VERSION)
    assert (rows["bad"], rows["negative"]) == ("{}", "{}")
    assert json.loads(rows[OLD])["context"]["summary"].startswith("The customer")
    again, _ = app(f"sqlite:///{path}")  # a second start finds nothing to do
    with TestClient(again) as client:
        assert client.get(f"/api/conversations/{OLD}").json()["state"] == {"customer": "Ann"}


def test_a_schema_3_postgres_store_is_migrated_and_goes_on(postgres: Postgres) -> None:
    import psycopg

    url = postgres.fresh()
    served, _ = app(url)
    with TestClient(served) as client:  # a conversation with a summary, made today ...
        cid = client.post("/api/conversations", json={"state": {"customer": "Ann"}}
                          ).json()["id"]
        for question in long_chat().demo_input:
            assert client.post(f"/api/conversations/{cid}/messages",
                               json={"content": question}).status_code == 200
    with psycopg.connect(url, autocommit=True) as conn:  # ... then made to look as in schema 3
        (internal,) = conn.execute("SELECT internal FROM conversations").fetchone()
        assert internal["context"]["summary"] == SUMMARY_TEXT
        conn.execute("UPDATE conversations SET state = state || jsonb_build_object("
                     "'convo.context', internal->'context')")
        conn.execute("ALTER TABLE conversations DROP COLUMN internal")
        conn.execute("UPDATE convo_meta SET value = '3'")
    served, seen = app(url)
    with TestClient(served) as client:
        goes_on(client, seen, cid)
        with psycopg.connect(url, autocommit=True) as conn:  # an older worker's row, later
            conn.execute("INSERT INTO conversations (id, state, status, waiting_for) VALUES "
                         "('later', %s, 'waiting', %s)",
                         (json.dumps({"x": 1, "_convo_state": "billing"}),
                          json.dumps({"type": "user", "prompt": None})))
        assert client.get("/api/conversations/later").json()["state"] == {"x": 1}
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT state, internal FROM conversations WHERE id = 'later'"
                            ).fetchone() == ({"x": 1}, {"machine": "billing"})
        state, internal = conn.execute("SELECT state, internal FROM conversations WHERE id = "
                                       "%s", (cid,)).fetchone()
        version = conn.execute("SELECT value FROM convo_meta").fetchone()[0]
    assert (state, version) == ({"customer": "Ann"}, str(SCHEMA_VERSION))
    assert internal["context"]["calls"] >= 1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_api_shows_state_without_convos_records(kind: str, tmp_path: Path,
                                                    request: pytest.FixtureRequest) -> None:
    store = f"sqlite:///{tmp_path / 'c.db'}" if kind == "sqlite" else \
        request.getfixturevalue("postgres").fresh()
    served, _ = app(store)
    with TestClient(served) as client:
        cid = client.post("/api/conversations", json={"state": {"customer": "Ann"}}
                          ).json()["id"]
        for question in long_chat().demo_input:
            said = client.post(f"/api/conversations/{cid}/messages", json={"content": question})
            assert set(said.json()) == SHOWN | {"added"}
            assert said.json()["state"] == {"customer": "Ann"}
        shown = client.get(f"/api/conversations/{cid}").json()
    assert set(shown) == SHOWN | {"title", "feedback"} and shown["state"] == {"customer": "Ann"}
    assert re.search(SUMMARY_TEXT[:20], json.dumps(shown)) is None  # no summary anywhere
