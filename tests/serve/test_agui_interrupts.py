"""AG-UI runs that stop (API.md §24): approvals as interrupts answered by `resume` (every open
one, else 400 naming them; an operator's: 403), a handoff as `CUSTOM convo.waiting`, the
conversation's end as `CUSTOM convo.outcome`, a failed model call as `RUN_ERROR` and a next
run that retries. Every run recorded passes `ag-ui-validate` (AGUI207 off for resumed runs)."""

from __future__ import annotations

from typing import Any

from agui_kit import post_run, run_input, types, user, validate
from serve_kit import TEMPLATE, fails_once, model
from staff_bot import OLGA, staff_app
from starlette.testclient import TestClient

from convo.serve import create_app
from convo.serve._http.logs import MODEL_FAILED
from convo.templates import EndTemplate, LinearTemplate, SystemTemplate, UserTemplate

ANN = {"Authorization": "Bearer t-ann"}


def resolved(call_id: str, approve: bool = True, **more: Any) -> dict[str, Any]:
    return {"interruptId": call_id, "status": "resolved", "payload": {"approve": approve,
                                                                      **more}}


def test_an_approval_interrupts_the_run_and_resume_answers_it(store_url: str) -> None:
    with TestClient(create_app(TEMPLATE, model(), store=store_url)) as client:
        asked = post_run(client, run_input("t", "r1", [user("u1", "refund B2")]))
        refused = client.post("/agui", json=run_input("t", "r2", [user("u1", "refund B2"),
                                                                   user("u2", "well?")]))
        resumed = post_run(client, run_input("t", "r3", [user("u1", "refund B2")],
                                             resume=[resolved("call_1")]))
        stored = client.get("/api/conversations/t").json()
    assert types(asked) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS",
                            "TOOL_CALL_END", "RUN_FINISHED"]
    assert asked[-1]["outcome"] == {"type": "interrupt", "interrupts": [{
        "id": "call_1", "reason": "tool_approval", "toolCallId": "call_1",
        "message": 'Approve the call of refund with {"order": "B2"}?'}]}
    assert validate(asked) == []
    assert (refused.status_code, refused.json()) == (400, {"error": (
        "resume must answer every open interrupt of thread 't' (open interrupts not "
        "answered: call_1)")})
    assert types(resumed)[1] == "MESSAGES_SNAPSHOT"  # (the input lacks the stored reply)
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == ("call_1", "refunded B2")
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert validate(resumed, resumed=True) == []
    assert stored["waiting_for"] == {"type": "user", "prompt": None}
    assert [m["id"] for m in stored["messages"]].count("u2") == 0  # refused: nothing added


def test_a_cancelled_interrupt_rejects_the_call() -> None:
    with TestClient(create_app(TEMPLATE, model())) as client:
        post_run(client, run_input("t", "r1", [user("u1", "refund B2")]))
        resumed = post_run(client, run_input("t", "r2", [user("u1", "refund B2")], resume=[
            {"interruptId": "call_1", "status": "cancelled", "payload": {"reason": "no"}}]))
        stored = client.get("/api/conversations/t").json()["messages"]
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == stored[3]["content"] == "Rejected by the user: no"
    assert result["messageId"] == stored[3]["id"]
    assert validate(resumed, resumed=True) == []


def test_resume_naming_no_open_interrupt_is_400_and_runs_nothing() -> None:
    with TestClient(create_app(TEMPLATE, model())) as client:
        post_run(client, run_input("t", "r1", [user("u1", "hi")]))
        answer = client.post("/agui", json=run_input("t", "r2", [], resume=[
            resolved("call_9")]))
        unknown = client.post("/agui", json=run_input("t2", "r", [], resume=[
            resolved("call_9")]))
    assert (answer.status_code, answer.json()) == (400, {"error": (
        "resume answers no open interrupt: thread 't' has none (unknown interrupt ids: "
        "call_9)")})
    assert unknown.status_code == 404


def test_an_operators_approval_is_an_interrupt_for_the_operator_and_refuses_the_user() -> None:
    app = staff_app("memory")
    with TestClient(app) as client:
        asked = post_run(client, run_input("t", "r1", [user("u1", "refund B2")]), **ANN)
        answer = client.post("/agui", json=run_input("t", "r2", [], resume=[
            resolved("call_1")]), headers=ANN)
        decided = client.post("/api/conversations/t/approvals", headers=OLGA, json={
            "decisions": [{"call_id": "call_1", "approve": True}]})
    assert asked[-1]["outcome"]["interrupts"][0]["metadata"] == {"approver": "operator"}
    assert validate(asked) == []
    assert answer.status_code == 403 and "operator" in answer.json()["error"]
    assert decided.status_code == 200


def test_a_handoff_finishes_the_run_with_convo_waiting_and_later_runs_add_messages() -> None:
    app = staff_app("memory")
    with TestClient(app) as client:
        handed = post_run(client, run_input("t", "r1", [user("u1", "a person please")]),
                          **ANN)
        during = post_run(client, run_input("t", "r2", [user("u1", "a person please"),
                                                        user("u2", "hello?")]), **ANN)
        stored = client.get("/api/conversations/t", headers=ANN).json()
    assert handed[-2] == {"type": "CUSTOM", "name": "convo.waiting",
                          "value": {"type": "operator", "reason": "asked for a person"}}
    assert handed[-1]["outcome"] == {"type": "success"}
    assert validate(handed) == []
    assert types(during)[-2:] == ["CUSTOM", "RUN_FINISHED"] and validate(during) == []
    assert stored["messages"][-1] == {"role": "user", "content": "hello?", "id": "u2"}
    assert stored["waiting_for"]["type"] == "operator"


def test_the_end_of_the_conversation_comes_as_convo_outcome() -> None:
    ending = LinearTemplate([SystemTemplate("Be brief."), UserTemplate(),
                             EndTemplate("Goodbye")])
    with TestClient(create_app(ending, model())) as client:
        events = post_run(client, run_input("t", "r1", [user("u1", "bye")]))
        again = client.post("/agui", json=run_input("t", "r2", [user("u2", "more")]))
    custom = next(e for e in events if e["type"] == "CUSTOM")
    assert custom["name"] == "convo.outcome" and custom["value"]["status"] == "ended"
    assert events[-1]["type"] == "RUN_FINISHED" and validate(events) == []
    assert again.status_code == 409 and "has ended" in again.json()["error"]


def test_a_failed_model_call_is_run_error_in_plain_words_and_a_next_run_retries() -> None:
    with TestClient(create_app(TEMPLATE, fails_once())) as client:
        failed = post_run(client, run_input("t", "r1", [user("u1", "hello")]))
        refused = client.post("/agui", json=run_input("t", "r2", [user("u1", "hello"),
                                                                   user("u2", "hi")]))
        retried = post_run(client, run_input("t", "r3", [user("u1", "hello")]))
        stored = client.get("/api/conversations/t").json()["messages"]
    assert types(failed) == ["RUN_STARTED", "RUN_ERROR"]
    assert failed[-1]["message"] == MODEL_FAILED and "10.0.0.7" not in str(failed)
    assert validate(failed) == []
    assert (refused.status_code, refused.json()) == (409, {"error": (
        "the last run failed before it ended: send a run with no new message to retry it, "
        "then send the message")})
    assert types(retried) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                              "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert validate(retried) == []
    assert [m["content"] for m in stored[1:]] == ["hello", "You said 'hello'"]
