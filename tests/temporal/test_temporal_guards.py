"""Guards on the Temporal engine: an output guard that shows the reply live (`stream="live"`)
and trips takes the streamed text back with SSE `retract`, sent from the workflow through the
store's notes as the text was (a `convo worker` process and a `convo serve --engine
temporal://…` process on one SQLite store; the gated model streams "partial " and waits at its
gate until the test read the delta)."""

from __future__ import annotations

import json
from pathlib import Path

from temporal_kit import Front, Worker, sse

REFUSAL = "Sorry, I can't help with that."


def test_a_live_guard_that_trips_retracts_the_streamed_text(temporal: str,
                                                            tmp_path: Path) -> None:
    queue = f"guard-{tmp_path.name}"
    worker = Worker(temporal, tmp_path, queue, CONVO_TEST_LIVE_GUARD="partial")
    front: Front | None = None
    try:
        front = Front(temporal, tmp_path, queue, CONVO_TEST_LIVE_GUARD="partial")
        cid = front.client.post("/api/conversations", json={}).json()["id"]
        raw = b""
        with front.client.stream("POST", f"/api/conversations/{cid}/messages",
                                 json={"content": "wait"},
                                 headers={"Accept": "text/event-stream"}) as streamed:
            assert streamed.status_code == 200
            for chunk in streamed.iter_bytes():
                raw += chunk
                if b"event: delta\n" in raw:  # the text is shown while the model waits
                    (tmp_path / "gate").touch()
        shown = front.client.get(f"/api/conversations/{cid}").json()
    finally:
        (tmp_path / "gate").touch()
        if front is not None:
            front.stop()
        worker.stop()
    text = raw.decode()
    events = list(sse(text.splitlines()))
    assert [e for e, _ in events] == ["message", "delta", "retract", "message", "done"]
    user, delta, retract, reply, done = (data for _, data in events)
    assert (user["role"], user["content"]) == ("user", "wait")
    assert delta == {"text": "partial "}
    assert (reply["role"], reply["content"]) == ("assistant", REFUSAL)
    assert retract == {"message_id": reply["id"]}
    assert "event: delta\ndata: {\"text\": \"partial \"}\n\nevent: retract\ndata: " + \
        json.dumps({"message_id": reply["id"]}) + "\n\nevent: message\n" in text
    assert "partial after wait" not in text  # the original is never sent to the client
    assert reply["metadata"]["guard"] == {"name": "banned", "action": "block",
                                          "reason": "banned"}
    assert done["added"] == [user, reply]
    assert shown["messages"][-2:] == [user, reply]
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["model wait"]
