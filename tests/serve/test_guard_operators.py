"""Operators see what a guard blocked (API.md §27): the original of a blocked reply, kept in
the store's copy of its replacement (``metadata["guard"]["original"]``), is in the
conversation an operator reads; its user never gets it."""

from __future__ import annotations

from starlette.testclient import TestClient

from convo import LinearTemplate, LoopTemplate, MockModel, ToolingTemplate, UserTemplate
from convo.guards import matches
from convo.serve import TokenTable, create_app

USERS = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
ANN = {"Authorization": "Bearer t-ann"}
OLGA = {"Authorization": "Bearer t-olga"}
TEMPLATE = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([])])])


def test_an_operator_sees_the_original_of_a_blocked_reply_and_its_user_does_not(
        store_url: str) -> None:
    app = create_app(TEMPLATE, MockModel(["the secret is 42"]), store=store_url, auth=USERS,
                     guards=[matches("secret")])
    with TestClient(app) as c:
        cid = c.post("/api/conversations", json={}, headers=ANN).json()["id"]
        said = c.post(f"/api/conversations/{cid}/messages", json={"content": "tell me"},
                      headers=ANN).json()
        mark = {"name": "matches", "action": "block", "reason": "matches 'secret'"}
        shown = said["added"][-1]
        assert (shown["content"], shown["metadata"]["guard"]) == (
            "Sorry, I can't help with that.", mark)
        for who, expected in ((ANN, mark), (OLGA, {**mark, "original": "the secret is 42"})):
            body = c.get(f"/api/conversations/{cid}", headers=who).json()
            reply = body["messages"][-1]
            assert (reply["content"], reply["metadata"]["guard"]) == (
                "Sorry, I can't help with that.", expected)
        assert "the secret is 42" not in c.get(f"/api/conversations/{cid}", headers=ANN).text
