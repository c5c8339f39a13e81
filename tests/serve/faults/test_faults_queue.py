"""Messages queued while a turn runs (API.md §26) survive a SIGKILL of the worker holding the
turn: on Postgres with two workers, the other worker runs the cut-off turn on ``retry`` and
then answers the queued messages, in order, each exactly once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_queued_messages_survive_a_killed_worker_and_are_answered_once_in_order(
        postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path,
        until: Callable[[Callable[[], Any], str], Any]) -> None:
    url = postgres.fresh()
    one, two = serve(url), serve(url)
    cid = one.post("/api/conversations").json()["id"]
    one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    queued = [two.post(f"/api/conversations/{cid}/messages",
                       {"content": "first", "while_busy": "queue"}),
              one.post(f"/api/conversations/{cid}/messages",
                       {"content": "second", "while_busy": "steer"})]
    assert [r.status_code for r in queued] == [202, 202], [r.text for r in queued]
    one.kill()  # holding the turn, with the queue stored
    shown = two.client.get(f"/api/conversations/{cid}").json()
    assert [q["content"] for q in shown["queued"]] == ["first", "second"]
    assert shown["waiting_for"]["type"] == "retry"
    (folder / "gate").touch()
    retried = two.post(f"/api/conversations/{cid}/retry")
    assert retried.status_code == 200, retried.text

    def settled() -> Any:
        body = two.client.get(f"/api/conversations/{cid}").json()
        done = not body["queued"] and body["status"] == "waiting" \
            and body["messages"][-1]["content"] == "You said 'second'"
        return body if done else None

    body = until(settled, "the queue to be answered")
    assert [(m["role"], m["content"]) for m in body["messages"][1:]] == [
        ("user", "wait"), ("assistant", "partial after wait"),
        ("user", "first"), ("assistant", "You said 'first'"),
        ("user", "second"), ("assistant", "You said 'second'")]
    assert [m["id"] for m in body["messages"][3::2]] == [
        queued[0].json()["queued"]["id"], queued[1].json()["queued"]["id"]]
    assert calls() == ["model wait", "model wait", "model first", "model second"]
