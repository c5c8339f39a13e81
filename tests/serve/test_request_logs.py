"""API.md §20, in process: one `convo.serve` log line per request, every 5xx logged with its
cause and an `error_id` that is also in the answer, and plain words for end users (the cause
only with `debug_errors`)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import TokenTable, create_app
from convo.serve._http.logs import JSONLines
from convo.serve._stores import Change, MemoryStore, Stored, StoreError

PLAIN = "The assistant could not answer. Please try again."
CAUSE = "HTTP 500 from http://10.0.0.7:8000/v1 (secret host)"


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(TEMPLATE, model())) as c:
        yield c


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "convo.serve"]


def test_one_line_per_request(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "convo.serve")
    cid = client.post("/api/conversations", json={}).json()["id"]
    client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    client.get("/api/conversations/nope")
    pattern = (r"(POST|GET) (\S+) (\d{3}) \d+\.\d+ms conversation=(\S+) user=default")
    found = [re.fullmatch(pattern, line) for line in _lines(caplog)]
    assert all(found), _lines(caplog)
    assert [m.groups() for m in found if m] == [
        ("POST", "/api/conversations", "201", cid),
        ("POST", f"/api/conversations/{cid}/messages", "200", cid),
        ("GET", "/api/conversations/nope", "404", "nope")]


def test_each_line_names_the_signed_in_user_in_both_formats(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "convo.serve")
    auth = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
    with TestClient(create_app(TEMPLATE, model(), auth=auth)) as client:
        cid = client.post("/api/conversations", json={},
                          headers={"Authorization": "Bearer t-ann"}).json()["id"]
        client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"},
                    headers={"Authorization": "Bearer t-ann"})
        client.get(f"/api/conversations/{cid}", headers={"Authorization": "Bearer t-olga"})
        client.get(f"/api/conversations/{cid}", headers={"Authorization": "Bearer nope"})
        client.get("/api/health")
    records = [r for r in caplog.records if r.name == "convo.serve"]
    assert [re.sub(r" \d+\.\dms ", " ", r.getMessage()) for r in records] == [
        f"POST /api/conversations 201 conversation={cid} user=ann",
        f"POST /api/conversations/{cid}/messages 200 conversation={cid} user=ann",
        f"GET /api/conversations/{cid} 200 conversation={cid} user=olga",
        f"GET /api/conversations/{cid} 401 conversation={cid} user=-",
        "GET /api/health 200 conversation=- user=-"]
    lines = [json.loads(JSONLines().format(r)) for r in records]
    assert [(line["status"], line["user"]) for line in lines] == [
        (201, "ann"), (200, "ann"), (200, "olga"), (401, None), (200, None)]
    assert list(lines[0]) == ["time", "method", "path", "status", "ms", "conversation", "user"]


def test_a_failed_model_call_is_plain_for_users_and_logged_with_its_cause(
        client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "convo.serve")
    cid = client.post("/api/conversations", json={}).json()["id"]
    failed = client.post(f"/api/conversations/{cid}/messages", json={"content": "fail"})
    body = failed.json()
    assert (failed.status_code, body["error"], body["waiting_for"]) == (
        502, PLAIN, {"type": "retry", "error": PLAIN})
    assert re.fullmatch(r"[0-9a-f]{12}", body["error_id"])
    shown = client.get(f"/api/conversations/{cid}").json()
    assert shown["waiting_for"] == {"type": "retry", "error": PLAIN}
    assert CAUSE not in failed.text + str(shown)
    line = _lines(caplog)[1]
    assert line.endswith(f" error_id={body['error_id']} cause: {CAUSE}")
    assert [r.levelname for r in caplog.records][:2] == ["INFO", "ERROR"]


def test_debug_errors_shows_the_cause_to_everyone() -> None:
    with TestClient(create_app(TEMPLATE, model(), debug_errors=True)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        failed = client.post(f"/api/conversations/{cid}/messages", json={"content": "fail"})
        assert failed.json()["error"] == CAUSE
        assert client.get(f"/api/conversations/{cid}").json()["waiting_for"] == {
            "type": "retry", "error": CAUSE}


def test_a_bug_is_a_plain_500_with_an_error_id(client: TestClient,
                                               caplog: pytest.LogCaptureFixture) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    broke = client.post(f"/api/conversations/{cid}/messages", json={"content": "boom"})
    assert broke.status_code == 500
    assert broke.json()["error"] == "Something went wrong on the server. Please try again later."
    assert _lines(caplog)[-1].endswith(
        f"error_id={broke.json()['error_id']} cause: RuntimeError: a bug in the bot")


class _Broken(MemoryStore):
    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        if conversation_id == "explode":
            raise KeyError("a bug in a store")
        return await super().load(conversation_id, messages=messages)


def test_an_unhandled_exception_is_a_json_500_with_an_error_id(
        caplog: pytest.LogCaptureFixture) -> None:
    with TestClient(create_app(TEMPLATE, model(), store=_Broken())) as client:
        broke = client.get("/api/conversations/explode")
    assert broke.status_code == 500
    assert broke.headers["content-type"] == "application/json"
    body: dict[str, Any] = broke.json()
    assert body == {"error": "Something went wrong on the server. Please try again later.",
                    "error_id": body["error_id"]}
    traced = [r for r in caplog.records if r.exc_info]
    assert len(traced) == 1 and traced[0].getMessage() == (
        f"error_id={body['error_id']}: KeyError: 'a bug in a store'")
    assert _lines(caplog)[-1].startswith("GET /api/conversations/explode 500 ")


class _Down(MemoryStore):
    """A store that fails on the write after the user's message: mid-turn."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.fail_after: int | None = None

    async def load(self, conversation_id: str, *, messages: bool = True) -> Stored | None:
        if conversation_id == "down":
            raise StoreError("connection to 10.1.1.1:5432 refused")
        return await super().load(conversation_id, messages=messages)

    async def write(self, conversation_id: str, change: Change) -> None:
        self.writes += 1
        if self.fail_after is not None and self.writes > self.fail_after and change.messages \
                and change.messages[0][1].role == "assistant":
            raise StoreError("disk full")
        await super().write(conversation_id, change)


def test_a_store_failure_is_a_503_with_an_error_id(caplog: pytest.LogCaptureFixture) -> None:
    with TestClient(create_app(TEMPLATE, model(), store=_Down())) as client:
        down = client.get("/api/conversations/down")
    assert down.status_code == 503
    assert down.json() == {"error": "the store does not answer: connection to 10.1.1.1:5432 "
                                    "refused", "error_id": down.json()["error_id"]}
    assert _lines(caplog)[-1].endswith(f"error_id={down.json()['error_id']} cause: the store "
                                       "does not answer: connection to 10.1.1.1:5432 refused")


def test_a_stream_cut_by_a_failure_ends_with_an_error_event_and_an_error_id(
        caplog: pytest.LogCaptureFixture) -> None:
    store = _Down()
    with TestClient(create_app(TEMPLATE, model(), store=store)) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        store.fail_after = store.writes
        with client.stream("POST", f"/api/conversations/{cid}/messages",
                           json={"content": "hi"},
                           headers={"Accept": "text/event-stream"}) as response:
            text = "".join(response.iter_text())
    assert response.status_code == 200
    events = [block.split("\n", 1) for block in text.strip().split("\n\n")]
    assert [e[0] for e in events] == ["event: message", "event: error"]
    error = json.loads(events[1][1].removeprefix("data: "))
    assert error == {"error": "Something went wrong on the server. Please try again later.",
                     "error_id": error["error_id"]}
    assert any(r.getMessage() == f"error_id={error['error_id']}: StoreError: disk full"
               for r in caplog.records)
