"""Ownership and the conversation list (API.md §19), on the memory, SQLite and Postgres
stores: another user's id answers 404 on every route; operators read everything and act on
another user's conversation only through approvals; the list pages newest activity first
with a cursor that never skips or repeats."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest
from serve_kit import TEMPLATE, model
from starlette.testclient import TestClient

from convo.serve import TokenTable, create_app
from convo.serve._stores import Store, open_store

PEOPLE = TokenTable({"t-ann": {"user": "ann"}, "t-bob": {"user": "bob"},
                     "t-olga": {"user": "olga", "role": "operator"}})
ANN, BOB, OLGA = ({"Authorization": f"Bearer t-{who}"} for who in ("ann", "bob", "olga"))
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Clock:
    """The store's clock, moved by the test: ties are made on purpose."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


@pytest.fixture
def clock(store: Store) -> Clock:
    clock = Clock()
    store.clock = clock  # type: ignore[attr-defined]
    return clock


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(TEMPLATE, model(), store=store, auth=PEOPLE)) as c:
        yield c


def new(client: TestClient, who: dict[str, str]) -> str:
    response = client.post("/api/conversations", json={}, headers=who)
    assert response.status_code == 201
    return str(response.json()["id"])


def say(client: TestClient, who: dict[str, str], cid: str, text: str) -> dict[str, Any]:
    response = client.post(f"/api/conversations/{cid}/messages", json={"content": text},
                           headers=who)
    assert response.status_code == 200, response.text
    return dict(response.json())


def listed(client: TestClient, who: dict[str, str], query: str = "") -> dict[str, Any]:
    response = client.get(f"/api/conversations{query}", headers=who)
    assert response.status_code == 200, response.text
    return dict(response.json())


OWNER_ONLY = [("GET", ""), ("DELETE", ""), ("POST", "/messages"), ("POST", "/approvals"),
              ("POST", "/retry"), ("POST", "/cancel"), ("POST", "/feedback")]


def test_another_users_conversation_answers_404_on_every_route(client: TestClient) -> None:
    cid = new(client, ANN)
    say(client, ANN, cid, "refund A1")  # waits for an approval
    for method, path in OWNER_ONLY:
        response = client.request(method, f"/api/conversations/{cid}{path}", headers=BOB,
                                  json=None if method in ("GET", "DELETE") else {})
        assert (response.status_code, response.json()) == (
            404, {"error": f"no conversation {cid!r}"}), (method, path)
    with client.stream("POST", f"/api/conversations/{cid}/messages", json={"content": "hi"},
                       headers={**BOB, "Accept": "text/event-stream"}) as stream:
        assert stream.status_code == 404
    assert client.get(f"/api/conversations/{cid}", headers=ANN).json()["waiting_for"][
        "type"] == "approval"
    assert listed(client, BOB) == {"conversations": [], "next": None}


def test_operators_read_any_conversation_and_act_only_through_approvals(
        client: TestClient) -> None:
    cid = new(client, ANN)
    say(client, ANN, cid, "refund A1")
    assert client.get(f"/api/conversations/{cid}", headers=OLGA).status_code == 200
    for method, path in [("DELETE", ""), ("POST", "/messages"), ("POST", "/retry"),
                         ("POST", "/cancel"), ("POST", "/feedback")]:
        response = client.request(method, f"/api/conversations/{cid}{path}", headers=OLGA,
                                  json=None if method == "DELETE" else {"content": "x"})
        assert response.status_code == 403, (method, path)
        assert response.json()["error"] == (
            f"only the user who started conversation {cid!r} ('ann') may do this; an operator "
            "acts on it through approvals, operator_messages and handback")
    call = client.get(f"/api/conversations/{cid}", headers=ANN).json()["waiting_for"][
        "calls"][0]["id"]
    response = client.post(f"/api/conversations/{cid}/approvals", headers=OLGA,
                           json={"decisions": [{"call_id": call, "approve": True}]})
    assert response.status_code == 200
    assert response.json()["added"][1]["content"] == "Done: refunded A1"


def test_the_list_is_newest_activity_first_with_titles(client: TestClient,
                                                      clock: Clock) -> None:
    first = new(client, ANN)
    clock.now += 1
    second = new(client, ANN)
    clock.now += 1
    new(client, BOB)
    items = listed(client, ANN)["conversations"]
    assert [(i["id"], i["title"], i["status"]) for i in items] == [
        (second, None, "waiting"), (first, None, "waiting")]
    assert items[0]["waiting_for"] == {"type": "user", "prompt": None}
    assert items[0]["updated_at"] == "2023-11-14T22:13:20.000001Z"
    clock.now += 1
    say(client, ANN, first, "é" * 100)  # activity: the first goes to the top
    say(client, ANN, first, "a later message does not rename it")
    items = listed(client, ANN)["conversations"]
    assert [(i["id"], i["title"]) for i in items] == [(first, "é" * 80), (second, None)]
    assert set(items[0]) == {"id", "title", "status", "waiting_for", "updated_at", "parent"}
    assert ISO.match(items[0]["updated_at"]) and items[0]["updated_at"] > items[1]["updated_at"]


def test_a_walk_page_by_page_sees_each_conversation_once(client: TestClient,
                                                         clock: Clock) -> None:
    made = []
    for n in range(7):  # three instants, so ties are ordered by id
        clock.now = 1_700_000_000_000_000 + n // 3
        made.append((clock.now, new(client, ANN)))
    expected = [cid for _, cid in sorted(made, reverse=True)]
    seen, query = [], "?limit=2"
    while True:
        body = listed(client, ANN, query)
        seen += [i["id"] for i in body["conversations"]]
        if body["next"] is None:
            break
        query = f"?limit=2&before={body['next']}"
    assert seen == expected
    assert listed(client, ANN, "?limit=7")["next"] is None
    assert listed(client, ANN, "?limit=6")["next"] is not None


@pytest.mark.parametrize(("query", "error"), [
    ("?limit=0", '"limit" must be a whole number from 1 to 200 (default 50), got \'0\''),
    ("?limit=201", '"limit" must be a whole number from 1 to 200 (default 50), got \'201\''),
    ("?limit=ten", '"limit" must be a whole number from 1 to 200 (default 50), got \'ten\''),
    ("?before=nope", '"before" must be a cursor from a list\'s "next", got \'nope\''),
])
def test_a_bad_limit_or_cursor_is_a_400(client: TestClient, query: str, error: str) -> None:
    response = client.get(f"/api/conversations{query}", headers=ANN)
    assert (response.status_code, response.json()) == (400, {"error": error})


def _forged(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("raw", [
    b'[18446744073709551616, "x"]',  # past 64 bits (SQLite could not bind it)
    b'[-9223372036854775809, "x"]',
    b'[100000000000000000000, "x"]',  # fits no datetime (Postgres could not bind it)
    b'[1, "a\\u0000b"]',  # a NUL in the id (Postgres text refuses it)
    b'[1, "\\ud800"]',  # a lone surrogate (no UTF-8 for it)
    b"[" * 5000,  # nested past the JSON reader's recursion
    b'[1, "x", 3]',
    b'{"updated": 1}',
])
def test_a_forged_cursor_is_a_400_on_every_store(client: TestClient, raw: bytes) -> None:
    cursor = _forged(raw)
    response = client.get(f"/api/conversations?before={cursor}", headers=ANN)
    assert (response.status_code, response.json()) == (400, {
        "error": f'"before" must be a cursor from a list\'s "next", got {cursor!r}'})
    last = _forged(b'[253402300799999999, "~"]')  # the last moment a cursor may name
    assert listed(client, ANN, f"?before={last}") == {"conversations": [], "next": None}


def test_operators_list_everybody_and_filter(client: TestClient, clock: Clock) -> None:
    ann = new(client, ANN)
    clock.now += 1
    bob = new(client, BOB)
    clock.now += 1
    say(client, ANN, ann, "refund A1")  # ann's waits for an approval
    everyone = listed(client, OLGA)["conversations"]
    assert [(i["id"], i["user"]) for i in everyone] == [(ann, "ann"), (bob, "bob")]
    assert [i["id"] for i in listed(client, OLGA, "?user=bob")["conversations"]] == [bob]
    assert [i["id"] for i in listed(client, OLGA, "?waiting_for=approval")[
        "conversations"]] == [ann]
    assert listed(client, OLGA, "?waiting_for=operator")["conversations"] == []
    assert [i["id"] for i in listed(client, OLGA, "?status=waiting&user=ann")[
        "conversations"]] == [ann]
    assert listed(client, OLGA, "?status=ended")["conversations"] == []
    response = client.get("/api/conversations?waiting_for=user", headers=OLGA)
    assert (response.status_code, response.json()["error"]) == (
        400, '"waiting_for" must be one of approval, operator, got \'user\'')
    response = client.get("/api/conversations?status=paused", headers=OLGA)
    assert (response.status_code, response.json()["error"]) == (
        400, '"status" must be one of waiting, running, ended, got \'paused\'')
    mine = listed(client, BOB, "?user=ann&status=ended&waiting_for=approval")
    assert [(i["id"], "user" in i) for i in mine["conversations"]] == [(bob, False)]


def test_a_deleted_conversation_leaves_the_list(client: TestClient) -> None:
    cid = new(client, ANN)
    assert client.delete(f"/api/conversations/{cid}", headers=ANN).status_code == 204
    assert listed(client, ANN)["conversations"] == []


def test_a_list_reads_no_message(store: Store, client: TestClient) -> None:
    cid = new(client, ANN)
    say(client, ANN, cid, "hello")
    loaded: list[str] = []
    original = store.load

    async def counting(conversation_id: str, *, messages: bool = True) -> Any:
        loaded.append(conversation_id)
        return await original(conversation_id, messages=messages)

    store.load = counting  # type: ignore[method-assign]
    assert listed(client, ANN)["conversations"][0]["title"] == "hello"
    assert loaded == []
    asyncio.run(asyncio.sleep(0))
