"""Workers of two schema versions on one Postgres store during an upgrade (API.md §20): a
worker before leases (schema 3) took a turn by setting ``lock_owner`` alone and judged its
holder by an advisory lock; mixed with leases, each would take the other's running turn. The
store refuses an older worker's take (it runs nothing), and a turn an older worker holds is
left to it while that worker lives. The statements below are schema 3's own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

V3_TAKE_FREE = ("UPDATE conversations SET lock_owner = %s WHERE id = %s AND lock_owner IS NULL "
                "RETURNING 1")
V3_TAKE_OVER = ("UPDATE conversations SET lock_owner = %s WHERE id = %s AND lock_owner = %s "
                "RETURNING 1")
OLD_OWNER = 0x1234_5678_9ABC


def _refused(cid: str) -> str:
    return (f"a convo worker older than this store (schema 4) tried to take a turn of "
            f"conversation {cid}: stop or upgrade it; workers before schema 4 cannot share a "
            f"store with later ones")


def test_an_older_worker_cannot_take_a_turn(
        postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    url = postgres.fresh()
    new = serve(url)
    free = new.post("/api/conversations").json()["id"]
    held = new.post("/api/conversations").json()["id"]
    running = new.later("POST", f"/api/conversations/{held}/messages", {"content": "wait"})
    entered()
    with psycopg.connect(url, autocommit=True) as old:
        owner = old.execute("SELECT lock_owner FROM conversations WHERE id = %s",
                            (held,)).fetchone()
        assert owner is not None and owner[0] is not None
        for statement, args, cid in ((V3_TAKE_FREE, (OLD_OWNER, free), free),
                                     (V3_TAKE_OVER, (OLD_OWNER, held, owner[0]), held)):
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as refused:
                old.execute(statement, args)
            assert refused.value.diag.message_primary == _refused(cid)
    (folder / "gate").touch()
    assert running.result().status_code == 200
    assert calls() == ["model wait"]  # run once, by the worker that took it


def test_a_turn_an_older_worker_runs_is_left_to_it_while_it_lives(
        postgres: Any, serve: Callable[..., Any]) -> None:
    url = postgres.fresh()
    new = serve(url)
    cid = new.post("/api/conversations").json()["id"]
    alive = psycopg.connect(url, autocommit=True)  # the older worker's liveness connection
    try:
        alive.execute("SELECT pg_advisory_lock(%s)", (OLD_OWNER,))
        with psycopg.connect(url, autocommit=True) as conn:  # it took the turn before 4
            conn.execute("UPDATE conversations SET status = 'running', lock_owner = %s, "
                         "lock_until = now() WHERE id = %s", (OLD_OWNER, cid))
            conn.execute("UPDATE conversations SET lock_until = NULL WHERE id = %s", (cid,))
        refused = new.post(f"/api/conversations/{cid}/messages", {"content": "hi"})
        assert (refused.status_code, refused.json()["error"]) == (
            409, "a turn is running in this conversation: wait for it to end, then send again")
        assert new.client.get(f"/api/conversations/{cid}").json()["status"] == "running"
    finally:
        backend = alive.info.backend_pid
        with psycopg.connect(url, autocommit=True) as conn:  # the older worker is gone
            conn.execute("SELECT pg_terminate_backend(%s, 30000)", (backend,))
        alive.close()
    said = new.post(f"/api/conversations/{cid}/messages", {"content": "hi"})
    assert said.status_code == 200, said.text
    assert [m["content"] for m in said.json()["added"]] == ["hi", "You said 'hi'"]
