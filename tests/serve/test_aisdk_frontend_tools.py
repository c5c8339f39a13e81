"""AI SDK frontend tools (API.md §24, as AG-UI's): the body's ``tools`` (``{"name",
"description", "inputSchema"}``, added through the transport's ``body``) are offered to the
model beside the bot's own; a call of one ends the stream (``finishReason: "tool-calls"``) and
the chat waits for ``client_tool``; the next request's messages carry the output as
``addToolOutput`` leaves it, which is stored as the tool message and answered, in the same UI
message. Read by the `ai` package's own transport and reader."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from aisdk_kit import chat, parts, serving, types
from serve_kit import TEMPLATE, Picking
from starlette.testclient import TestClient

from convo import FunctionModel
from convo.serve import create_app

COLOR = {"name": "pick_color", "description": "Ask the user to pick a color.",
         "inputSchema": {"type": "object", "properties": {"hint": {"type": "string"}},
                         "required": ["hint"]}}


def sent(*messages: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": "c", "trigger": "submit-message", "messages": list(messages), **more}


def said(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def chunks(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return [json.loads(line[6:]) for line in answer.text.split("\n")
            if line.startswith("data: {")]


@pytest.mark.e2e
def test_a_frontend_tool_is_called_and_its_output_answered_in_one_ui_message(
        store_url: str) -> None:
    picking = Picking()
    with serving(create_app(TEMPLATE, FunctionModel(picking), store=store_url)) as url:
        found = chat(url, "c", {"say": ["u1", "pick"]}, {"output": {"pick_color": "teal"}},
                     body={"tools": [COLOR]})
        stored = httpx.get(f"{url}/api/conversations/c").json()
    asked, answered = found["runs"]
    assert asked["errors"] == [] and answered["errors"] == []
    assert types(asked) == ["start", "start-step", "tool-input-start", "tool-input-available",
                            "finish-step", "finish"]
    assert asked["chunks"][-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert asked["chunks"][3]["input"] == {"hint": "warm"}
    assert parts(asked["message"]) == [("step-start",),
                                       ("tool-pick_color", "input-available", None)]
    assert answered["chunks"][0] == {"type": "start", "messageId": stored["messages"][2]["id"]}
    (message,) = [m for m in found["messages"] if m["role"] == "assistant"]
    assert parts(message)[-1] == ("text", "You picked teal")
    assert parts(message)[1] == ("tool-pick_color", "output-available", "teal")
    assert [(m["role"], m["content"]) for m in stored["messages"][3:]] == [
        ("tool", "teal"), ("assistant", "You picked teal")]
    assert stored["waiting_for"]["type"] == "user"
    assert picking.offered[0] == ["refund", "finish", "pick_color"]


def test_while_a_frontend_tool_waits_its_output_is_required_and_kept_json() -> None:
    picking = Picking()
    with TestClient(create_app(TEMPLATE, FunctionModel(picking))) as client:
        asked = chunks(client.post("/ai-sdk/chat", json=sent(said("u1", "pick"),
                                                             tools=[COLOR])))
        waiting = client.get("/api/conversations/c").json()["waiting_for"]
        call = asked[3]["toolCallId"]
        reply_id = asked[0]["messageId"]
        without = client.post("/ai-sdk/chat", json=sent(said("u1", "pick"), {
            "id": reply_id, "role": "assistant", "parts": [
                {"type": "tool-pick_color", "toolCallId": call, "state": "input-available",
                 "input": {"hint": "warm"}}]}, tools=[COLOR]))
        native = client.post("/api/conversations/c/messages", json={"content": "hi"})
        done = chunks(client.post("/ai-sdk/chat", json=sent(said("u1", "pick"), {
            "id": reply_id, "role": "assistant", "parts": [
                {"type": "tool-pick_color", "toolCallId": call, "state": "output-available",
                 "input": {"hint": "warm"}, "output": {"color": "teal"}}]}, tools=[COLOR])))
        stored = client.get("/api/conversations/c").json()["messages"]
    assert waiting == {"type": "client_tool", "calls": [
        {"id": call, "name": "pick_color", "arguments": {"hint": "warm"}}]}
    assert (without.status_code, without.json()) == (400, {"error": (
        "chat 'c' waits for the output of frontend tool calls: the request's messages must "
        f"carry every one (addToolOutput); missing: {call}")})
    assert native.status_code == 409
    assert done[0] == {"type": "start", "messageId": reply_id}
    assert stored[3]["content"] == '{"color": "teal"}'
    assert stored[4]["content"] == 'You picked {"color": "teal"}'


@pytest.mark.parametrize(("tools", "error"), [
    ({}, '"tools" must be a list, got dict'),
    ([{"description": "x"}], '"tools[0].name" must be a non-empty string, got null'),
    ([{"name": "x", "inputSchema": []}], '"tools[0].inputSchema" must be a JSON Schema '
                                         "object, got list"),
])
def test_tools_that_are_not_tools_are_400_naming_the_field(tools: Any, error: str) -> None:
    with TestClient(create_app(TEMPLATE, FunctionModel(Picking()))) as client:
        answer = client.post("/ai-sdk/chat", json=sent(said("u1", "pick"), tools=tools))
    assert answer.status_code == 400 and answer.json()["error"].startswith(error)
