"""`POST /ai-sdk/chat` over HTTP (API.md §24): the stream's header and `[DONE]`, the body
checked (400 naming the field), only new user messages added under their ids, §19's
ownership, Idempotency-Key, approvals that must all be answered, and `regenerate-message`
(a branch under the chat's id, the original kept under a new one). The `ai` package reads
the streams in test_aisdk_reader.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from serve_kit import TEMPLATE, Counted, asgi_client, fails_once, held_model, model
from staff_bot import ANN, OLGA, staff_app
from starlette.testclient import TestClient

from convo import FunctionModel, Message
from convo.serve import TrustedHeader, create_app
from convo.serve._http.logs import MODEL_FAILED


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def body(chat_id: str, *messages: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": chat_id, "messages": list(messages), "trigger": "submit-message", **more}


def chunks(client: TestClient, sent: dict[str, Any], **headers: str) -> list[Any]:
    answer = client.post("/ai-sdk/chat", json=sent, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
    lines = [line for line in answer.text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines), lines
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in lines[:-1]]


@pytest.mark.parametrize(("sent", "error"), [
    ({"messages": []}, '"id" must be a non-empty string, got null'),
    ({"id": "c", "messages": {}}, '"messages" must be a list, got dict'),
    ({"id": "c", "messages": [{"id": "u", "role": "user"}]},
     '"messages[0].parts" must be a list, got null'),
    ({"id": "c", "messages": [{"id": "u", "role": "tool", "parts": []}]},
     '"messages[0].role" must be one of system, user, assistant, got \'tool\''),
    ({"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text"}]}]},
     '"messages[0].parts[0].text" must be a string, got null'),
    ({"id": "c", "messages": [], "trigger": "again"},
     '"trigger" must be one of submit-message, regenerate-message, got \'again\''),
])
def test_a_body_that_is_not_a_use_chat_body_is_400_naming_the_field(
        sent: dict[str, Any], error: str) -> None:
    counted = Counted()
    with TestClient(create_app(TEMPLATE, FunctionModel(counted))) as client:
        answer = client.post("/ai-sdk/chat", json=sent)
        assert client.get("/api/conversations").json()["conversations"] == []
    said = answer.json()["error"]
    assert answer.status_code == 400 and said.startswith(error), said
    assert counted.calls == 0


def test_only_new_user_messages_are_added_under_their_ids(store_url: str) -> None:
    counted = Counted()
    with TestClient(create_app(TEMPLATE, FunctionModel(counted), store=store_url)) as client:
        first = chunks(client, body("c", user("u1", "hello")))
        said = {"id": first[0]["messageId"], "role": "assistant", "parts": [
            {"type": "step-start"}, {"type": "text", "text": "You said 'hello'"}]}
        again = chunks(client, body("c", user("u1", "hello"), said))
        chunks(client, body("c", user("u1", "hello"), said, user("u2", "bye")))
        stored = client.get("/api/conversations/c").json()["messages"]
    assert [c["type"] for c in again] == ["start", "finish"] and counted.calls == 2
    assert [m["id"] for m in stored[1:4]] == ["u1", said["id"], "u2"]
    assert [m["content"] for m in stored[1:]] == ["hello", "You said 'hello'", "bye",
                                                   "You said 'bye'"]


def test_a_chat_is_its_callers_another_users_is_404() -> None:
    counted = Counted()
    served = create_app(TEMPLATE, FunctionModel(counted),
                        auth=TrustedHeader("X-User", operators="olga"))
    with TestClient(served) as client:
        chunks(client, body("c", user("u1", "mine")), **{"X-User": "ann"})
        for who in ("bob", "olga"):
            answer = client.post("/ai-sdk/chat", json=body("c", user("u2", "x")),
                                 headers={"X-User": who})
            assert (answer.status_code, answer.json()) == (404, {"error": "no thread 'c'"})
        assert client.post("/ai-sdk/chat", json=body("c")).status_code == 401
    assert counted.calls == 1


def test_an_idempotency_key_replays_the_first_stream(store_url: str) -> None:
    counted = Counted()
    sent = body("c", user("u1", "hello"))
    with TestClient(create_app(TEMPLATE, FunctionModel(counted), store=store_url)) as client:
        first = chunks(client, sent, **{"Idempotency-Key": "k1"})
        repeat = chunks(client, sent, **{"Idempotency-Key": "k1"})
        other = client.post("/ai-sdk/chat", json=body("c", user("u2", "bye")),
                            headers={"Idempotency-Key": "k1"})
    assert repeat == first and first[-1] == {"type": "finish", "finishReason": "stop"}
    assert (other.status_code, other.json()) == (
        409, {"error": "this Idempotency-Key was used with other content"})
    assert counted.calls == 1


def test_every_approval_asked_must_be_answered_before_the_chat_goes_on() -> None:
    with TestClient(create_app(TEMPLATE, model())) as client:
        asked = chunks(client, body("c", user("u1", "refund B2")))
        refused = client.post("/ai-sdk/chat", json=body("c", user("u1", "refund B2"),
                                                         user("u2", "well?")))
        stored = client.get("/api/conversations/c").json()
    assert asked[-3:] == [{"type": "tool-approval-request", "approvalId": "call_1",
                           "toolCallId": "call_1"}, {"type": "finish-step"},
                          {"type": "finish", "finishReason": "tool-calls"}]
    assert (refused.status_code, refused.json()) == (400, {"error": (
        "chat 'c' waits for tool approvals: the request's messages must answer every one "
        "(approval-responded); not answered: call_1")})
    assert stored["waiting_for"]["type"] == "approval"


class Numbered:
    """Each reply numbered, and the messages each call was sent."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        self.seen.append([m.text for m in messages])
        return f"reply {len(self.seen)} to {messages[-1].text}"


def texts(conversation: dict[str, Any]) -> list[str]:
    return [m["content"] for m in conversation["messages"]]


def _hi_then_more(client: TestClient) -> dict[str, Any]:
    """Chat "c" told "hi", then "more": the first reply, as the next request sends it back."""
    first = chunks(client, body("c", user("u1", "hi")))
    said = {"id": first[0]["messageId"], "role": "assistant", "parts": []}
    chunks(client, body("c", user("u1", "hi"), said, user("u2", "more")))
    return said


def test_regenerate_branches_before_the_last_reply_under_the_chats_id(store_url: str) -> None:
    numbered = Numbered()
    with TestClient(create_app(TEMPLATE, FunctionModel(numbered), store=store_url)) as client:
        said = _hi_then_more(client)
        again = chunks(client, body("c", user("u1", "hi"), said, user("u2", "more"),
                                    trigger="regenerate-message"))
        branch = client.get("/api/conversations/c").json()
        original = client.get(f"/api/conversations/{branch['parent']['id']}").json()
        chunks(client, body("c", user("u1", "hi"), said, user("u2", "more"),
                            {"id": again[0]["messageId"], "role": "assistant", "parts": []},
                            user("u3", "on")))
        went_on = client.get("/api/conversations/c").json()
        listed = client.get("/api/conversations").json()["conversations"]
    assert [c for c in again if c["type"] == "text-delta"] == [
        {"type": "text-delta", "id": again[0]["messageId"], "delta": "reply 3 to more"}]
    assert again[-1] == {"type": "finish", "finishReason": "stop"}
    assert numbered.seen[2] == ["Be brief.", "hi", "reply 1 to hi", "more"]
    assert texts(branch) == ["Be brief.", "hi", "reply 1 to hi", "more", "reply 3 to more"]
    assert branch["messages"][4]["id"] == again[0]["messageId"]
    assert branch["parent"]["before"] == 4 and branch["parent"]["id"] != "c"
    assert texts(original) == ["Be brief.", "hi", "reply 1 to hi", "more", "reply 2 to more"]
    assert original["parent"] is None and original["id"] == branch["parent"]["id"]
    assert [m["id"] for m in original["messages"][:4]] == [m["id"] for m in
                                                           branch["messages"][:4]]
    assert texts(went_on)[5:] == ["on", "reply 4 to on"]
    assert numbered.seen[3][-3:] == ["more", "reply 3 to more", "on"]
    assert sorted(c["id"] for c in listed) == sorted(["c", original["id"]])


def test_regenerate_of_a_reply_its_message_id_names(store_url: str) -> None:
    numbered = Numbered()
    with TestClient(create_app(TEMPLATE, FunctionModel(numbered), store=store_url)) as client:
        said = _hi_then_more(client)
        again = chunks(client, body("c", user("u1", "hi"), trigger="regenerate-message",
                                    messageId=said["id"]))
        by_user = chunks(client, body("c", user("u1", "hi"), trigger="regenerate-message",
                                      messageId="u1"))
        branch = client.get("/api/conversations/c").json()
    assert [c["delta"] for c in again if c["type"] == "text-delta"] == ["reply 3 to hi"]
    assert [c["delta"] for c in by_user if c["type"] == "text-delta"] == ["reply 4 to hi"]
    assert texts(branch) == ["Be brief.", "hi", "reply 4 to hi"]
    assert branch["parent"]["before"] == 2


@pytest.mark.parametrize(("sent", "status", "error"), [
    (body("c", user("u1", "hi"), trigger="regenerate-message", messageId="nope"), 400,
     '"messageId" names no message of chat \'c\': \'nope\''),
    (body("c", user("u1", "hi"), user("u9", "new"), trigger="regenerate-message"), 400,
     "regenerate-message makes a reply again and adds no message; not stored: u9 (send new "
     "messages with submit-message)"),
    (body("d", user("u1", "hi"), trigger="regenerate-message"), 404,
     "no chat 'd': there is no reply to regenerate in a chat not started"),
])
def test_a_regenerate_that_cannot_be_made_is_refused_and_nothing_changes(
        sent: dict[str, Any], status: int, error: str) -> None:
    numbered = Numbered()
    with TestClient(create_app(TEMPLATE, FunctionModel(numbered))) as client:
        chunks(client, body("c", user("u1", "hi")))
        answer = client.post("/ai-sdk/chat", json=sent)
        listed = client.get("/api/conversations").json()["conversations"]
        stored = client.get("/api/conversations/c").json()
    assert (answer.status_code, answer.json()) == (status, {"error": error})
    assert [c["id"] for c in listed] == ["c"] and stored["parent"] is None
    assert texts(stored) == ["Be brief.", "hi", "reply 1 to hi"] and len(numbered.seen) == 1


def test_a_chat_running_a_turn_is_409_before_any_stream() -> None:
    async def main() -> tuple[int, int, str]:
        gate, entered = asyncio.Event(), asyncio.Event()
        async with asgi_client(create_app(TEMPLATE, held_model(gate, entered))) as c:
            first = asyncio.create_task(c.post("/ai-sdk/chat", json=body(
                "c", user("u1", "one"))))
            await entered.wait()
            second = await c.post("/ai-sdk/chat", json=body("c", user("u1", "one"),
                                                             user("u2", "two")))
            gate.set()
            done = await first
        return done.status_code, second.status_code, second.json()["error"]

    done, busy, error = asyncio.run(main())
    assert (done, busy) == (200, 409)
    assert error.startswith("a turn is running in this conversation"), error


def test_a_request_with_no_new_message_retries_a_failed_reply() -> None:
    with TestClient(create_app(TEMPLATE, fails_once())) as client:
        failed = chunks(client, body("c", user("u1", "hello")))
        refused = client.post("/ai-sdk/chat", json=body("c", user("u1", "hello"),
                                                         user("u2", "hi")))
        retried = chunks(client, body("c", user("u1", "hello")))
    assert failed == [{"type": "error", "errorText": MODEL_FAILED}]
    assert (refused.status_code, refused.json()) == (409, {"error": (
        "the last reply failed before it ended: send a request with no new message (or "
        "regenerate) to retry it, then send the message")})
    assert [c["type"] for c in retried][-1] == "finish"
    assert retried[-4]["delta"] == "You said 'hello'"


def test_an_operators_approval_is_not_asked_of_the_user_and_refuses_the_users_answer(
        ) -> None:
    app = staff_app("memory")
    with TestClient(app) as client:
        asked = chunks(client, body("c", user("u1", "refund B2")), **ANN)
        decided = {"id": asked[0]["messageId"], "role": "assistant", "parts": [{
            "type": "tool-refund", "toolCallId": "call_1", "state": "approval-responded",
            "input": {"order": "B2"}, "approval": {"id": "call_1", "approved": True}}]}
        answer = client.post("/ai-sdk/chat", json=body("c", user("u1", "refund B2"), decided),
                             headers=ANN)
        by_olga = client.post("/api/conversations/c/approvals", headers=OLGA, json={
            "decisions": [{"call_id": "call_1", "approve": True}]})
    assert [c["type"] for c in asked] == ["start", "start-step", "tool-input-start",
                                          "tool-input-available", "finish-step", "finish"]
    assert asked[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert (answer.status_code, answer.json()) == (403, {"error": (
        "this approval waits for an operator: an operator decides it (the tool's approver is "
        "'operator'), not the user")})
    assert by_olga.status_code == 200


def test_a_chat_moves_between_the_ai_sdk_and_ag_ui(store_url: str) -> None:
    with TestClient(create_app(TEMPLATE, model(), store=store_url)) as client:
        first = chunks(client, body("c", user("u1", "hello")))
        run = client.post("/agui", json={"threadId": "c", "runId": "r", "messages": [
            {"id": "u2", "role": "user", "content": "from AG-UI"}]})
        back = chunks(client, body("c", user("u1", "hello"), user("u3", "and back")))
        stored = client.get("/api/conversations/c").json()["messages"]
    assert run.status_code == 200 and '"MESSAGES_SNAPSHOT"' in run.text
    assert [m["id"] for m in stored[1:]][::2] == ["u1", "u2", "u3"]
    assert stored[2]["id"] == first[0]["messageId"] and stored[6]["id"] == back[0]["messageId"]
    assert [m["content"] for m in stored[1:]] == [
        "hello", "You said 'hello'", "from AG-UI", "You said 'from AG-UI'", "and back",
        "You said 'and back'"]


@pytest.fixture(params=["sqlite", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """A store two workers share."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'convo.db'}"
    return str(request.getfixturevalue("postgres").fresh())


def test_a_worker_that_cached_the_original_goes_on_with_the_branch(shared_url: str) -> None:
    # Both hold five messages waiting for the user: only the branch's new parent tells the
    # first worker that its cached conversation is not the one the chat's id names now.
    one, two = Numbered(), Numbered()
    with TestClient(create_app(TEMPLATE, FunctionModel(one), store=shared_url)) as first, \
            TestClient(create_app(TEMPLATE, FunctionModel(two), store=shared_url)) as second:
        said = {"id": chunks(first, body("c", user("u1", "hi")))[0]["messageId"],
                "role": "assistant", "parts": []}
        chunks(first, body("c", user("u1", "hi"), said, user("u2", "more")))
        again = chunks(second, body("c", user("u1", "hi"), said, user("u2", "more"),
                                    trigger="regenerate-message"))
        chunks(first, body("c", user("u1", "hi"), said, user("u2", "more"), {
            "id": again[0]["messageId"], "role": "assistant", "parts": []}, user("u3", "on")))
        stored = first.get("/api/conversations/c").json()
    assert two.seen == [["Be brief.", "hi", "reply 1 to hi", "more"]]
    assert one.seen[-1][-3:] == ["more", "reply 1 to more", "on"]
    assert texts(stored)[3:] == ["more", "reply 1 to more", "on", "reply 3 to on"]
