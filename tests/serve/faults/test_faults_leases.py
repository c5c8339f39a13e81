"""Turn locks are leases (API.md §20): renewed while a turn runs, so no worker takes over a
running turn, even when its connections to Postgres are cut; taken over once a dead worker's
lease lapsed; a conversation killed during a model call waits for a retry."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest


def _terminate_backends(url: str) -> int:
    """pg_terminate_backend on every other connection to the database of ``url``."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                           ).fetchone()
    return int(row[0]) if row else 0


def test_a_worker_whose_connections_were_cut_keeps_its_running_turn(
        postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    url = postgres.fresh()
    one, two = serve(url), serve(url)
    cid = one.post("/api/conversations").json()["id"]
    running = one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    assert _terminate_backends(url) >= 1  # every connection of both workers is cut
    for path, body in (("retry", {}), ("messages", {"content": "again"})):
        refused = two.post(f"/api/conversations/{cid}/{path}", body)
        assert (refused.status_code, refused.json()["error"]) == (
            409, "a turn is running in this conversation: wait for it to end, then send again")
    assert two.client.get(f"/api/conversations/{cid}").json()["status"] == "running"
    (folder / "gate").touch()
    answered = running.result()
    assert answered.status_code == 200, answered.text
    assert [m["content"] for m in answered.json()["added"]] == ["wait", "partial after wait"]
    assert calls() == ["model wait"]  # the model was called once, by the worker running it


def test_a_running_turn_renews_its_lease_past_its_end(
        serve: Callable[..., Any], entered: Callable[[], None], folder: Path,
        until: Callable[..., Any]) -> None:
    path = folder / "convo.db"
    one = serve(f"sqlite:///{path}", "--lease", "0.6")
    two = serve(f"sqlite:///{path}", "--lease", "0.6")
    cid = one.post("/api/conversations").json()["id"]
    running = one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()

    def lease_end() -> float:
        with sqlite3.connect(path) as db:
            row = db.execute("SELECT lock_until FROM conversations WHERE id = ?",
                             (cid,)).fetchone()
        db.close()
        return float(row[0] or 0)

    first = lease_end()
    until(lambda: time.time() > first + 1.0 and lease_end() > first + 1.0,
          "the lease to be renewed past its first end")
    refused = two.post(f"/api/conversations/{cid}/retry")
    assert refused.status_code == 409
    (folder / "gate").touch()
    assert running.result().status_code == 200


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_killed_during_a_model_call_the_conversation_waits_for_retry(
        kind: str, request: pytest.FixtureRequest, serve: Callable[..., Any],
        entered: Callable[[], None], calls: Callable[[], list[str]], folder: Path,
        until: Callable[..., Any]) -> None:
    store = (f"sqlite:///{folder / 'convo.db'}" if kind == "sqlite"
             else request.getfixturevalue("postgres").fresh())
    one = serve(store, "--lease", "1")
    cid = one.post("/api/conversations").json()["id"]
    one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    one.kill()
    two = serve(store, "--lease", "1")
    body = until(lambda: (lambda b: b if b["status"] != "running" else None)(
        two.client.get(f"/api/conversations/{cid}").json()), "the lease to lapse")
    assert body["status"] == "waiting"
    assert body["waiting_for"] == {"type": "retry",
                                   "error": "The assistant could not answer. Please try again."}
    assert [m["content"] for m in body["messages"]] == ["Gated.", "wait"]
    (folder / "gate").touch()
    retried = two.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text
    assert [m["content"] for m in retried.json()["added"]] == ["partial after wait"]
    assert calls() == ["model wait", "model wait"]  # the cut-off call, made again on retry
