"""Cancel and delete while a turn runs (API.md §20): ``POST …/cancel`` stops the model call,
lets running tools finish, keeps what was committed and leaves the conversation waiting for a
message, on the worker running the turn or on another one; a DELETE during a turn stops it
first, so nothing of the deleted conversation stays in the store."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from message_json import unnumbered

NOTHING_RUNS = "no turn is running in this conversation: there is nothing to cancel"


def _events(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def _flagged(path: Path, cid: str) -> bool:
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT cancel_requested FROM conversations WHERE id = ?",
                         (cid,)).fetchone()
    db.close()
    return bool(row and row[0])


def test_cancel_stops_the_model_call_and_the_stream_ends_with_done(
        serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path) -> None:
    worker = serve(f"sqlite:///{folder / 'convo.db'}")
    cid = worker.post("/api/conversations").json()["id"]
    assert worker.post(f"/api/conversations/{cid}/cancel").json() == {"error": NOTHING_RUNS}
    running = worker.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"},
                           headers={"Accept": "text/event-stream"})
    entered()
    cancelled = worker.post(f"/api/conversations/{cid}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert (body["status"], body["waiting_for"]) == ("waiting", {"type": "user", "prompt": None})
    assert unnumbered(body["messages"])[-2:] == [
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": "partial ", "metadata": {"cancelled": True}}]
    events = _events(running.result().text)
    assert [e for e, _ in events] == ["message", "delta", "message", "done"]
    assert events[-1][1]["added"] == body["messages"][-2:]
    assert calls() == ["model wait", "cancelled wait"]
    again = worker.post(f"/api/conversations/{cid}/cancel")
    assert (again.status_code, again.json()) == (409, {"error": NOTHING_RUNS})
    said = worker.post(f"/api/conversations/{cid}/messages", {"content": "hi"})
    assert said.json()["added"][-1]["content"] == "You said 'hi'"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_cancel_on_another_worker_stops_the_turn(
        kind: str, request: pytest.FixtureRequest, serve: Callable[..., Any],
        entered: Callable[[], None], calls: Callable[[], list[str]], folder: Path) -> None:
    store = (f"sqlite:///{folder / 'convo.db'}" if kind == "sqlite"
             else request.getfixturevalue("postgres").fresh())
    one, two = serve(store), serve(store)
    cid = one.post("/api/conversations").json()["id"]
    running = one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"})
    entered()
    cancelled = two.post(f"/api/conversations/{cid}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "waiting"
    assert cancelled.json()["waiting_for"] == {"type": "user", "prompt": None}
    answered = running.result()
    assert answered.status_code == 200, answered.text
    assert [m["content"] for m in answered.json()["added"]] == ["wait", "partial "]
    assert calls() == ["model wait", "cancelled wait"]
    assert two.post(f"/api/conversations/{cid}/messages", {"content": "hi"}).status_code == 200


def test_a_cancel_lets_a_running_tool_finish_and_calls_no_model_after_it(
        serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path, until: Callable[..., Any]) -> None:
    path = folder / "convo.db"
    worker = serve(f"sqlite:///{path}")
    cid = worker.post("/api/conversations").json()["id"]
    running = worker.later("POST", f"/api/conversations/{cid}/messages", {"content": "tool"})
    entered()
    cancelling = worker.later("POST", f"/api/conversations/{cid}/cancel", {})
    until(lambda: _flagged(path, cid), "the cancel to reach the worker")
    (folder / "gate").touch()  # the tool finishes now
    cancelled = cancelling.result()
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["waiting_for"] == {"type": "user", "prompt": None}
    added = running.result().json()["added"]
    assert [(m["role"], m["content"]) for m in added] == [  # the model call after: nothing
        ("user", "tool"), ("assistant", ""), ("tool", "noted hi")]
    assert calls() == ["model tool", f"tool {added[1]['tool_calls'][0]['id']}"]
    other = serve(f"sqlite:///{path}")  # rebuilt from the store: it goes on from there too
    again = other.post(f"/api/conversations/{cid}/messages", {"content": "again"})
    assert again.status_code == 200, again.text
    assert [(m["role"], m["content"]) for m in again.json()["messages"]] == [
        ("system", "Gated."), ("user", "tool"), ("assistant", ""), ("tool", "noted hi"),
        ("user", "again"), ("assistant", "You said 'again'")]


@pytest.mark.parametrize("where", ["same worker", "other worker"])
def test_nothing_of_a_conversation_deleted_during_a_turn_stays(
        where: str, serve: Callable[..., Any], entered: Callable[[], None],
        folder: Path) -> None:
    path = folder / "convo.db"
    one = serve(f"sqlite:///{path}")
    two = one if where == "same worker" else serve(f"sqlite:///{path}")
    cid = one.post("/api/conversations").json()["id"]
    running = one.later("POST", f"/api/conversations/{cid}/messages", {"content": "wait"},
                        headers={"Idempotency-Key": "k1"})
    entered()
    assert two.client.delete(f"/api/conversations/{cid}").status_code == 204
    (folder / "gate").touch()  # a turn that was not stopped would write its reply now
    running.result()
    assert one.client.get(f"/api/conversations/{cid}").status_code == 404
    with sqlite3.connect(path) as db:
        left = {table: db.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?",
                                  (cid,)).fetchone()[0]
                for table, column in (("conversations", "id"), ("messages", "conversation_id"),
                                      ("subroutines", "conversation_id"),
                                      ("idempotency", "conversation_id"))}
    db.close()
    assert left == {"conversations": 0, "messages": 0, "subroutines": 0, "idempotency": 0}
