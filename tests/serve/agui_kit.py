"""Shared by the AG-UI tests: a run posted and its events read back, each checked by the real
AG-UI packages — parsed strictly by ``ag_ui.core``'s models (no field they do not know) and
the whole stream by ``ag-ui-validate``'s rules."""

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
