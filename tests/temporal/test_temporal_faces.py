"""The faces that run a conversation by their client's id (AG-UI here) on the Temporal
engine: a run in a `convo serve --engine temporal://…` process, its turn run by a `convo
worker` process; a frontend tool the run offers is called by the model, the run ends waiting
for its result, and the next run's tool message is stored under its id and answered."""

from __future__ import annotations

import sys
from pathlib import Path

from temporal_kit import GatedTest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from agui_kit import post_run, run_input, types, user, validate

COLOR = {"name": "pick_color", "description": "Ask the user to pick a color.",
         "parameters": {"type": "object", "properties": {"hint": {"type": "string"}},
                        "required": ["hint"]}}


def test_an_agui_frontend_tool_round_trip_runs_on_temporal(gated: GatedTest) -> None:
    client, thread = gated.client, "agui-t"  # (the store and dev server are the session's)
    asked = post_run(client, run_input(thread, "r1", [user("u1", "pick")], tools=[COLOR]))
    waiting = client.get(f"/api/conversations/{thread}").json()
    native = client.post(f"/api/conversations/{thread}/messages", json={"content": "hi"})
    call = {"id": "call_1", "type": "function", "function": {
        "name": "pick_color", "arguments": '{"hint": "warm"}'}}
    history = [user("u1", "pick"), {"id": asked[1]["parentMessageId"],
                                    "role": "assistant", "toolCalls": [call]}]
    answered = post_run(client, run_input(thread, "r2", [*history, {
        "id": "tool-1", "role": "tool", "toolCallId": "call_1", "content": "red"}],
        tools=[COLOR]))
    stored = client.get(f"/api/conversations/{thread}").json()
    assert types(asked) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                            "TOOL_CALL_END", "RUN_FINISHED"]
    assert asked[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_1"]}
    assert validate(asked) == []
    assert waiting["waiting_for"] == {"type": "client_tool", "calls": [
        {"id": "call_1", "name": "pick_color", "arguments": {"hint": "warm"}}]}
    assert native.status_code == 409
    assert "frontend tool calls (call_1)" in native.json()["error"]
    assert types(answered) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
                               "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert answered[1]["messageId"] == "tool-1" and answered[3]["delta"] == "You picked red"
    assert validate(answered, resumed=True) == []
    assert [(m["role"], m["content"], m["id"]) for m in stored["messages"][3:]] == [
        ("tool", "red", "tool-1"), ("assistant", "You picked red", answered[2]["messageId"])]
    assert stored["waiting_for"] == {"type": "user", "prompt": None}
    assert gated.calls() == ["model pick"]
