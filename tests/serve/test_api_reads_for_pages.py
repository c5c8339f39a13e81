"""What the pages read from the API where it was too thin or said the wrong thing (API.md §19),
on each store: a conversation's read carries the title its list shows (and, for operators,
its user); the chat page knows whether a new conversation greets (else it stores one only
with its first message); a staff decision reads as staff's, to the model, in the store and
after a rebuild; a hand-back adds no message and leaves the conversation waiting for the
user."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from staff_bot import ANN, OLGA, TEMPLATE, USERS, note, reply, seen, staff_app
from starlette.testclient import TestClient
from weather_tools import chat

from convo import Approval
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)


@pytest.fixture(params=[1000, 0], ids=["cached", "rebuilt"])
def client(store_url: str, request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """The app on each store; ``rebuilt``: every request rebuilds the conversation from it."""
    with TestClient(staff_app(store_url, cache_size=request.param)) as c:
        yield c


def _new(client: TestClient) -> str:
    created = client.post("/api/conversations", json={}, headers=ANN)
    assert created.status_code == 201
    return str(created.json()["id"])


def _listed(client: TestClient) -> list[tuple[str, str | None]]:
    found = client.get("/api/conversations", headers=OLGA).json()["conversations"]
    return [(c["id"], c["title"]) for c in found]


# -- the title of one conversation ------------------------------------------------------------

def test_a_conversations_read_carries_the_title_its_list_shows(client: TestClient) -> None:
    conversation = _new(client)
    url = f"/api/conversations/{conversation}"
    assert client.get(url, headers=ANN).json()["title"] is None  # no user message yet
    said = "Where is my parcel? " * 6  # 120 characters: the title is its first 80
    client.post(f"{url}/messages", json={"content": said}, headers=ANN)
    client.post(f"{url}/messages", json={"content": "and another thing"}, headers=ANN)
    mine, staffs = client.get(url, headers=ANN).json(), client.get(url, headers=OLGA).json()
    assert _listed(client) == [(conversation, said[:80])]
    assert (mine["title"], staffs["title"]) == (said[:80], said[:80])
    assert "user" not in mine  # a user's own conversation: no need to name them
    assert staffs["user"] == "ann"  # as in the operators' list
    assert list(mine) == ["id", "status", "messages", "state", "outcome", "waiting_for",
                          "parent", "queued", "title", "feedback"]


# -- a new conversation, stored when there is something in it ---------------------------------

def _greets(template: Any, store_url: str) -> str:
    with TestClient(create_app(template, FunctionModel(reply), store=store_url,
                               auth=USERS)) as client:
        html = client.get("/").text
        assert client.get("/api/conversations", headers=OLGA).json()["conversations"] == []
        found = re.search(r'<meta name="convo-greets" content="(\w+)">', html)
        assert found is not None
        return found.group(1)


def test_the_chat_page_knows_whether_a_new_conversation_greets(store_url: str) -> None:
    """Opening the page stores nothing; it reads whether a new conversation says something
    before it waits for the user (then it stores one on opening, to show that)."""
    assert _greets(TEMPLATE, store_url) == "false"  # a system message, then the user
    assert _greets(chat(None, greeting="Hello! How can I help?"), store_url) == "true"
    assert _greets(LinearTemplate([SystemTemplate("Greet the user."), LoopTemplate([
        ToolingTemplate([note]), UserTemplate()])]), store_url) == "true"  # the model first


def test_a_conversation_opened_by_its_first_message_is_listed_with_it(client: TestClient
                                                                      ) -> None:
    """What the chat page does on a first message: create, then send; one list entry, titled."""
    assert _listed(client) == []
    conversation = _new(client)
    sent = client.post(f"/api/conversations/{conversation}/messages",
                       json={"content": "hello there"}, headers=ANN)
    assert sent.status_code == 200
    assert _listed(client) == [(conversation, "hello there")]


def test_another_users_link_is_not_found_and_makes_nothing(client: TestClient) -> None:
    olgas = client.post("/api/conversations", json={}, headers=OLGA).json()["id"]
    client.post(f"/api/conversations/{olgas}/messages", json={"content": "mine"}, headers=OLGA)
    read = client.get(f"/api/conversations/{olgas}", headers=ANN)
    assert (read.status_code, read.json()) == (404, {"error": f"no conversation {olgas!r}"})
    assert _listed(client) == [(olgas, "mine")]


# -- who decided --------------------------------------------------------------------------------

def _rejected(client: TestClient, headers: dict[str, str], said: str) -> tuple[str, dict[str, Any]]:
    url = f"/api/conversations/{_new(client)}"
    waiting = client.post(f"{url}/messages", json={"content": said}, headers=ANN).json()
    call = waiting["waiting_for"]["calls"][0]["id"]
    done = client.post(f"{url}/approvals", headers=headers, json={"decisions": [
        {"call_id": call, "approve": False, "reason": "not now"}]})
    assert done.status_code == 200
    return url, done.json()


def test_a_staff_rejection_says_staff_to_the_model_and_the_user(client: TestClient) -> None:
    url, done = _rejected(client, OLGA, "note milk")  # the user's approval, decided by staff
    assert [m["content"] for m in done["added"]] == ["Rejected by staff: not now",
                                                     "Done: Rejected by staff: not now"]
    assert done["added"][0]["metadata"] == {"rejected": True}
    assert seen[-1][-1] == "Rejected by staff: not now"  # what the model was told
    stored = client.get(url, headers=ANN).json()
    assert [m["content"] for m in stored["messages"][-2:]] == [
        "Rejected by staff: not now", "Done: Rejected by staff: not now"]
    # The next turn (rebuilt from the store when the cache is off) replays the same words.
    again = client.post(f"{url}/messages", json={"content": "thanks"}, headers=ANN)
    assert again.status_code == 200
    assert [m["content"] for m in again.json()["messages"][-4:]] == [
        "Rejected by staff: not now", "Done: Rejected by staff: not now", "thanks",
        "You said 'thanks'"]


def test_the_users_own_rejection_still_says_the_user(client: TestClient) -> None:
    _, done = _rejected(client, ANN, "note eggs")
    assert [m["content"] for m in done["added"]] == ["Rejected by the user: not now",
                                                     "Done: Rejected by the user: not now"]


def test_a_call_only_staff_may_decide_is_rejected_by_staff(client: TestClient) -> None:
    _, done = _rejected(client, OLGA, "refund A1")
    assert done["added"][0]["content"] == "Rejected by staff: not now"


def test_a_decisions_record_names_staff_only_when_staff_decided() -> None:
    """Stores and transcripts keep a user's decision as before; staff's carries ``by``."""
    assert Approval(False, "no").to_dict() == {"approved": False, "reason": "no"}
    staff = Approval(False, "no", by="staff")
    assert staff.to_dict() == {"approved": False, "reason": "no", "by": "staff"}
    assert Approval.from_dict(staff.to_dict()) == staff
    assert Approval.from_dict({"approved": False, "reason": None}) == Approval(False)
    assert (staff.rejection, Approval(False, by="staff").rejection) == (
        "Rejected by staff: no", "Rejected by staff")
    with pytest.raises(ValueError, match="'by' must be in"):
        Approval(False, by="bot")


def test_a_hand_back_adds_no_message_and_waits_for_the_user(client: TestClient) -> None:
    """What the chat page reads to say the assistant is back: the handoff's call in the
    messages, the conversation waiting for the user, no bot reply since (API.md §19)."""
    url = f"/api/conversations/{_new(client)}"
    client.post(f"{url}/messages", json={"content": "a person please"}, headers=ANN)
    client.post(f"{url}/operator_messages", json={"content": "Hi, Olga here."}, headers=OLGA)
    back = client.post(f"{url}/handback", json={}, headers=OLGA)
    assert (back.status_code, back.json()["added"]) == (200, [])
    read = client.get(url, headers=ANN).json()
    assert read["waiting_for"] == {"type": "user", "prompt": None}
    assert [(m["role"], (m.get("metadata") or {}).get("author")) for m in
            read["messages"][-3:]] == [("assistant", None), ("tool", None),
                                       ("assistant", "olga")]
    assert [c["name"] for c in read["messages"][-3]["tool_calls"]] == ["handoff"]
