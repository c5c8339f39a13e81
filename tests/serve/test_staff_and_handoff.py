"""Staff approvals and human handoff over HTTP (API.md §19), in process with a TokenTable of
a user and an operator: who may decide which approval (403), what a conversation waits for,
the handoff routes and their statuses, and a rebuild from the store in the middle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from message_json import unnumbered
from staff_bot import ANN, OLGA, ran, seen, staff_app
from starlette.testclient import TestClient


@pytest.fixture(params=[1000, 0], ids=["cached", "rebuilt"])
def client(tmp_path: Any, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    # cache_size=0: every request rebuilds the conversation from the store
    with TestClient(staff_app(f"sqlite:///{tmp_path}/c.db", cache_size=request.param)) as c:
        yield c


def _new(client: TestClient, headers: dict[str, str] = ANN) -> str:
    response = client.post("/api/conversations", json={}, headers=headers)
    assert response.status_code == 201
    return str(response.json()["id"])


def test_an_operator_approval_waits_for_staff_and_refuses_the_user(client: TestClient) -> None:
    url = f"/api/conversations/{_new(client)}"
    body = client.post(f"{url}/messages", json={"content": "refund A1"}, headers=ANN).json()
    assert body["waiting_for"] == {"type": "approval", "approver": "operator", "calls": [
        {"id": "call_1", "name": "refund", "arguments": {"order": "A1"}, "approver": "operator"}]}
    decide = {"decisions": [{"call_id": "call_1", "approve": True}]}
    refused = client.post(f"{url}/approvals", json=decide, headers=ANN)
    assert (refused.status_code, refused.json()) == (403, {
        "error": "this approval waits for an operator: an operator must decide it (the "
                 "tool's approver is 'operator'), not the user"})
    assert ran == []
    done = client.post(f"{url}/approvals", json=decide, headers=OLGA)
    assert done.status_code == 200
    assert [m["content"] for m in done.json()["added"]] == ["refunded A1", "Done: refunded A1"]
    assert ran == ["A1"]
    assert done.json()["waiting_for"] == {"type": "user", "prompt": None}


def test_a_batch_with_one_operator_call_waits_for_an_operator(client: TestClient) -> None:
    url = f"/api/conversations/{_new(client)}"
    body = client.post(f"{url}/messages", json={"content": "both B2"}, headers=ANN).json()
    assert body["waiting_for"]["approver"] == "operator"
    assert [c["approver"] for c in body["waiting_for"]["calls"]] == ["user", "operator"]
    decide = {"decisions": [{"call_id": "call_1", "approve": True},
                            {"call_id": "call_2", "approve": False, "reason": "too big"}]}
    assert client.post(f"{url}/approvals", json=decide, headers=ANN).status_code == 403
    done = client.post(f"{url}/approvals", json=decide, headers=OLGA)
    assert [m["content"] for m in done.json()["added"]][:2] == [
        "noted", "Rejected by staff: too big"]
    assert ran == ["note B2"]


def test_a_user_approval_is_decided_by_the_user_or_an_operator(client: TestClient) -> None:
    for who, order in ((ANN, "C3"), (OLGA, "D4")):
        url = f"/api/conversations/{_new(client)}"
        body = client.post(f"{url}/messages", json={"content": f"note {order}"}, headers=ANN)
        assert body.json()["waiting_for"] == {"type": "approval", "approver": "user", "calls": [
            {"id": "call_1", "name": "note", "arguments": {"text": order}, "approver": "user"}]}
        done = client.post(f"{url}/approvals", headers=who, json={
            "decisions": [{"call_id": "call_1", "approve": True}]})
        assert done.status_code == 200
    assert ran == ["note C3", "note D4"]


HANDED = "The conversation was handed to a person: asked for a person."


def _handed_off(client: TestClient) -> str:
    url = f"/api/conversations/{_new(client)}"
    body = client.post(f"{url}/messages", json={"content": "a person please"}, headers=ANN)
    assert body.status_code == 200
    assert body.json()["waiting_for"] == {"type": "operator", "reason": "asked for a person"}
    assert [m["content"] for m in body.json()["added"]] == ["a person please", "", HANDED]
    return url


def test_a_handoff_stores_what_is_said_and_runs_no_model(client: TestClient) -> None:
    url = _handed_off(client)
    calls = len(seen)
    said = client.post(f"{url}/messages", json={"content": "is anyone there?"}, headers=ANN)
    assert said.status_code == 200
    assert unnumbered(said.json()["added"]) == [{"role": "user", "content": "is anyone there?"}]
    assert said.json()["waiting_for"] == {"type": "operator", "reason": "asked for a person"}
    answer = client.post(f"{url}/operator_messages", json={"content": "Hi, Olga here."},
                         headers=OLGA)
    assert answer.status_code == 200
    assert unnumbered(answer.json()["added"]) == [{"role": "assistant", "content": "Hi, Olga here.",
                                       "metadata": {"author": "olga"}}]
    assert len(seen) == calls  # no model ran
    back = client.post(f"{url}/handback", json={}, headers=OLGA)
    assert back.status_code == 200
    assert unnumbered(back.json()["added"]) == []
    assert back.json()["waiting_for"] == {"type": "user", "prompt": None}
    assert back.json()["status"] == "waiting"
    after = client.post(f"{url}/messages", json={"content": "thanks"}, headers=ANN)
    assert [m["content"] for m in after.json()["added"]] == ["thanks", "You said 'thanks'"]
    assert seen[-1] == ["Be brief.", "a person please", "", HANDED, "is anyone there?",
                        "Hi, Olga here.", "thanks"]
    shown = client.get(url, headers=ANN).json()
    assert [m["content"] for m in shown["messages"]] == [
        "Be brief.", "a person please", "", HANDED, "is anyone there?", "Hi, Olga here.",
        "thanks", "You said 'thanks'"]


def test_only_operators_talk_and_hand_back(client: TestClient) -> None:
    url = _handed_off(client)
    for route, body in (("operator_messages", {"content": "hi"}), ("handback", {})):
        refused = client.post(f"{url}/{route}", json=body, headers=ANN)
        assert refused.status_code == 403
    assert client.post(f"{url}/operator_messages", json={"content": "hi"}, headers=ANN
                       ).json() == {"error": "only operators may post operator messages: sign "
                                             "in as an operator"}
    assert client.post(f"{url}/handback", json={}, headers=ANN).json() == {
        "error": "only operators may hand a conversation back: sign in as an operator"}
    empty = client.post(f"{url}/operator_messages", json={"content": "  "}, headers=OLGA)
    assert empty.status_code == 400
    approvals = client.post(f"{url}/approvals", json={"decisions": []}, headers=OLGA)
    assert approvals.status_code == 409
    assert approvals.json()["error"].startswith("the conversation is handed to a person: an "
                                                "operator answers it until POST ")


def test_operator_routes_answer_409_when_not_handed_off(client: TestClient) -> None:
    url = f"/api/conversations/{_new(client)}"
    said = client.post(f"{url}/operator_messages", json={"content": "hi"}, headers=OLGA)
    assert (said.status_code, said.json()) == (409, {
        "error": "the conversation is not handed to a person: there is no handoff to post "
                 "operator messages to"})
    back = client.post(f"{url}/handback", json={}, headers=OLGA)
    assert (back.status_code, back.json()) == (409, {
        "error": "the conversation is not handed to a person: there is no handoff to hand "
                 "back"})
    missing = client.post("/api/conversations/nope/handback", json={}, headers=OLGA)
    assert missing.status_code == 404


def test_a_hand_back_in_another_worker_is_seen_by_this_one(tmp_path: Any) -> None:
    # Two workers on one store, each keeping paused conversations in its cache: a hand-back
    # adds no message, so the cache must also compare where the conversation waits.
    store = f"sqlite:///{tmp_path}/shared.db"
    one, two = staff_app(store), staff_app(store)
    with TestClient(one) as a, TestClient(two) as b:
        url = _handed_off(a)
        assert b.post(f"{url}/handback", json={}, headers=OLGA).status_code == 200
        after = a.post(f"{url}/messages", json={"content": "thanks"}, headers=ANN)
        assert [m["content"] for m in after.json()["added"]] == ["thanks", "You said 'thanks'"]
        assert after.json()["waiting_for"] == {"type": "user", "prompt": None}
