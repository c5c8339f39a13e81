"""API.md §20: unknown ids are 404 before any lock or idempotency record is touched, and every
body a store cannot keep is a JSON 400 that says what and where — on every store."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import create_app
from convo.serve._stores import Store, open_store


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(TEMPLATE, model(), store=store)) as c:
        yield c


@pytest.mark.parametrize("route", ["messages", "approvals", "retry"])
def test_an_unknown_or_deleted_id_is_404_and_keeps_no_idempotency_record(
        client: TestClient, store: Store, route: str) -> None:
    body = {"messages": {"content": "hi"}, "approvals": {"decisions": []}, "retry": {}}[route]
    deleted = client.post("/api/conversations", json={}).json()["id"]
    assert client.delete(f"/api/conversations/{deleted}").status_code == 204
    for cid in ("nope", deleted):
        for headers in ({}, {"Idempotency-Key": "k1"}):
            answer = client.post(f"/api/conversations/{cid}/{route}", json=body,
                                 headers=headers)
            assert (answer.status_code, answer.json()) == (
                404, {"error": f"no conversation {cid!r}"})
        assert client.portal.call(store.idempotent, cid, "k1") is None  # type: ignore[union-attr]


@pytest.mark.parametrize("content", ["", " ", "\n\t  \r\n"])
def test_an_empty_or_blank_message_is_400_and_calls_no_model(client: TestClient,
                                                              content: str) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    answer = client.post(f"/api/conversations/{cid}/messages", json={"content": content})
    assert (answer.status_code, answer.json()) == (
        400, {"error": '"content" is empty or only whitespace: send some text'})
    assert len(client.get(f"/api/conversations/{cid}").json()["messages"]) == 1


BAD = [
    ('{"state": {"n": NaN}}', "NaN is not a JSON number: send a finite number or null "
                              "(at $.state.n)"),
    ('{"state": {"n": [1, Infinity]}}', "Infinity is not a JSON number: send a finite number "
                                        "or null (at $.state.n[1])"),
    ('{"state": {"n": -Infinity}}', "-Infinity is not a JSON number: send a finite number or "
                                    "null (at $.state.n)"),
    ('{"state": {"n": 1e999}}', "a number too large for a 64-bit float (at $.state.n)"),
    ('{"state": {"s": "a\\ud800b"}}', "a lone UTF-16 surrogate (\\ud800-\\udfff without its "
                                      "pair) in a string: it is not text (at $.state.s)"),
    ('{"state": {"a\\u0000": 1}}', "a NUL character (\\u0000) in a string: remove it "
                                   "(at $.state (a key))"),
    ('{"state": {"s": ["x\\u0000"]}}', "a NUL character (\\u0000) in a string: remove it "
                                       "(at $.state.s[0])"),
    ('{"state": ' + "[" * 64 + "]" * 64 + "}", "the body is JSON nested deeper than 64 "
                                               "levels (at $.state" + "[0]" * 63 + ")"),
    ('{"state": ' + "[" * 5000 + "]" * 5000 + "}", "the body is JSON nested deeper than 64 "
                                                   "levels (at $)"),
]


@pytest.mark.parametrize(("body", "error"), BAD)
def test_what_no_store_keeps_is_a_json_400_saying_where(client: TestClient, body: str,
                                                       error: str) -> None:
    created = client.post("/api/conversations", content=body,
                          headers={"Content-Type": "application/json"})
    assert (created.status_code, created.json()) == (400, {"error": error})
    cid = client.post("/api/conversations", json={}).json()["id"]
    said = client.post(f"/api/conversations/{cid}/messages", content=body.replace(
        '"state"', '"content": "hi", "extra"'), headers={"Content-Type": "application/json"})
    assert (said.status_code, said.json()) == (400, {"error": error.replace(
        "$.state", "$.extra")})
    after = client.get(f"/api/conversations/{cid}").json()  # nothing stored, nothing stuck
    assert (after["status"], len(after["messages"])) == ("waiting", 1)
    assert client.post(f"/api/conversations/{cid}/messages",
                       json={"content": "hi"}).status_code == 200


def test_a_nul_or_lone_surrogate_in_content_is_400(client: TestClient) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    for content, what in (("a\u0000b", "a NUL character"), ("a\ud800", "a lone UTF-16")):
        body = json.dumps({"content": content})  # ASCII escapes: \u0000, \ud800
        said = client.post(f"/api/conversations/{cid}/messages", content=body,
                           headers={"Content-Type": "application/json"})
        assert said.status_code == 400
        assert said.json()["error"].startswith(what) and said.json()["error"].endswith(
            "(at $.content)")
    assert client.get(f"/api/conversations/{cid}").json()["status"] == "waiting"
