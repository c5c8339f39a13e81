"""AG-UI frontend tools (API.md §24): the input's `tools` are offered to the model beside the
bot's own; a call of one ends the run with `pendingToolCallIds`; the conversation waits for
`client_tool` (durably: stored, rebuilt on another worker), refusing native messages and
retry (409); the next run's tool message is stored under its id and answered."""

from __future__ import annotations

from agui_kit import COLOR, check_answered, check_asked, picked, post_run, red, run_input, user
from serve_kit import TEMPLATE, Picking
from starlette.testclient import TestClient

from convo import FunctionModel
from convo.serve import create_app


def test_a_frontend_tool_call_ends_the_run_and_its_result_comes_with_the_next(
        store_url: str) -> None:
    picking = Picking()
    app = create_app(TEMPLATE, FunctionModel(picking), store=store_url)
    with TestClient(app) as client:
        asked = post_run(client, run_input("t", "r1", [user("u1", "pick")], tools=[COLOR]))
        waiting = client.get("/api/conversations/t").json()
        native = client.post("/api/conversations/t/messages", json={"content": "hi"})
        retry = client.post("/api/conversations/t/retry", json={})
        history = picked(asked)
        lacking = client.post("/agui", json=run_input("t", "r2", history, tools=[COLOR]))
    again = create_app(TEMPLATE, FunctionModel(picking), store=store_url)
    with TestClient(again if store_url != "memory" else app) as client:  # another worker
        answered = post_run(client, run_input("t", "r3", red(history), tools=[COLOR]))
        stored = client.get("/api/conversations/t").json()
    assert picking.offered[0] == ["refund", "finish", "pick_color"]
    check_asked(asked, waiting)
    assert native.status_code == retry.status_code == 409
    assert "frontend tool calls (call_1)" in native.json()["error"]
    assert (lacking.status_code, lacking.json()) == (400, {"error": (
        "the run must carry a tool message with the result of every pending frontend tool "
        "call; missing: call_1")})
    check_answered(answered, stored)
