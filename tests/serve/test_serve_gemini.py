"""Serving on Gemini: a conversation rebuilt on another worker from the store sends the thought
signatures of its earlier replies back, unchanged and in place (API.md §23), as Gemini 3 needs
for multi-turn tool use."""

from __future__ import annotations

import base64
from pathlib import Path

from serve_kit import said_on_two_workers

from convo import Message, ToolCall
from convo.models import GeminiModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.testing import GeminiServer
from convo.tools import tool

SIGNATURE = b"\xfb\xef\xbe-served"


@tool
def clock(city: str) -> str:
    """The time in a city.

    Args:
        city: The city's name.
    """
    return f"Noon in {city}"


TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([clock])])])


def test_a_rebuilt_conversation_sends_its_signatures_back(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    signed = Message.assistant("", [ToolCall("fc_9", "clock", {"city": "Oslo"})], reasoning=[
        {"index": 0, "part": {"functionCall": {"id": "fc_9", "name": "clock",
                                               "args": {"city": "Oslo"}},
                              "thoughtSignature": base64.b64encode(SIGNATURE).decode()}}])
    with GeminiServer([signed, "It is noon.", "Still noon."]) as server, GeminiModel(
            "gemini-x", base_url=server.base_url, api_key="k", stream=True,
            max_retries=0) as model:
        said_on_two_workers(TEMPLATE, model, store, "Oslo?", "Now?")
        contents = server.requests[2]["contents"]
    call = contents[1]["parts"][0]
    assert call["functionCall"] == {"id": "fc_9", "name": "clock", "args": {"city": "Oslo"}}
    assert base64.urlsafe_b64decode(call["thoughtSignature"]) == SIGNATURE
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert contents[2]["parts"] == [{"functionResponse": {
        "id": "fc_9", "name": "clock", "response": {"output": "Noon in Oslo"}}}]
    assert contents[-1]["parts"] == [{"text": "Now?"}]
