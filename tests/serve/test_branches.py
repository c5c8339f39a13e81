"""Served branches (API.md §28) on the memory, SQLite and Postgres stores: a branch makes no
model or tool call while it is built, has the state before a tool changed it later, lists
exactly the calls that ran at or after ``before`` (``not_undone``), counts only its own
messages, leaves the original unchanged, and shows ``parent`` in the conversation and the list;
a branch before a reply makes that call at once (502 and a retry when it fails)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from branch_kit import RAN, add_to_cart, charge, say
from starlette.testclient import TestClient
from weather_tools import chat_loop

from convo import FinishTool, FunctionModel, Message, tool
from convo._errors import ModelError
from convo.serve import create_app
from convo.serve._stores import Store, open_store

SEEN: list[list[dict[str, Any]]] = []
FAILING: list[bool] = [False]


@tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    RAN.append(f"refund {order}")
    return f"refunded {order}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    SEEN.append([{"role": m.role, "content": m.content} for m in messages])
    if FAILING[0]:
        raise ModelError("HTTP 500 from the model")
    last = messages[-1]
    if last.role == "tool":
        return f"ok ({len(messages)}) {{finish()}}"
    text = str(last.content)
    if text.startswith("add "):
        return f"{{add_to_cart(item='{text[4:]}')}}"
    if text == "mixed":  # ran, ran and raised, bad arguments, unknown tool
        return "{add_to_cart(item='jam')} {charge(amount=-1)} {charge(amount='x')} {nope()}"
    if text.startswith("refund "):
        return f"{{refund(order='{text[7:]}')}}"
    return f"You said {text!r}"


TEMPLATE = chat_loop(add_to_cart, charge, refund, FinishTool())


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    RAN.clear()
    SEEN.clear()
    FAILING[0] = False
    with TestClient(create_app(TEMPLATE, FunctionModel(reply), store=store)) as c:
        yield c


def original(client: TestClient) -> tuple[str, dict[str, Any]]:
    created = client.post("/api/conversations", json={"state": {"name": "Ann"}})
    assert created.status_code == 201
    cid = created.json()["id"]
    say(client, cid, "add tea")
    say(client, cid, "mixed")
    pending = say(client, cid, "refund A1")
    [call] = pending["waiting_for"]["calls"]
    decided = client.post(f"/api/conversations/{cid}/approvals",
                          json={"decisions": [{"call_id": call["id"], "approve": False}]})
    assert decided.status_code == 200
    body = client.get(f"/api/conversations/{cid}").json()
    assert [m["content"] for m in body["messages"] if m["role"] == "user"] == [
        "add tea", "mixed", "refund A1"]
    assert body["state"] == {"name": "Ann", "cart": ["tea", "jam"]}
    assert body["parent"] is None
    return cid, body


def index_of(body: dict[str, Any], content: str) -> int:
    return next(i for i, m in enumerate(body["messages"]) if m["content"] == content)


def branch(client: TestClient, cid: str, before: Any, **headers: str) -> Any:
    return client.post(f"/api/conversations/{cid}/branch", json={"before": before},
                       headers=headers)


def test_a_branch_before_a_user_message(client: TestClient) -> None:
    cid, before_body = original(client)
    ran, calls = list(RAN), len(SEEN)
    at = index_of(before_body, "mixed")
    response = branch(client, cid, at)
    assert response.status_code == 201, response.text
    body = response.json()
    assert (len(SEEN), RAN) == (calls, ran)  # no model call, no tool run
    assert body["parent"] == {"id": cid, "before": at}
    assert body["id"] != cid and body["added"] == []
    assert body["messages"] == before_body["messages"][:at]
    assert body["state"] == {"name": "Ann", "cart": ["tea"]}  # before jam was added
    assert body["waiting_for"] == {"type": "user", "prompt": None}
    messages = before_body["messages"]
    mixed = messages[at + 1]["tool_calls"]
    finished = [m["tool_calls"][0]["id"] for m in messages[at:]
                if m.get("tool_calls") and m["tool_calls"][0]["name"] == "finish"]
    # Ran: add_to_cart(jam), charge(-1) (which raised) and the finish calls that ended each
    # turn; not run: charge('x') (bad arguments), nope() (no such tool), the rejected refund.
    assert body["not_undone"] == [
        {"id": mixed[0]["id"], "name": "add_to_cart", "arguments": {"item": "jam"}},
        {"id": mixed[1]["id"], "name": "charge", "arguments": {"amount": -1}},
        *({"id": call_id, "name": "finish", "arguments": {}} for call_id in finished)]
    assert len(finished) == 2
    assert client.get(f"/api/conversations/{cid}").json() == before_body  # unchanged
    went_on = say(client, body["id"], "add ham")
    assert went_on["state"] == {"name": "Ann", "cart": ["tea", "ham"]}
    assert went_on["parent"] == {"id": cid, "before": at}
    assert went_on["outcome"] is None and went_on["status"] == "waiting"
    listed = {c["id"]: c["parent"] for c in client.get("/api/conversations").json()[
        "conversations"]}
    assert listed == {cid: None, body["id"]: {"id": cid, "before": at}}


def test_a_branch_before_a_reply_makes_it_again_with_exactly_the_messages_before(
        client: TestClient) -> None:
    cid, before_body = original(client)
    at = index_of(before_body, "mixed") - 2  # the reply after add_to_cart(tea)'s result
    assert before_body["messages"][at]["role"] == "assistant"
    ran = list(RAN)
    response = branch(client, cid, at)
    assert response.status_code == 201, response.text
    body = response.json()
    assert RAN == ran
    assert SEEN[-1] == [{"role": m["role"], "content": m["content"]}
                        for m in before_body["messages"][:at]]
    assert [m["content"] for m in body["added"]] == [f"ok ({at})", "Finished"]
    assert body["state"] == {"name": "Ann", "cart": ["tea"]}
    assert len(body["messages"]) == at + 2


def test_a_failed_call_of_a_branch_answers_502_and_waits_for_retry(client: TestClient
                                                                    ) -> None:
    cid, before_body = original(client)
    at = index_of(before_body, "mixed") - 2
    FAILING[0] = True
    response = branch(client, cid, at)
    assert response.status_code == 502, response.text
    body = response.json()
    assert body["waiting_for"]["type"] == "retry" and body["parent"] == {"id": cid,
                                                                           "before": at}
    FAILING[0] = False
    retried = client.post(f"/api/conversations/{body['id']}/retry", json={})
    assert retried.status_code == 200, retried.text
    assert [m["content"] for m in retried.json()["added"]] == [f"ok ({at})", "Finished"]


def test_a_bad_before_is_400_naming_the_index(client: TestClient) -> None:
    cid, before_body = original(client)
    tool_at = next(i for i, m in enumerate(before_body["messages"]) if m["role"] == "tool")
    said = {
        0: "before=0 is a system message; a branch starts before a user message or a "
           "model's reply",
        tool_at: f"before={tool_at} is a tool message (the result of 'add_to_cart'); a "
                 "branch starts before a user message or a model's reply",
        99: f"before=99 is outside the conversation's messages ({len(before_body['messages'])}"
            f" messages: indexes 0 to {len(before_body['messages']) - 1})",
    }
    for before, error in said.items():
        response = branch(client, cid, before)
        assert (response.status_code, response.json()) == (400, {"error": error})
    response = branch(client, cid, "1")
    assert response.status_code == 400
    assert response.json()["error"] == ('"before" must be the index of a message (an integer '
                                        "from 0), got '1'")
    assert [c["id"] for c in client.get("/api/conversations").json()["conversations"]] == [cid]


def test_a_branch_while_the_originals_turn_runs_is_409(client: TestClient, store: Store,
                                                       store_url: str) -> None:
    cid, _ = original(client)

    async def holding() -> Any:
        other = store if store_url == "memory" else open_store(store_url)
        if other is not store:
            await other.open()
        try:
            async with other.turn(cid) as taken:
                assert taken
                return await asyncio.to_thread(branch, client, cid, 1)
        finally:
            if other is not store:
                await other.close()

    response = asyncio.run(holding())
    assert response.status_code == 409
    assert response.json() == {"error": f"a turn is running in conversation {cid!r}: branch "
                                        "it once the turn is over"}


def test_a_branch_streams_the_reply_it_makes_when_asked(client: TestClient,
                                                        store_url: str) -> None:
    if store_url != "memory":
        pytest.skip("the stream is the engine's, the same on every store")
    cid, before_body = original(client)
    at = index_of(before_body, "mixed") - 2
    response = branch(client, cid, at, accept="text/event-stream")
    assert response.status_code == 200
    events = [line.removeprefix("event: ") for line in response.text.splitlines()
              if line.startswith("event: ")]
    assert events[-1] == "done" and "message" in events
    done = json.loads(response.text.split("event: done\ndata: ")[1].splitlines()[0])
    assert done["parent"] == {"id": cid, "before": at}
    assert [m["content"] for m in done["added"]] == [f"ok ({at})", "Finished"]


def test_a_schema_5_database_gains_parent_and_its_rows_read_as_before(
        store_url: str, tmp_path: Any) -> None:
    if store_url == "memory":
        pytest.skip("a migration is a database's")

    async def as_convo_5_left_it() -> None:  # a row written, then the column taken away
        store = open_store(store_url)
        await store.open()
        await store.create("old", {"customer": "Ann"})
        await store.close()
        if store_url.startswith("sqlite"):
            import sqlite3

            with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
                db.execute("ALTER TABLE conversations DROP COLUMN parent")
                db.execute("UPDATE convo_meta SET value = '5'")
            db.close()
        else:
            import psycopg

            with psycopg.connect(store_url, autocommit=True) as conn:
                conn.execute("ALTER TABLE conversations DROP COLUMN parent")
                conn.execute("UPDATE convo_meta SET value = '5'")

    asyncio.run(as_convo_5_left_it())
    RAN.clear()
    FAILING[0] = False
    with TestClient(create_app(TEMPLATE, FunctionModel(reply), store=store_url)) as client:
        old = client.get("/api/conversations/old").json()
        assert (old["parent"], old["state"]) == (None, {"customer": "Ann"})
        say(client, "old", "hello")
        made = branch(client, "old", 1)
        assert made.status_code == 201, made.text
        items = client.get("/api/conversations").json()["conversations"]
        assert {i["id"]: i["parent"] for i in items} == {
            "old": None, made.json()["id"]: {"id": "old", "before": 1}}
