"""kill -9 of the HTTP front (`convo serve --engine temporal://…`) in the middle of a turn:
the turn is the workflow's, so the worker finishes it without a client `retry`, and a new HTTP
process serves the finished conversation (the tool ran once, the model was not asked again).
The worker is the session's shared one (it is not the process killed); the two fronts are the
test's own."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import httpx
from temporal_kit import Front, GatedTest, until


def test_the_http_front_killed_mid_turn_is_survived_without_a_retry(gated: GatedTest) -> None:
    fronts: list[Front] = []
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        first = Front(gated.address, gated.dir, gated.queue)
        fronts.append(first)
        cid = first.client.post("/api/conversations", json={}).json()["id"]
        cut = pool.submit(first.client.post, f"/api/conversations/{cid}/messages",
                          json={"content": "tool"})
        until(gated.entered.exists, "the tool never started")
        first.kill()  # mid-tool: the tool waits at the gate in the worker
        gated.gate.touch()
        second = Front(gated.address, gated.dir, gated.queue)
        fronts.append(second)
        shown: dict[str, Any] = {}

        def finished() -> bool:
            shown.update(second.client.get(f"/api/conversations/{cid}").json())
            return shown["status"] == "waiting"

        until(finished, "the worker never finished the turn")
        said = second.client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    finally:
        gated.gate.touch()
        pool.shutdown(wait=False, cancel_futures=True)
        for front in fronts:
            front.stop()
    try:
        cut.result(5)
        raise AssertionError("the killed front answered")
    except httpx.TransportError:
        pass  # its client lost the connection: nobody retried
    assert shown["waiting_for"] == {"type": "user", "prompt": None}
    assert [(m["role"], m["content"]) for m in shown["messages"]] == [
        ("system", "Gated."), ("user", "tool"), ("assistant", ""), ("tool", "noted hi"),
        ("assistant", "ok, noted hi"), ("tool", "Finished")]
    assert said.status_code == 200
    assert said.json()["added"][-1]["content"] == "You said 'hi'"
    assert gated.calls() == ["model tool", "tool t2", "model hi"]
