"""Feedback on replies (API.md §19), on each store: the owner rates an assistant message (a
second rating replaces the first), operators read them back, and ``convo feedback export``
writes them as JSON lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import TokenTable, create_app
from convo.serve._stores import Store, open_store

PEOPLE = TokenTable({"t-ann": {"user": "ann"}, "t-bob": {"user": "bob"},
                     "t-olga": {"user": "olga", "role": "operator"}})
ANN, BOB, OLGA = ({"Authorization": f"Bearer t-{who}"} for who in ("ann", "bob", "olga"))
T0 = 1_764_000_000_000_000  # 2025-11-24T16:00:00Z


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def store(store_url: str) -> Store:
    store = open_store(store_url)
    store.clock = Clock()  # type: ignore[attr-defined]
    return store


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(TEMPLATE, model(), store=store, auth=PEOPLE)) as c:
        yield c


def chat(client: TestClient) -> str:
    """Ann's conversation: system (0), user (1), assistant (2)."""
    cid = str(client.post("/api/conversations", json={}, headers=ANN).json()["id"])
    assert client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"},
                       headers=ANN).status_code == 200
    return cid


def rate(client: TestClient, cid: str, body: dict[str, Any],
         who: dict[str, str] = ANN) -> tuple[int, Any]:
    response = client.post(f"/api/conversations/{cid}/feedback", json=body, headers=who)
    return response.status_code, (response.json() if response.content else None)


def test_the_owner_rates_a_reply_and_a_second_rating_replaces_it(client: TestClient,
                                                                 store: Store) -> None:
    cid = chat(client)
    assert rate(client, cid, {"message": 2, "rating": -1, "comment": "too short"}) == (204, None)
    store.clock.now += 1_500_000  # type: ignore[attr-defined]
    assert rate(client, cid, {"message": 2, "rating": 1}) == (204, None)
    response = client.get("/api/feedback", headers=OLGA)
    assert response.status_code == 200
    assert response.json() == {"feedback": [{
        "conversation": cid, "message_index": 2, "message": "You said 'hi'", "rating": 1,
        "comment": None, "user": "ann", "time": "2025-11-24T16:00:01.500000Z"}]}
    assert client.get("/api/feedback?since=2025-11-24T16:00:02Z", headers=OLGA).json() == {
        "feedback": []}
    assert len(client.get("/api/feedback?since=2025-11-24T16:00:01.5",
                          headers=OLGA).json()["feedback"]) == 1


@pytest.mark.parametrize(("body", "error"), [
    ({"message": 1, "rating": 1}, '"message" must be the 0-based index of an assistant message '
                                  "in conversation {cid!r}, got 1: message 1 is a user message"),
    ({"message": 9, "rating": 1}, '"message" must be the 0-based index of an assistant message '
                                  "in conversation {cid!r}, got 9: it has 3 messages"),
    ({"message": "2", "rating": 1}, '"message" must be the 0-based index of an assistant '
                                    "message in \"messages\", got '2'"),
    ({"message": -1, "rating": 1}, '"message" must be the 0-based index of an assistant '
                                   'message in "messages", got -1'),
    ({"message": 2, "rating": 0}, '"rating" must be 1 or -1, got 0'),
    ({"message": 2, "rating": True}, '"rating" must be 1 or -1, got True'),
    ({"message": 2, "rating": 1, "comment": 5}, '"comment" must be a string, got int'),
    ({"message": 2, "rating": 1, "stars": 5}, "unknown fields 'stars': a feedback body is "
                                              '{"message": INDEX, "rating": 1|-1, '
                                              '"comment"?: "..."}'),
])
def test_a_bad_rating_is_a_400_naming_it(client: TestClient, body: dict[str, Any],
                                         error: str) -> None:
    cid = chat(client)
    assert rate(client, cid, body) == (400, {"error": error.replace("{cid!r}", repr(cid))})


def test_only_the_owner_rates_and_only_operators_read(client: TestClient) -> None:
    cid = chat(client)
    assert rate(client, cid, {"message": 2, "rating": 1}, BOB) == (
        404, {"error": f"no conversation {cid!r}"})
    assert rate(client, "nope", {"message": 2, "rating": 1}) == (
        404, {"error": "no conversation 'nope'"})
    assert rate(client, cid, {"message": 2, "rating": 1}, OLGA)[0] == 403
    response = client.get("/api/feedback", headers=ANN)
    assert (response.status_code, response.json()) == (403, {
        "error": "only operators may read the feedback of all conversations"})
    response = client.get("/api/feedback?since=yesterday", headers=OLGA)
    assert (response.status_code, response.json()) == (400, {
        "error": '"since" must be an ISO 8601 time such as 2026-11-25T03:00:00Z, got '
                 "'yesterday'"})
    assert client.get("/api/feedback", headers=OLGA).json() == {"feedback": []}


def test_a_deleted_conversation_takes_its_feedback(client: TestClient) -> None:
    cid = chat(client)
    rate(client, cid, {"message": 2, "rating": 1})
    assert client.delete(f"/api/conversations/{cid}", headers=ANN).status_code == 204
    assert client.get("/api/feedback", headers=OLGA).json() == {"feedback": []}


def export(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convo", "feedback", "export", *options],
                          capture_output=True, text=True, timeout=60)


def test_convo_feedback_export_writes_json_lines(store_url: str, client: TestClient,
                                                 store: Store) -> None:
    if store_url == "memory":
        result = export("--store", "memory")
        assert (result.returncode, result.stdout) == (2, "")
        assert "--store memory holds nothing outside its server" in result.stderr
        return
    first, second = chat(client), chat(client)
    rate(client, first, {"message": 2, "rating": 1, "comment": "ünïcode ok"})
    store.clock.now += 60_000_000  # type: ignore[attr-defined]
    rate(client, second, {"message": 2, "rating": -1})
    result = export("--store", store_url)
    assert (result.returncode, result.stderr) == (0, "")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["conversation"], r["rating"], r["comment"], r["user"], r["message"])
            for r in rows] == [(first, 1, "ünïcode ok", "ann", "You said 'hi'"),
                               (second, -1, None, "ann", "You said 'hi'")]
    assert rows[1]["time"] == "2025-11-24T16:01:00.000000Z"
    assert "ünïcode" in result.stdout  # UTF-8 as it is, not \\u escapes
    later = export("--store", store_url, "--since", "2025-11-24T16:00:30+00:00")
    assert [json.loads(line)["conversation"] for line in later.stdout.splitlines()] == [second]


def test_export_refuses_a_missing_file_or_a_bad_time(tmp_path: Path) -> None:
    missing = export("--store", f"sqlite:///{tmp_path / 'nope.db'}")
    assert (missing.returncode, missing.stderr) == (
        2, f"convo: error: --store sqlite:///{tmp_path / 'nope.db'}: there is no such SQLite "
           "file (give the store convo serve was started with)\n")
    assert not (tmp_path / "nope.db").exists()
    bad = export("--since", "soon")
    assert (bad.returncode, bad.stderr) == (
        2, "convo: error: --since must be an ISO 8601 time such as 2026-11-25T03:00:00Z, got "
           "'soon'\n")
