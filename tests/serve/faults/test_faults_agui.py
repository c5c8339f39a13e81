"""An AG-UI thread survives a kill -9 of its worker (API.md §24): two `convo serve` workers on
one Postgres database; the worker running the thread's model call is killed; the other
answers the thread's next AG-UI run (no new message: the retry), and the thread goes on over
the JSON API. Every recorded run passes `ag-ui-validate`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agui_kit import parsed, run_input, types, user, validate


def events(text: str) -> list[dict[str, Any]]:
    found = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    for event in found:
        parsed(event)
    return found


def test_an_agui_thread_is_retried_on_another_worker_after_a_kill_9(
        postgres: Any, serve: Callable[..., Any], entered: Callable[[], None],
        calls: Callable[[], list[str]], folder: Path, until: Callable[..., Any]) -> None:
    store = postgres.fresh()
    one, two = serve(store, "--lease", "1"), serve(store, "--lease", "1")
    one.later("POST", "/agui", run_input("thread-k", "r1", [user("u1", "wait")]),
              headers={"Accept": "text/event-stream"})
    entered()
    one.kill()
    body = until(lambda: (lambda b: b if b["status"] != "running" else None)(
        two.client.get("/api/conversations/thread-k").json()), "the lease to lapse")
    assert body["waiting_for"]["type"] == "retry"
    refused = two.post("/agui", run_input("thread-k", "r2", [user("u1", "wait"),
                                                             user("u2", "more")]))
    assert refused.status_code == 409
    (folder / "gate").touch()
    retried = two.post("/agui", run_input("thread-k", "r3", [user("u1", "wait")]),
                       headers={"Accept": "text/event-stream"})
    assert retried.status_code == 200, retried.text
    shown = events(retried.text)
    assert types(shown) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                            "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert validate(shown) == []
    native = two.post("/api/conversations/thread-k/messages", {"content": "hello"})
    assert native.status_code == 200, native.text
    stored = native.json()["messages"]
    assert [(m["id"], m["content"]) for m in stored[1:3]] == [
        ("u1", "wait"), (shown[1]["messageId"], "partial after wait")]
    assert [m["content"] for m in stored[3:]] == ["hello", "You said 'hello'"]
    assert calls() == ["model wait", "model wait", "model hello"]
