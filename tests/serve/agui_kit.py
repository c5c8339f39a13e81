"""Shared by the AG-UI tests: a run posted and its events read back, each checked by the real
AG-UI packages — parsed strictly by ``ag_ui.core``'s models (no field they do not know) and
the whole stream by ``ag-ui-validate``'s rules; and the frontend tool round trip (``COLOR``
offered, called by serve_kit's ``Picking``, answered "red"), checked the same way in process
and on the Temporal engine."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import Event, RunAgentInput
from ag_ui_validate import ValidatorOptions, create_validator
from pydantic import BaseModel, TypeAdapter

EVENT = TypeAdapter(Event)


def _no_extra(model: Any, where: str) -> None:
    if isinstance(model, BaseModel):
        assert not model.model_extra, f"{where}: fields AG-UI does not know: {model.model_extra}"
        for name in type(model).model_fields:
            _no_extra(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            _no_extra(item, f"{where}[{index}]")


def parsed(event: dict[str, Any]) -> Any:
    """``event`` parsed by ``ag_ui.core`` strictly: valid, and nothing unknown in it."""
    model = EVENT.validate_python(event)
    _no_extra(model, event["type"])
    return model


def run_input(thread: str, run: str, messages: list[dict[str, Any]], **more: Any
              ) -> dict[str, Any]:
    body = {"threadId": thread, "runId": run, "messages": messages, "state": {},
            "tools": [], "context": [], "forwardedProps": {}, **more}
    RunAgentInput.model_validate(body)  # what we send is a RunAgentInput to AG-UI too
    return body


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def events_of(response: Any) -> list[dict[str, Any]]:
    lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines), lines
    return [json.loads(line[6:]) for line in lines]


def post_run(client: Any, body: dict[str, Any], **headers: str) -> list[dict[str, Any]]:
    """The events of one run (a 200 SSE stream, each event parsed strictly)."""
    with client.stream("POST", "/agui", json=body, headers={
            "Accept": "text/event-stream", **headers}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = events_of(response)
    for event in events:
        parsed(event)
    return events


def validate(events: list[dict[str, Any]], *, resumed: bool = False) -> list[str]:
    """What ``ag-ui-validate`` finds in a recorded run (errors and warnings); a resumed run's
    results for calls of the run before are its rule AGUI207 (API.md §24), turned off."""
    validator = create_validator(ValidatorOptions(
        severity_overrides={"AGUI207": "off"} if resumed else None))
    for event in events:
        validator.feed(event)
    validator.finalize()
    report = validator.report()
    assert not report.internal_errors, report.internal_errors
    return [f"{d.rule} {d.severity}: {d.message} (event {d.event_index})"
            for d in report.diagnostics if d.severity in ("error", "warning")]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


COLOR = {"name": "pick_color", "description": "Ask the user to pick a color.",
         "parameters": {"type": "object", "properties": {"hint": {"type": "string"}},
                        "required": ["hint"]}}


def picked(asked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history after the run ``asked``: the user's "pick", the model's call of
    ``pick_color`` (call_1) under the message id the run gave it."""
    call = {"id": "call_1", "type": "function", "function": {
        "name": "pick_color", "arguments": '{"hint": "warm"}'}}
    return [user("u1", "pick"), {"id": asked[1]["parentMessageId"], "role": "assistant",
                                 "toolCalls": [call]}]


def red(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` and the front end's result of call_1: "red", under the id tool-1."""
    return [*history, {"id": "tool-1", "role": "tool", "toolCallId": "call_1",
                       "content": "red"}]


def check_asked(asked: list[dict[str, Any]], waiting: dict[str, Any]) -> None:
    """The run that called the frontend tool ended with the call pending, and the
    conversation (read as ``waiting``) waits for its result."""
    assert types(asked) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                            "TOOL_CALL_END", "RUN_FINISHED"]
    assert asked[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_1"]}
    assert validate(asked) == []
    assert waiting["waiting_for"] == {"type": "client_tool", "calls": [
        {"id": "call_1", "name": "pick_color", "arguments": {"hint": "warm"}}]}


def check_answered(answered: list[dict[str, Any]], stored: dict[str, Any]) -> None:
    """The run that carried the result stored it under its id and answered it, and the
    conversation (read as ``stored``) waits for the user again."""
    assert types(answered) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
                               "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert answered[1]["messageId"] == "tool-1" and answered[3]["delta"] == "You picked red"
    assert validate(answered, resumed=True) == []
    assert [(m["role"], m["content"], m["id"]) for m in stored["messages"][3:]] == [
        ("tool", "red", "tool-1"), ("assistant", "You picked red", answered[2]["messageId"])]
    assert stored["waiting_for"] == {"type": "user", "prompt": None}
