"""`convo serve` as real processes: killed with SIGKILL mid-turn and between turns on SQLite and
started again (nothing lost or doubled, each tool ran once), and two workers sharing a real
Postgres (a throwaway server started here with initdb/pg_ctl)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import Postgres, throwaway_postgres
from serve_process_kit import (
    BOT,
    Server,
    contents,
    killed_in_its_turn,
    post_in_background,
    retried_once_the_lease_lapses,
    wait_until,
)

from convo.serve._stores import SCHEMA_VERSION


def test_sqlite_survives_sigkill_mid_turn_and_between_turns(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'convo.db'}"
    server = Server(store, tmp_path)
    try:
        ids = [server.post("/api/conversations").json()["id"] for _ in range(3)]
        for i, cid in enumerate(ids):
            assert server.post(f"/api/conversations/{cid}/messages",
                               {"content": f"note a{i}"}).status_code == 200
        # Mid-turn: the model is answering "slow" when the server is killed.
        slow = post_in_background(server.url, ids[0], "slow")
        killed_in_its_turn(server, slow, tmp_path)
        server = Server(store, tmp_path)
        assert contents(server, ids[0])[-1] == "slow"  # committed before the model answered
        assert server.post(f"/api/conversations/{ids[0]}/messages",
                           {"content": "x"}).status_code == 409
        retried = server.post(f"/api/conversations/{ids[0]}/retry")
        assert retried.status_code == 200
        assert [m["content"] for m in retried.json()["added"]] == ["slow done"]
        # Between turns.
        server.kill()
        server = Server(store, tmp_path)
        for i, cid in enumerate(ids):
            assert server.post(f"/api/conversations/{cid}/messages",
                               {"content": f"note b{i}"}).status_code == 200
        for i, cid in enumerate(ids):
            expected = ["Take notes.", f"note a{i}", "", f"noted a{i}", f"ok, noted a{i}",
                        "Finished"]
            if i == 0:
                expected += ["slow", "slow done"]
            expected += [f"note b{i}", "", f"noted b{i}", f"ok, noted b{i}", "Finished"]
            assert contents(server, cid) == expected
        calls = (tmp_path / "tool_calls.txt").read_text().split()
        assert sorted(calls) == sorted([f"a{i}" for i in range(3)] + [f"b{i}" for i in range(3)])
    finally:
        server.stop()


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with throwaway_postgres() as server:
        yield server


def test_two_workers_share_postgres(postgres: Postgres, tmp_path: Path) -> None:
    servers = [Server(postgres.url, tmp_path), Server(postgres.url, tmp_path)]
    rng = random.Random(7)
    try:
        # Each request goes to either worker, so most conversations change workers between
        # turns; and each worker takes more turns than its pool holds connections (20), so a
        # connection a turn left unreturned shows (20 conversations do both; 50 took 2.5 times
        # as long and proved nothing more).
        ids = [rng.choice(servers).post("/api/conversations").json()["id"] for _ in range(20)]
        turns = {id(server): 0 for server in servers}
        for turn in range(3):
            for i, cid in enumerate(ids):
                server = rng.choice(servers)
                turns[id(server)] += 1
                response = server.post(f"/api/conversations/{cid}/messages",
                                       {"content": f"hello {i}.{turn}"})
                assert response.status_code == 200, response.text
        assert sorted(turns.values()) == [28, 32]  # the seed's: both over the pool's 20
        for i, cid in enumerate(ids):
            expected = ["Take notes."]
            for turn in range(3):
                expected += [f"hello {i}.{turn}", f"echo hello {i}.{turn}"]
            assert contents(rng.choice(servers), cid) == expected
    finally:
        for server in servers:
            server.stop()


def test_a_database_restart_shows_in_health_and_breaks_no_turn(postgres: Postgres,
                                                               tmp_path: Path) -> None:
    server = Server(postgres.url, tmp_path)
    try:
        cid = server.post("/api/conversations").json()["id"]
        assert server.post(f"/api/conversations/{cid}/messages",
                           {"content": "one"}).status_code == 200
        postgres.stop()
        try:
            for _ in range(3):  # a load balancer polls while the database is down
                health = server.client.get("/api/health")
                assert (health.status_code, health.json()) == (
                    503, {"status": "the store does not answer"})
            down = server.post(f"/api/conversations/{cid}/messages", {"content": "lost?"})
            assert down.status_code == 503
            assert down.json()["error"].startswith("the store does not answer: ")
        finally:
            postgres.start()
        # At once: not after the connection pool's back-off, which grows to minutes.
        assert server.client.get("/api/health").status_code == 200
        after = server.post(f"/api/conversations/{cid}/messages", {"content": "two"})
        assert after.status_code == 200, after.text
        assert contents(server, cid) == ["Take notes.", "one", "echo one", "two", "echo two"]
    finally:
        assert server.stop() == 0


def test_the_readme_line_serves_the_refund_bot(tmp_path: Path) -> None:
    bot = str(Path(__file__).resolve().parents[2] / "examples" / "refund_bot.py")
    server = Server(f"sqlite:///{tmp_path / 'convo.db'}", tmp_path, bot=bot)
    try:
        assert "<html" in server.client.get("/").text
        cid = server.post("/api/conversations").json()["id"]
        body = server.post(f"/api/conversations/{cid}/messages",
                           {"content": "Please refund order A1"}).json()
        assert body["waiting_for"]["type"] == "approval"
        assert [c["name"] for c in body["waiting_for"]["calls"]] == ["refund"]
    finally:
        assert server.stop() == 0
    assert "convo: serving " in server.log.read_text()


def test_a_worker_killed_mid_turn_on_postgres_is_taken_over_once_its_lease_lapses(
        postgres: Postgres, tmp_path: Path) -> None:
    one, two = (Server(postgres.url, tmp_path, BOT, "--lease", "1"),
                Server(postgres.url, tmp_path, BOT, "--lease", "1"))
    try:
        cid = one.post("/api/conversations").json()["id"]
        slow = post_in_background(one.url, cid, "slow")
        wait_until((tmp_path / "entered").exists, slow)
        assert two.post(f"/api/conversations/{cid}/retry").status_code == 409  # one is alive
        one.kill()
        slow.kill()
        slow.wait()
        (tmp_path / "gate").touch()
        retried_once_the_lease_lapses(two, cid)  # the dead owner's (1 s)
        assert contents(two, cid) == ["Take notes.", "slow", "slow done"]
    finally:
        one.stop()
        two.stop()


def test_subroutines_on_two_workers_sharing_postgres(postgres: Postgres, tmp_path: Path) -> None:
    from starlette.testclient import TestClient
    from subroutine_workers import check_subroutines_on_two_workers, subroutine_bot

    from convo.serve import create_app
    from convo.serve._stores.postgres import PostgresStore

    apps = [create_app(*subroutine_bot(tmp_path), store=postgres.url) for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        check_subroutines_on_two_workers([one, two, one, two, one], tmp_path,
                                         PostgresStore(postgres.url))


V1_POSTGRES = """
CREATE TABLE convo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO convo_meta VALUES ('schema_version', '1');
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, state JSONB NOT NULL, status TEXT NOT NULL, waiting_for JSONB,
    outcome JSONB, approvals JSONB NOT NULL DEFAULT '{}', length INTEGER NOT NULL DEFAULT 0,
    lock_owner BIGINT, created TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE messages (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, message JSONB NOT NULL,
    PRIMARY KEY (conversation_id, idx));
CREATE TABLE idempotency (
    conversation_id TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, response JSONB,
    PRIMARY KEY (conversation_id, key));
INSERT INTO conversations (id, state, status, waiting_for, length) VALUES
    ('old', '{}', 'waiting', '{"type": "user", "prompt": null}', 1);
INSERT INTO messages VALUES ('old', 0, '{"role": "system", "content": "Take notes."}');
"""


def test_a_version_1_postgres_database_gains_the_subroutine_records(postgres: Postgres,
                                                                    tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE convo_v1")
    url = postgres.url.rsplit("/", 1)[0] + "/convo_v1"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(V1_POSTGRES)
    server = Server(url, tmp_path)  # the counting bot, on the database of an older convo
    try:
        said = server.post("/api/conversations/old/messages", {"content": "hi"})
        assert said.status_code == 200, said.text
        assert contents(server, "old") == ["Take notes.", "hi", "echo hi"]
    finally:
        assert server.stop() == 0
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT value FROM convo_meta").fetchall() == [(str(SCHEMA_VERSION),)]
        assert conn.execute("SELECT count(*) FROM subroutines").fetchone() == (0,)
