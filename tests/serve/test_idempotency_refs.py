"""Idempotency keys (API.md §20): a refused request leaves its key unused, and a record keeps
a reference to what the first answer added — not a copy of the conversation — from which a
repeat rebuilds the same body. On SQLite and a real Postgres; old records are converted."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_kit import TEMPLATE, Postgres, model
from starlette.testclient import TestClient

from convo.serve import create_app
from convo.serve._stores import SCHEMA_VERSION


@pytest.fixture
def client(store_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(TEMPLATE, model(), store=store_url)) as c:
        yield c


def test_a_refused_request_leaves_its_key_unused(client: TestClient) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    url = f"/api/conversations/{cid}/messages"
    assert client.post(url, json={"content": "refund A1"}).json()["waiting_for"]["type"] == (
        "approval")
    refused = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k"})
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("an approval is pending")
    approved = client.post(f"/api/conversations/{cid}/approvals", json={"decisions": [
        {"call_id": "call_1", "approve": True}]})
    assert approved.status_code == 200
    said = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k"})
    assert (said.status_code, [m["content"] for m in said.json()["added"]]) == (
        200, ["hi", "You said 'hi'"])
    again = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k"})
    assert (again.status_code, again.json()) == (200, said.json())


def test_a_repeat_answers_the_same_body_rebuilt_from_the_messages(client: TestClient) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    url = f"/api/conversations/{cid}/messages"
    firsts = [client.post(url, json={"content": f"m{i}"}, headers={"Idempotency-Key": f"k{i}"})
              for i in range(3)]
    failed = client.post(url, json={"content": "fail"}, headers={"Idempotency-Key": "kf"})
    assert failed.status_code == 502
    for i, first in enumerate(firsts):  # later turns added messages: the repeat is as it was
        again = client.post(url, json={"content": f"m{i}"}, headers={"Idempotency-Key": f"k{i}"})
        assert (again.status_code, again.text) == (200, first.text)
    again = client.post(url, json={"content": "fail"}, headers={"Idempotency-Key": "kf"})
    assert again.status_code == 502
    assert {k: v for k, v in again.json().items() if k != "error_id"} == {
        k: v for k, v in failed.json().items() if k != "error_id"}


def _turns(client: TestClient, n: int) -> str:
    cid = str(client.post("/api/conversations", json={}).json()["id"])
    for i in range(n):
        said = client.post(f"/api/conversations/{cid}/messages",
                           json={"content": f"message number {i} " + "x" * 200},
                           headers={"Idempotency-Key": f"key-{i}"})
        assert said.status_code == 200
    return cid


def test_sqlite_records_do_not_grow_with_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "convo.db"
    with TestClient(create_app(TEMPLATE, model(), store=f"sqlite:///{path}")) as client:
        _turns(client, 60)
    with sqlite3.connect(path) as db:
        sizes = [n for (n,) in db.execute("SELECT length(response) FROM idempotency")]
        messages = db.execute("SELECT sum(length(message)) FROM messages").fetchone()[0]
    db.close()
    assert len(sizes) == 60
    assert max(sizes) < 400  # a copy of the conversation was 200 bytes more each turn
    assert sum(sizes) < messages / 2


def test_postgres_records_do_not_grow_with_the_conversation(postgres: Postgres) -> None:
    import psycopg

    url = postgres.fresh()
    with TestClient(create_app(TEMPLATE, model(), store=url)) as client:
        cid = _turns(client, 60)
        again = client.post(f"/api/conversations/{cid}/messages",
                            json={"content": "message number 3 " + "x" * 200},
                            headers={"Idempotency-Key": "key-3"})
        assert [m["content"][:16] for m in again.json()["added"]] == [
            "message number 3", "You said 'messag"]
        assert len(again.json()["messages"]) == 1 + 4 * 2
    with psycopg.connect(url) as conn:
        sizes = [n for (n,) in conn.execute(
            "SELECT length(response::text) FROM idempotency").fetchall()]
    assert len(sizes) == 60 and max(sizes) < 400


OLD_BODY = {"id": "old", "status": "waiting", "messages": [
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "You said 'hi'"}], "state": {}, "outcome": None,
    "waiting_for": {"type": "user", "prompt": None}, "added": [
    {"role": "user", "content": "hi"}, {"role": "assistant", "content": "You said 'hi'"}]}


def test_a_version_2_sqlite_store_has_its_records_converted(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    with TestClient(create_app(TEMPLATE, model(), store=url)):
        pass  # the schema of today, then made to look like a version-2 database's
    digest = "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"  # of "hi"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE convo_meta SET value = '2'")
        db.execute("INSERT INTO conversations (id, state, status, waiting_for, length, created)"
                   " VALUES ('old', '{}', 'waiting', ?, 3, 0)",
                   (json.dumps(OLD_BODY["waiting_for"]),))
        db.executemany("INSERT INTO messages VALUES ('old', ?, ?)",
                       [(i, json.dumps(m)) for i, m in enumerate(OLD_BODY["messages"])])
        db.execute("INSERT INTO idempotency VALUES ('old', 'k', ?, ?)",
                   (digest, json.dumps({"status": 200, "body": OLD_BODY})))
    db.close()
    with TestClient(create_app(TEMPLATE, model(), store=url)) as client:
        again = client.post("/api/conversations/old/messages", json={"content": "hi"},
                            headers={"Idempotency-Key": "k"})
        assert (again.status_code, again.json()) == (200, OLD_BODY)
    with sqlite3.connect(path) as db:
        record = json.loads(db.execute("SELECT response FROM idempotency").fetchone()[0])
        version = db.execute("SELECT value FROM convo_meta").fetchone()[0]
    db.close()
    assert version == str(SCHEMA_VERSION)  # raised to the newest
    assert record == {"status": 200, "messages": [1, 3], "fields": {
        "id": "old", "status": "waiting", "state": {}, "outcome": None,
        "waiting_for": {"type": "user", "prompt": None}}}


def test_a_version_2_postgres_store_has_its_records_converted(postgres: Postgres) -> None:
    import psycopg

    url = postgres.fresh()
    with TestClient(create_app(TEMPLATE, model(), store=url)):
        pass
    digest = "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE convo_meta SET value = '2'")
        conn.execute("INSERT INTO conversations (id, state, status, waiting_for, length) "
                     "VALUES ('old', '{}', 'waiting', %s, 3)",
                     (json.dumps(OLD_BODY["waiting_for"]),))
        for i, m in enumerate(OLD_BODY["messages"]):
            conn.execute("INSERT INTO messages VALUES ('old', %s, %s)", (i, json.dumps(m)))
        conn.execute("INSERT INTO idempotency VALUES ('old', 'k', %s, %s)",
                     (digest, json.dumps({"status": 200, "body": OLD_BODY})))
    with TestClient(create_app(TEMPLATE, model(), store=url)) as client:
        again = client.post("/api/conversations/old/messages", json={"content": "hi"},
                            headers={"Idempotency-Key": "k"})
        assert (again.status_code, again.json()) == (200, OLD_BODY)
    with psycopg.connect(url) as conn:
        record = conn.execute("SELECT response FROM idempotency").fetchone()[0]
        version = conn.execute("SELECT value FROM convo_meta").fetchone()[0]
    assert version == str(SCHEMA_VERSION)  # raised to the newest
    assert record == {"status": 200, "messages": [1, 3], "fields": {
        "id": "old", "status": "waiting", "state": {}, "outcome": None,
        "waiting_for": {"type": "user", "prompt": None}}}
