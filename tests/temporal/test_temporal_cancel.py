"""Cancel on the Temporal engine (the served API's cancel, as the workflow's Update
``cancel``): the model call running in a `convo worker` process is cut off, what it streamed
is kept, the request that was waiting answers 200 (SSE: `done`), and a cancel when no turn
runs is a 409, as on the default engine."""

from __future__ import annotations

import concurrent.futures
from typing import Any

from temporal_kit import GatedTest, sse, until

NOTHING_RUNS = "no turn is running in this conversation: there is nothing to cancel"


def _public(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k in ("role", "content", "metadata")}


def test_cancel_cuts_the_model_call_in_the_worker(gated: GatedTest) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        client = gated.client
        cid = client.post("/api/conversations", json={}).json()["id"]
        idle = client.post(f"/api/conversations/{cid}/cancel")
        assert (idle.status_code, idle.json()) == (409, {"error": NOTHING_RUNS})

        def streamed() -> list[tuple[str, Any]]:
            with client.stream("POST", f"/api/conversations/{cid}/messages",
                               json={"content": "wait"},
                               headers={"Accept": "text/event-stream"}) as response:
                return list(sse(response.iter_lines()))

        running = pool.submit(streamed)
        until(gated.entered.exists, "the model call never started")
        cancelled = client.post(f"/api/conversations/{cid}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        body = cancelled.json()
        events = running.result(60)
        again = client.post(f"/api/conversations/{cid}/cancel")
        said = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    finally:
        gated.gate.touch()
        pool.shutdown(wait=False, cancel_futures=True)
    assert (body["status"], body["waiting_for"]) == ("waiting", {"type": "user", "prompt": None})
    assert [_public(m) for m in body["messages"][-2:]] == [
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": "partial ", "metadata": {"cancelled": True}}]
    assert [e for e, _ in events] == ["message", "delta", "message", "done"]
    assert events[-1][1]["added"] == body["messages"][-2:]
    assert gated.calls()[:2] == ["model wait", "cancelled wait"]
    assert (again.status_code, again.json()) == (409, {"error": NOTHING_RUNS})
    assert said.json()["added"][-1]["content"] == "You said 'hi'"
