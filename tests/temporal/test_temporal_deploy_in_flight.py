"""A turn in flight during a deploy: its worker (the old template) is killed mid-tool and only
a worker of a structurally changed template (a hook before each agent turn) runs. That worker
cannot replay the turn's run (NondeterminismError): the run fails, and the HTTP front starts a
new run rebuilt from the store at the turn's last committed step, which finishes the turn on
the new code; the request that was waiting answers 200 as if nothing had happened. The workers'
heartbeat timeout is short (``--heartbeat-timeout 3``): the kill is noticed after it."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

from temporal_kit import SHORT_HEARTBEAT, Front, Worker, until


def test_a_turn_in_flight_finishes_on_the_new_template(temporal: str, tmp_path: Path) -> None:
    queue = f"inflight-{tmp_path.name}"
    old = Worker(temporal, tmp_path, queue, options=SHORT_HEARTBEAT)
    new: Worker | None = None
    front: Front | None = None
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        front = Front(temporal, tmp_path, queue)
        cid = front.client.post("/api/conversations", json={}).json()["id"]
        running = pool.submit(front.client.post, f"/api/conversations/{cid}/messages",
                              json={"content": "tool"}, timeout=120)
        until((tmp_path / "entered").exists, "the tool never started")
        old.kill()  # mid-tool, and the deploy: only the new template runs from here
        new = Worker(temporal, tmp_path, queue, options=SHORT_HEARTBEAT, CONVO_TEST_HOOKED="1")
        (tmp_path / "gate").touch()
        answered = running.result(120)
        shown = front.client.get(f"/api/conversations/{cid}").json()
    finally:
        (tmp_path / "gate").touch()
        pool.shutdown(wait=False, cancel_futures=True)
        if front is not None:
            front.stop()
        old.stop()
        if new is not None:
            new.stop()
    assert answered.status_code == 200, answered.text
    turn = [("user", "tool"), ("assistant", ""), ("tool", "noted hi"),
            ("assistant", "ok, noted hi"), ("tool", "Finished")]
    assert [(m["role"], m["content"]) for m in answered.json()["added"]] == turn
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [("system", "Gated."),
                                                                       *turn]
    assert shown["waiting_for"] == {"type": "user", "prompt": None}
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls[0] == "model tool" and set(calls[1:]) == {"tool t2"}  # the model not again
