"""The faces that run a conversation by their client's id (AG-UI here) on the Temporal
engine: a run in a `convo serve --engine temporal://…` process, its turn run by a `convo
worker` process; a frontend tool the run offers is called by the model, the run ends waiting
for its result, and the next run's tool message is stored under its id and answered."""

from __future__ import annotations

import sys
from pathlib import Path

from temporal_kit import GatedTest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from agui_kit import COLOR, check_answered, check_asked, picked, post_run, red, run_input, user


def test_an_agui_frontend_tool_round_trip_runs_on_temporal(gated: GatedTest) -> None:
    client, thread = gated.client, "agui-t"  # (the store and dev server are the session's)
    asked = post_run(client, run_input(thread, "r1", [user("u1", "pick")], tools=[COLOR]))
    waiting = client.get(f"/api/conversations/{thread}").json()
    native = client.post(f"/api/conversations/{thread}/messages", json={"content": "hi"})
    answered = post_run(client, run_input(thread, "r2", red(picked(asked)), tools=[COLOR]))
    stored = client.get(f"/api/conversations/{thread}").json()
    check_asked(asked, waiting)
    assert native.status_code == 409
    assert "frontend tool calls (call_1)" in native.json()["error"]
    check_answered(answered, stored)
    assert gated.calls() == ["model pick"]
