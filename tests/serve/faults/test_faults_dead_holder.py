"""A Postgres worker killed (SIGKILL) in the middle of a turn: another worker on the same
machine takes the turn over at once, not when the 30 s lease lapses; a holder it cannot see
(another machine) keeps its lease."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg


def test_a_killed_workers_turn_is_taken_over_at_once(
        postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    url = postgres.fresh()
    one, two = serve(url), serve(url)  # the default lease: 30 s
    cid = one.post("/api/conversations").json()["id"]
    one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    one.kill()
    body = two.client.get(f"/api/conversations/{cid}").json()
    assert (body["status"], body["waiting_for"]) == ("waiting", {
        "type": "retry", "error": "The assistant could not answer. Please try again."})
    (folder / "gate").touch()
    retried = two.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text
    assert [m["content"] for m in retried.json()["added"]] == ["partial after wait"]
    assert calls() == ["model wait", "model wait"]


def test_a_holder_on_another_machine_keeps_its_lease(
        postgres: Any, serve: Callable[..., Any]) -> None:
    url = postgres.fresh()
    two = serve(url)
    cid = two.post("/api/conversations").json()["id"]
    with psycopg.connect(url, autocommit=True) as conn:  # a worker elsewhere runs a turn
        conn.execute("UPDATE conversations SET status = 'running', lock_owner = 7, lock_until "
                     "= now() + interval '30 seconds', lock_holder = 'other-boot/pid:[1]/1' "
                     "WHERE id = %s", (cid,))
    refused = two.post(f"/api/conversations/{cid}/retry")
    assert (refused.status_code, refused.json()["error"]) == (
        409, "a turn is running in this conversation: wait for it to end, then send again")
    assert two.client.get(f"/api/conversations/{cid}").json()["status"] == "running"
