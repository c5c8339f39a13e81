"""AG-UI frontend tools (API.md §24): the input's `tools` are offered to the model beside the
bot's own; a call of one ends the run with `pendingToolCallIds`; the conversation waits for
`client_tool` (durably: stored, rebuilt on another worker), refusing native messages and
retry (409); the next run's tool message is stored under its id and answered."""

from __future__ import annotations

from agui_kit import post_run, run_input, types, user, validate
from serve_kit import TEMPLATE, Picking
from starlette.testclient import TestClient

from convo import FunctionModel
from convo.serve import create_app

COLOR = {"name": "pick_color", "description": "Ask the user to pick a color.",
         "parameters": {"type": "object", "properties": {"hint": {"type": "string"}},
                        "required": ["hint"]}}

def test_a_frontend_tool_call_ends_the_run_and_its_result_comes_with_the_next(
        store_url: str) -> None:
    picking = Picking()
    app = create_app(TEMPLATE, FunctionModel(picking), store=store_url)
    with TestClient(app) as client:
        asked = post_run(client, run_input("t", "r1", [user("u1", "pick")], tools=[COLOR]))
        waiting = client.get("/api/conversations/t").json()
        native = client.post("/api/conversations/t/messages", json={"content": "hi"})
        retry = client.post("/api/conversations/t/retry", json={})
        call = {"id": "call_1", "type": "function", "function": {
            "name": "pick_color", "arguments": '{"hint": "warm"}'}}
        history = [user("u1", "pick"), {"id": asked[1]["parentMessageId"],
                                        "role": "assistant", "toolCalls": [call]}]
        lacking = client.post("/agui", json=run_input("t", "r2", history, tools=[COLOR]))
    again = create_app(TEMPLATE, FunctionModel(picking), store=store_url)
    with TestClient(again if store_url != "memory" else app) as client:  # another worker
        answered = post_run(client, run_input("t", "r3", [*history, {
            "id": "tool-1", "role": "tool", "toolCallId": "call_1", "content": "red"}],
            tools=[COLOR]))
        stored = client.get("/api/conversations/t").json()
    assert picking.offered[0] == ["refund", "finish", "pick_color"]
    assert types(asked) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                            "TOOL_CALL_END", "RUN_FINISHED"]
    assert asked[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_1"]}
    assert validate(asked) == []
    assert waiting["waiting_for"] == {"type": "client_tool", "calls": [
        {"id": "call_1", "name": "pick_color", "arguments": {"hint": "warm"}}]}
    assert native.status_code == retry.status_code == 409
    assert "frontend tool calls (call_1)" in native.json()["error"]
    assert (lacking.status_code, lacking.json()) == (400, {"error": (
        "the run must carry a tool message with the result of every pending frontend tool "
        "call; missing: call_1")})
    assert types(answered) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
                               "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert answered[1]["messageId"] == "tool-1" and answered[3]["delta"] == "You picked red"
    assert validate(answered, resumed=True) == []
    assert [(m["role"], m["content"], m["id"]) for m in stored["messages"][3:]] == [
        ("tool", "red", "tool-1"), ("assistant", "You picked red", answered[2]["messageId"])]
    assert stored["waiting_for"] == {"type": "user", "prompt": None}
