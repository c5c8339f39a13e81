"""A conversation's view carries its owner's ratings (``"feedback"``), on each store, so the
chat page shows the thumbs pressed after a reload or on another device; turn answers do not
(a turn reads nothing more from the store: docs/serving.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import TokenTable, create_app
from convo.serve._stores import open_store

PEOPLE = TokenTable({"t-ann": {"user": "ann"}, "t-bob": {"user": "bob"},
                     "t-olga": {"user": "olga", "role": "operator"}})
ANN, BOB, OLGA = ({"Authorization": f"Bearer t-{who}"} for who in ("ann", "bob", "olga"))


@pytest.fixture
def client(store_url: str) -> Iterator[TestClient]:
    app = create_app(TEMPLATE, model(), store=open_store(store_url), auth=PEOPLE)
    with TestClient(app) as c:
        yield c


def chat(client: TestClient, *said: str) -> str:
    """Ann's conversation: system (0), then a user message and a reply for each of ``said``
    (the replies at 2, 4, ...)."""
    cid = str(client.post("/api/conversations", json={}, headers=ANN).json()["id"])
    for text in said:
        response = client.post(f"/api/conversations/{cid}/messages", json={"content": text},
                               headers=ANN)
        assert response.status_code == 200
        assert "feedback" not in response.json()  # a turn's answer reads no ratings
    return cid


def rate(client: TestClient, cid: str, body: dict[str, Any]) -> None:
    response = client.post(f"/api/conversations/{cid}/feedback", json=body, headers=ANN)
    assert (response.status_code, response.content) == (204, b"")


def shown(client: TestClient, cid: str, who: dict[str, str] = ANN) -> tuple[int, Any]:
    response = client.get(f"/api/conversations/{cid}", headers=who)
    body = response.json()
    return response.status_code, body.get("feedback", body)


def test_a_conversation_without_ratings_shows_an_empty_object(client: TestClient) -> None:
    cid = chat(client, "hi")
    assert shown(client, cid) == (200, {})


def test_the_owner_sees_their_ratings_and_a_replaced_one_shows_the_new(
        client: TestClient) -> None:
    cid = chat(client, "hi", "again")
    rate(client, cid, {"message": 2, "rating": 1})
    rate(client, cid, {"message": 4, "rating": -1, "comment": "wrong order number"})
    assert shown(client, cid) == (200, {
        "2": {"rating": 1, "comment": None},
        "4": {"rating": -1, "comment": "wrong order number"}})
    rate(client, cid, {"message": 2, "rating": -1, "comment": "Ünïcode, \"quoted\" ✓"})
    rate(client, cid, {"message": 4, "rating": 1})  # the comment goes with the old rating
    assert shown(client, cid) == (200, {
        "2": {"rating": -1, "comment": "Ünïcode, \"quoted\" ✓"},
        "4": {"rating": 1, "comment": None}})
    exported = client.get("/api/feedback", headers=OLGA).json()["feedback"]
    assert sorted((f["message_index"], f["rating"], f["comment"]) for f in exported) == [
        (2, -1, "Ünïcode, \"quoted\" ✓"), (4, 1, None)]


def test_another_user_gets_404_and_an_operator_sees_the_owners_ratings(
        client: TestClient) -> None:
    cid = chat(client, "hi")
    rate(client, cid, {"message": 2, "rating": 1})
    assert shown(client, cid, BOB) == (404, {"error": f"no conversation {cid!r}"})
    assert shown(client, cid, OLGA) == (200, {"2": {"rating": 1, "comment": None}})


def test_ratings_stay_with_their_conversation(client: TestClient) -> None:
    first, second = chat(client, "one"), chat(client, "two")
    rate(client, first, {"message": 2, "rating": -1})
    assert shown(client, second) == (200, {})
    assert shown(client, first) == (200, {"2": {"rating": -1, "comment": None}})



class _StoreOfBefore:
    """A store of the user's own, written before stores had ``ratings``: the memory store's
    methods but that one."""

    def __init__(self) -> None:
        from convo.serve._stores import MemoryStore

        self._store = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name == "ratings":
            raise AttributeError(name)
        return getattr(self._store, name)


def test_a_store_without_ratings_shows_no_feedback_rather_than_failing() -> None:
    app = create_app(TEMPLATE, model(), store=_StoreOfBefore(), auth=PEOPLE)  # type: ignore[arg-type]
    with TestClient(app) as old:
        cid = chat(old, "hello")
        response = old.get(f"/api/conversations/{cid}", headers=ANN)
    assert response.status_code == 200
    assert response.json()["feedback"] == {}
