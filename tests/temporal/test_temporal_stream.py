"""Streamed text on the Temporal engine: the model activity in a `convo worker` process
publishes the reply's text through the store (SQLite: its file), and the `convo serve
--engine temporal://…` process sends it as SSE `delta` events while the model call still runs
(the gated model streams "partial " and waits at its gate until the test saw the delta)."""

from __future__ import annotations

from temporal_kit import GatedTest, sse


def test_sse_sends_deltas_while_the_model_call_runs_in_a_worker(gated: GatedTest) -> None:
    try:
        cid = gated.client.post("/api/conversations", json={}).json()["id"]
        events = []
        with gated.client.stream("POST", f"/api/conversations/{cid}/messages",
                                 json={"content": "wait"},
                                 headers={"Accept": "text/event-stream"}) as streamed:
            assert streamed.status_code == 200
            for event, data in sse(streamed.iter_lines()):
                events.append((event, data))
                if event == "delta":  # heard while the model waits: let it go on
                    gated.gate.touch()
        shown = gated.client.get(f"/api/conversations/{cid}").json()
    finally:
        gated.gate.touch()
    assert [e for e, _ in events] == ["message", "delta", "message", "done"]
    user, delta, reply, done = (data for _, data in events)
    assert (user["role"], user["content"]) == ("user", "wait")
    assert delta == {"text": "partial "}
    assert (reply["role"], reply["content"]) == ("assistant", "partial after wait")
    assert done["added"] == [user, reply]
    assert shown["messages"][-2:] == [user, reply]
    assert gated.calls() == ["model wait"]
