"""`POST /ai-sdk/chat` read by the real client (API.md §24): the `ai` package's own transport
and `readUIMessageStream` read a plain reply, a tool call with reasoning, a failed model call
and its retry, regenerate (a branch under the chat's id), and tool approvals approved and
rejected; the chat then goes on over the JSON
API, its stored messages under the ids the client holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from aisdk_kit import chat, parts, serving, types
from serve_kit import TEMPLATE, fails_once, model
from test_served_events import TEMPLATE as WEATHER
from test_served_events import Streaming
from weather_tools import chat_loop

from convo import FunctionModel, Message, tool
from convo.serve import create_app
from convo.serve._http.logs import MODEL_FAILED

pytestmark = pytest.mark.e2e  # node, and a server on a port


def test_a_plain_reply_and_the_chat_goes_on_over_the_json_api(store_url: str) -> None:
    with serving(create_app(TEMPLATE, model(), store=store_url)) as url:
        found = chat(url, "chat-1", {"say": ["u1", "hello"]})
        stored = httpx.get(f"{url}/api/conversations/chat-1").json()["messages"]
        more = httpx.post(f"{url}/api/conversations/chat-1/messages",
                          json={"content": "and now?"}, timeout=30).json()
    (run,) = found["runs"]
    assert run["errors"] == [] and "refused" not in run
    assert types(run) == ["start", "start-step", "text-start", "text-delta", "text-end",
                          "finish-step", "finish"]
    assert run["message"]["id"] == stored[2]["id"]  # the start chunk's messageId
    assert run["message"]["role"] == "assistant"
    assert parts(run["message"]) == [("step-start",), ("text", "You said 'hello'")]
    assert [m["id"] for m in stored[1:]] == [m["id"] for m in found["messages"]]
    assert stored[1]["id"] == "u1"
    assert [m["content"] for m in more["added"]] == ["and now?", "You said 'and now?'"]


def test_a_tool_call_with_reasoning_is_one_ui_message_of_two_steps() -> None:
    with serving(create_app(WEATHER, Streaming())) as url:
        found = chat(url, "c", {"say": ["u1", "Weather in Oslo?"]})
        stored = httpx.get(f"{url}/api/conversations/c").json()["messages"]
    (run,) = found["runs"]
    assert run["errors"] == []
    assert types(run) == [
        "start", "start-step", "reasoning-start", "reasoning-delta", "reasoning-end",
        "tool-input-start", "tool-input-available", "tool-output-available", "finish-step",
        "start-step", "text-start", "text-delta", "text-delta", "text-end", "finish-step",
        "finish"]
    assert run["message"]["id"] == stored[2]["id"]
    assert parts(run["message"]) == [
        ("step-start",), ("reasoning", "The user wants the weather."),
        ("tool-weather", "output-available", "Sunny in Oslo"), ("step-start",),
        ("text", "It is sunny.")]
    (tool,) = [p for p in run["message"]["parts"] if p["type"] == "tool-weather"]
    assert (tool["toolCallId"], tool["input"]) == ("call_1", {"city": "Oslo"})


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    raise ValueError(f"no order {order}")


def sorry(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    return f"Sorry: {last.text}" if last.role == "tool" else "{lookup(order='B2')}"


def test_a_failed_tool_is_a_tool_output_error_and_the_model_answers_it() -> None:
    failing = chat_loop(lookup)
    with serving(create_app(failing, FunctionModel(sorry))) as url:
        found = chat(url, "c", {"say": ["u1", "where is B2?"]})
        stored = httpx.get(f"{url}/api/conversations/c").json()["messages"]
    (run,) = found["runs"]
    failed = "Error: tool 'lookup' failed: ValueError: no order B2"
    assert run["errors"] == [] and stored[3]["content"] == failed
    assert "tool-output-error" in types(run)
    assert parts(run["message"]) == [("step-start",), ("tool-lookup", "output-error", failed),
                                     ("step-start",), ("text", f"Sorry: {failed}")]


def test_a_failed_model_call_is_an_error_in_plain_words_and_regenerate_retries() -> None:
    with serving(create_app(TEMPLATE, fails_once())) as url:
        found = chat(url, "c", {"say": ["u1", "hello"]}, {"regenerate": True})
        stored = httpx.get(f"{url}/api/conversations/c").json()["messages"]
    failed, retried = found["runs"]
    assert types(failed) == ["error"] and failed["errors"] == [MODEL_FAILED]
    assert "10.0.0.7" not in str(failed)
    assert retried["errors"] == [] and types(retried)[-1] == "finish"
    assert parts(retried["message"]) == [("step-start",), ("text", "You said 'hello'")]
    assert [m["content"] for m in stored[1:]] == ["hello", "You said 'hello'"]
    assert retried["message"]["id"] == stored[2]["id"]


def test_regenerate_makes_the_reply_again_and_the_chat_goes_on_with_it(store_url: str) -> None:
    replies = iter(["first", "second", "third", "again", "fourth", "once more"])

    def numbered(messages: Sequence[Message], tools: Any) -> str:
        return next(replies)

    with serving(create_app(TEMPLATE, FunctionModel(numbered), store=store_url)) as url:
        found = chat(url, "c", {"say": ["u1", "hi"]}, {"say": ["u2", "more"]},
                     {"regenerate": True}, {"say": ["u3", "on"]}, {"regenerate": 1},
                     {"say": ["u4", "last"]})
        stored = httpx.get(f"{url}/api/conversations/c").json()
        kept = [httpx.get(f"{url}/api/conversations/{stored['parent']['id']}").json()]
        kept.append(httpx.get(f"{url}/api/conversations/{kept[0]['parent']['id']}").json())
    runs = found["runs"]
    assert all(r["errors"] == [] and "refused" not in r for r in runs)
    assert [parts(r["message"]) for r in runs] == [[("step-start",), ("text", t)] for t in (
        "first", "second", "third", "again", "fourth", "once more")]
    assert types(runs[2]) == ["start", "start-step", "text-start", "text-delta", "text-end",
                              "finish-step", "finish"]
    assert [(m["role"], parts(m)[-1][-1] if m["role"] == "assistant" else m["id"])
            for m in found["messages"]] == [("user", "u1"), ("assistant", "fourth"),
                                            ("user", "u4"), ("assistant", "once more")]
    assert [m["content"] for m in stored["messages"]] == [
        "Be brief.", "hi", "fourth", "last", "once more"]
    assert [m["id"] for m in stored["messages"][1:]] == [m["id"] for m in found["messages"]]
    assert stored["parent"]["before"] == 2
    assert [m["content"] for m in kept[0]["messages"]] == [
        "Be brief.", "hi", "first", "more", "third", "on", "again"]
    assert kept[0]["parent"]["before"] == 4
    assert [m["content"] for m in kept[1]["messages"]] == [
        "Be brief.", "hi", "first", "more", "second"]
    assert kept[1]["parent"] is None


@pytest.mark.parametrize("approve", [True, False])
def test_an_approval_is_asked_and_the_next_request_answers_it(approve: bool) -> None:
    with serving(create_app(TEMPLATE, model())) as url:
        found = chat(url, "c", {"say": ["u1", "refund B2"]},
                     {"decide": approve, "reason": "fine" if approve else "no refunds"})
        stored = httpx.get(f"{url}/api/conversations/c").json()["messages"]
    asked, answered = found["runs"]
    assert types(asked) == ["start", "start-step", "tool-input-start", "tool-input-available",
                            "tool-approval-request", "finish-step", "finish"]
    assert asked["chunks"][4] == {"type": "tool-approval-request", "approvalId": "call_1",
                                  "toolCallId": "call_1"}
    assert parts(asked["message"]) == [("step-start",),
                                       ("tool-refund", "approval-requested", None)]
    assert answered["errors"] == []
    assert answered["chunks"][0] == {"type": "start", "messageId": stored[2]["id"]}
    (message,) = [m for m in found["messages"] if m["role"] == "assistant"]  # continued
    assert message["id"] == stored[2]["id"]
    said = ["finish-step", "start-step", "text-start", "text-delta", "text-end",
            "tool-input-start", "tool-input-available", "tool-output-available", "finish-step",
            "finish"]  # the model's next call: its reply and its finish() call
    if approve:
        assert types(answered) == ["start", "start-step", "tool-output-available", *said]
        assert parts(message) == [
            ("step-start",), ("tool-refund", "output-available", "refunded B2"),
            ("step-start",), ("step-start",), ("text", "Done: refunded B2"),
            ("tool-finish", "output-available", "Finished")]
    else:
        assert types(answered) == ["start", "start-step", "tool-output-denied", *said]
        assert parts(message)[:4] == [("step-start",), ("tool-refund", "output-denied", None),
                                      ("step-start",), ("step-start",)]
        assert parts(message)[4][0] == "text" and parts(message)[4][1] == (
            f"Done: {stored[3]['content']}")
        assert stored[3]["role"] == "tool"
    assert message["parts"][1]["approval"]["approved"] is approve
