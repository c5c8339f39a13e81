"""The HTTP API of API.md §9, in process (Starlette's TestClient and httpx over ASGI): every
route, status code and error, idempotency, SSE order, approvals, a failed model call then
retry, and one turn at a time."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from message_json import streamed, unnumbered
from provider_fakes import FakeProvider
from refund_bot import TEMPLATE, fail_next, ran, reply
from serve_kit import asgi_client, held_model
from starlette.testclient import TestClient
from subroutine_workers import (
    check_subroutines_on_two_workers,
    jotted_lines,
    load_stored,
    subroutine_bot,
)

from convo.models import FunctionModel
from convo.serve import create_app
from convo.serve._stores import SCHEMA_VERSION
from convo.serve._stores.sqlite import SQLiteStore
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishTool


@pytest.fixture
def client() -> Iterator[TestClient]:
    ran.clear()
    fail_next.clear()
    # A message's body limit grows to fit its attachments (API.md §16): 8 of 3000 bytes here.
    with TestClient(create_app(TEMPLATE, FunctionModel(reply), max_message_bytes=100,
                               max_attachment_bytes=3000)) as c:
        yield c


def _new(client: TestClient) -> str:
    response = client.post("/api/conversations", json={})
    assert response.status_code == 201
    return str(response.json()["id"])


def test_create_runs_until_the_template_waits(client: TestClient) -> None:
    response = client.post("/api/conversations", json={"state": {"name": "Ada"}})
    body = response.json()
    assert response.status_code == 201
    assert len(body["id"]) == 22  # 128 random bits, URL-safe
    assert (body["status"], body["waiting_for"], body["outcome"]) == (
        "waiting", {"type": "user", "prompt": None}, None)
    assert unnumbered(body["messages"]) == [{"role": "system", "content": "Be brief."}]
    assert body["state"] == {"name": "Ada"}


def test_a_message_answers_with_what_it_added(client: TestClient) -> None:
    cid = _new(client)
    response = client.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
    assert response.status_code == 200
    assert unnumbered(response.json()["added"]) == [{"role": "user", "content": "hi"},
                                        {"role": "assistant", "content": "You said 'hi'"}]
    shown = client.get(f"/api/conversations/{cid}").json()
    assert [m["content"] for m in shown["messages"]] == ["Be brief.", "hi", "You said 'hi'"]
    assert shown["status"] == "waiting"


def test_sse_events_in_order(client: TestClient) -> None:
    cid = _new(client)
    with client.stream("POST", f"/api/conversations/{cid}/messages", json={"content": "hi"},
                       headers={"Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        text = "".join(stream.iter_text())
    events = [(block.split("\n")[0][7:], json.loads(block.split("\n")[1][6:]))
              for block in text.strip().split("\n\n")]
    assert [e for e, _ in events] == ["message", "message", "done"]
    assert unnumbered([events[0][1], events[1][1]]) == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "You said 'hi'"}]
    assert events[2][1]["added"] == [events[0][1], events[1][1]]


@pytest.mark.parametrize(("body", "status", "error"), [
    (b"[1]", 400, "the body must be a JSON object, got list"),
    (b"{nope", 400, "the body must be a JSON object: Expecting property name enclosed in "
                    "double quotes: line 1 column 2 (char 1)"),
    (b'{"content": 3}', 400, '"content" must be a string: send {"content": "your message"}'),
    (b"{}", 400, '"content" must be a string: send {"content": "your message"}'),
    (json.dumps({"content": "é" * 51}).encode(), 413, '"content" is over 100 bytes'),
    (b"x" * 110000, 413, "the request body is over 106128 bytes"),
])
def test_bad_bodies(client: TestClient, body: bytes, status: int, error: str) -> None:
    cid = _new(client)
    response = client.post(f"/api/conversations/{cid}/messages", content=body,
                           headers={"Accept": "text/event-stream"})
    assert (response.status_code, response.json()) == (status, {"error": error})


def test_unknown_ids_routes_and_methods(client: TestClient) -> None:
    assert client.get("/api/conversations/nope").status_code == 404
    assert client.get("/api/conversations/nope").json() == {"error": "no conversation 'nope'"}
    assert client.post("/api/conversations/nope/messages", json={"content": "x"}
                       ).status_code == 404
    assert client.get("/api/nothing").json() == {"error": "Not Found: GET /api/nothing"}
    assert client.put("/api/conversations").status_code == 405


def test_delete_then_404(client: TestClient) -> None:
    cid = _new(client)
    assert client.delete(f"/api/conversations/{cid}").status_code == 204
    assert client.get(f"/api/conversations/{cid}").status_code == 404
    assert client.delete(f"/api/conversations/{cid}").status_code == 404


def test_idempotency_keys(client: TestClient) -> None:
    cid = _new(client)
    url = f"/api/conversations/{cid}/messages"
    first = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k1"})
    again = client.post(url, json={"content": "hi"}, headers={"Idempotency-Key": "k1"})
    assert (again.status_code, again.json()) == (first.status_code, first.json())
    other = client.post(url, json={"content": "ho"}, headers={"Idempotency-Key": "k1"})
    assert (other.status_code, other.json()) == (
        409, {"error": "this Idempotency-Key was used with other content"})
    messages = client.get(f"/api/conversations/{cid}").json()["messages"]
    assert [m["content"] for m in messages] == ["Be brief.", "hi", "You said 'hi'"]


def test_approval_pauses_then_answers(client: TestClient) -> None:
    cid = _new(client)
    url = f"/api/conversations/{cid}"
    body = client.post(f"{url}/messages", json={"content": "refund A1"}).json()
    assert body["waiting_for"] == {"type": "approval", "approver": "user", "calls": [
        {"id": "call_1", "name": "refund", "arguments": {"order": "A1"}, "approver": "user"}]}
    busy = client.post(f"{url}/messages", json={"content": "hello?"})
    assert busy.status_code == 409
    assert busy.json()["error"].startswith("an approval is pending: answer it with POST ")
    missing = client.post(f"{url}/approvals", json={"decisions": []})
    assert (missing.status_code, missing.json()) == (
        400, {"error": "decide every pending call; missing: call_1"})
    done = client.post(f"{url}/approvals", json={"decisions": [
        {"call_id": "call_1", "approve": False, "reason": "not now"}]})
    assert done.status_code == 200
    assert [m["content"] for m in done.json()["added"]][:1] == ["Rejected by the user: not now"]
    assert ran == []
    assert done.json()["waiting_for"] == {"type": "user", "prompt": None}


def test_a_failed_model_call_keeps_the_message_and_waits_for_retry(client: TestClient) -> None:
    cid = _new(client)
    url = f"/api/conversations/{cid}"
    fail_next.append(True)
    failed = client.post(f"{url}/messages", json={"content": "hi"})
    assert failed.status_code == 502
    plain = "The assistant could not answer. Please try again."  # the cause is in the log
    assert failed.json()["error"] == plain
    assert failed.json()["waiting_for"] == {"type": "retry", "error": plain}
    assert unnumbered(failed.json()["added"]) == [{"role": "user", "content": "hi"}]
    assert client.post(f"{url}/messages", json={"content": "again"}).status_code == 409
    retried = client.post(f"{url}/retry", json={})
    assert retried.status_code == 200
    assert unnumbered(retried.json()["added"]) == (
        [{"role": "assistant", "content": "You said 'hi'"}])


def test_a_bug_ends_the_conversation_with_500(client: TestClient) -> None:
    cid = _new(client)
    response = client.post(f"/api/conversations/{cid}/messages", json={"content": "boom"})
    assert response.status_code == 500
    assert response.json()["error"] == (
        "Something went wrong on the server. Please try again later.")
    assert response.json()["status"] == "ended"
    ended = client.post(f"/api/conversations/{cid}/messages", json={"content": "x"})
    assert (ended.status_code, ended.json()) == (
        409, {"error": f"conversation {cid!r} has ended"})


def test_token() -> None:
    app = create_app(TEMPLATE, FunctionModel(reply), token="s3cret")
    with TestClient(app) as client:
        assert client.get("/api/health").status_code == 200
        refused = client.post("/api/conversations", json={})
        assert (refused.status_code, refused.json()) == (401, {
            "error": "this server needs a token: send the header Authorization: Bearer <token>"})
        ok = client.post("/api/conversations", json={},
                         headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 201
        assert client.get(f"/api/conversations/{ok.json()['id']}").status_code == 401


def test_the_page_and_health(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert client.get("/api/health").json() == {"status": "ok"}


def test_two_concurrent_messages_one_turn_runs_the_other_gets_409() -> None:
    async def main() -> list[int]:
        gate, entered = asyncio.Event(), asyncio.Event()
        async with asgi_client(create_app(TEMPLATE, held_model(gate, entered))) as c:
            cid = (await c.post("/api/conversations", json={})).json()["id"]
            url = f"/api/conversations/{cid}/messages"
            first = asyncio.create_task(c.post(url, json={"content": "one"}))
            await entered.wait()
            second = await c.post(url, json={"content": "two"})
            running = (await c.get(f"/api/conversations/{cid}")).json()["status"]
            gate.set()
            done = await first
            shown = (await c.get(f"/api/conversations/{cid}")).json()
            assert [m["content"] for m in shown["messages"]] == ["Be brief.", "one", "answered"]
            assert second.json()["error"].startswith("a turn is running in this conversation")
            assert running == "running"
            return [done.status_code, second.status_code]

    assert asyncio.run(main()) == [200, 409]


def test_streamed_model_text_arrives_as_delta_events_before_the_message(
        provider_model: FakeProvider) -> None:
    template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])
    model = provider_model(["Hello there, how can I help?"], stream=True)
    with TestClient(create_app(template, model)) as client:
        events = streamed(client, "hi")
    names = [e for e, _ in events]
    assert names[0] == "message" and names[-2:] == ["message", "done"]
    assert set(names[1:-2]) == {"delta"} and len(names) > 4
    assert "".join(d["text"] for e, d in events if e == "delta") == \
        "Hello there, how can I help?"
    assert events[-2][1]["content"] == "Hello there, how can I help?"


def test_a_conversation_waiting_for_approval_is_rebuilt_on_another_worker(
        tmp_path: Any, provider_model: FakeProvider) -> None:
    ran.clear()
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    # what reply() answers, in the order the two workers ask
    provider_model.server.add("{refund(order='A1')}", "Done: refunded A1 {finish()}",
                              "You said 'thanks'")
    first = create_app(TEMPLATE, provider_model(), store=store)
    second = create_app(TEMPLATE, provider_model(), store=store)
    with TestClient(first) as one, TestClient(second) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        asked = one.post(f"/api/conversations/{cid}/messages",
                         json={"content": "refund A1"}).json()["waiting_for"]
        # The other worker has never seen it: it rebuilds it and finds the same pending call.
        busy = two.post(f"/api/conversations/{cid}/messages", json={"content": "hi"})
        assert busy.status_code == 409 and busy.json()["error"].startswith(
            "an approval is pending")
        done = two.post(f"/api/conversations/{cid}/approvals", json={"decisions": [
            {"call_id": asked["calls"][0]["id"], "approve": True}]})
        assert done.status_code == 200, done.text
        assert ran == ["A1"]
        # Back on the first worker: its cached copy is stale, so it rebuilds; the decided call
        # is neither asked nor run again.
        again = one.post(f"/api/conversations/{cid}/messages", json={"content": "thanks"})
        assert again.status_code == 200, again.text
        assert ran == ["A1"]
        assert [m["content"] for m in again.json()["messages"]] == [
            "Be brief.", "refund A1", "", "refunded A1", "Done: refunded A1", "Finished",
            "thanks", "You said 'thanks'"]


def test_limits_count_over_the_whole_served_conversation_across_workers(tmp_path: Any) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    apps = [create_app(TEMPLATE, FunctionModel(reply), store=store, limits={"model_calls": 2})
            for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        assert one.post(f"/api/conversations/{cid}/messages",
                        json={"content": "a"}).status_code == 200
        assert two.post(f"/api/conversations/{cid}/messages",
                        json={"content": "b"}).status_code == 200
        last = one.post(f"/api/conversations/{cid}/messages", json={"content": "c"}).json()
    assert last["status"] == "ended"
    assert (last["outcome"]["status"], last["outcome"]["limit"],
            last["outcome"]["model_calls"]) == ("usage_limit", "model_calls", 2)
    assert unnumbered(last["added"]) == [{"role": "user", "content": "c"}]


def test_mounted_in_another_app_the_store_opens_on_first_use(tmp_path: Any) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    bot = create_app(TEMPLATE, FunctionModel(reply), store=f"sqlite:///{tmp_path / 'm.db'}")
    outer = Starlette(routes=[Mount("/bot", app=bot)])  # the outer app's lifespan only
    with TestClient(outer) as client:
        created = client.post("/bot/api/conversations", json={})
        assert created.status_code == 201, created.text
        cid = created.json()["id"]
        said = client.post(f"/bot/api/conversations/{cid}/messages", json={"content": "hi"})
        assert unnumbered(said.json()["added"])[-1] == (
            {"role": "assistant", "content": "You said 'hi'"})
        assert client.get("/bot/api/health").json() == {"status": "ok"}


def test_a_state_machine_served_goes_on_in_its_state_on_another_worker(tmp_path: Any) -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "support_bot.py"
    spec = importlib.util.spec_from_file_location("served_support_bot", path)
    assert spec is not None and spec.loader is not None
    bot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bot)
    store = f"sqlite:///{tmp_path / 'states.db'}"
    apps = [create_app(bot.template, bot.mock_model, store=store) for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        said = [one, two, one]
        for client, text in zip(said, bot.demo_input, strict=True):
            body = client.post(f"/api/conversations/{cid}/messages",
                               json={"content": text}).json()
        final = one.get(f"/api/conversations/{cid}").json()
    assert body["status"] == "ended"
    assert body["outcome"]["status"] == "ended"
    assert body["outcome"]["farewell"] == "Glad I could help. Goodbye!"
    systems = [m["content"] for m in final["messages"] if m["role"] == "system"]
    assert systems == ["You are the support assistant of Mugs & Co.",
                       "Find out what the customer needs and move to the right desk.",
                       "You are at the billing desk: check charges, refund mistakes.",
                       "You are at the returns desk: open returns and send labels."]
    assert final["state"] == {}  # the machine's position is convo's own, kept apart
    with sqlite3.connect(tmp_path / "states.db") as db:
        (internal,) = db.execute("SELECT internal FROM conversations").fetchone()
    db.close()
    assert json.loads(internal) == {"machine": "returns"}
    bot.mock_model.assert_complete()


@pytest.mark.parametrize("order", ["alternately", "after the subroutine"])
def test_subroutines_are_rebuilt_on_another_worker_without_running_again(
        tmp_path: Path, order: str) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    apps = [create_app(*subroutine_bot(tmp_path), store=store) for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        # the second worker first sees the conversation inside the child, or past it
        clients = [one, two, one, two, one] if order == "alternately" else [one, one, one,
                                                                                two, one]
        check_subroutines_on_two_workers(clients, tmp_path,
                                         SQLiteStore(str(tmp_path / "shared.db")))


def test_subroutines_are_rebuilt_from_the_memory_store_after_eviction(tmp_path: Path) -> None:
    app = create_app(*subroutine_bot(tmp_path), cache_size=0)  # every turn rebuilds
    with TestClient(app) as client:
        check_subroutines_on_two_workers([client] * 5, tmp_path)


def test_a_failed_model_call_inside_a_subroutine_is_retried_on_another_worker(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    apps = [create_app(*subroutine_bot(tmp_path), store=store, debug_errors=True)
            for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        failed = two.post(f"/api/conversations/{cid}/messages", json={"content": "flaky"})
        assert failed.status_code == 502
        assert failed.json()["waiting_for"] == {"type": "retry",
                                                "error": "HTTP 500 from the test model"}
        retried = one.post(f"/api/conversations/{cid}/retry")
        assert retried.status_code == 200, retried.text
        assert retried.json()["waiting_for"] == {"type": "user", "prompt": "Confirm?"}
        done = two.post(f"/api/conversations/{cid}/messages", json={"content": "yes"})
        assert unnumbered(done.json()["added"]) == (
            [{"role": "assistant", "content": "You said 'yes'"}])
    assert jotted_lines(tmp_path / "model_calls.txt") == ["2 flaky", "2 flaky", "4 yes"]


V1_SQLITE = """
CREATE TABLE convo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO convo_meta VALUES ('schema_version', '1');
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, state TEXT NOT NULL, status TEXT NOT NULL, waiting_for TEXT,
    outcome TEXT, approvals TEXT NOT NULL DEFAULT '{}', length INTEGER NOT NULL DEFAULT 0,
    lock_owner TEXT, lock_until REAL, created REAL NOT NULL);
CREATE TABLE messages (
    conversation_id TEXT NOT NULL, idx INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (conversation_id, idx)) WITHOUT ROWID;
CREATE TABLE idempotency (
    conversation_id TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL, response TEXT,
    PRIMARY KEY (conversation_id, key)) WITHOUT ROWID;
INSERT INTO conversations VALUES ('old', '{}', 'waiting', '{"type":"user","prompt":null}',
    NULL, '{}', 1, NULL, NULL, 0);
INSERT INTO messages VALUES ('old', 0, '{"role":"system","content":"Be brief."}');
"""


def test_a_version_1_sqlite_database_gains_the_subroutine_records(tmp_path: Path) -> None:

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(V1_SQLITE)
    db.close()
    with TestClient(create_app(TEMPLATE, FunctionModel(reply), store=f"sqlite:///{path}")) as c:
        said = c.post("/api/conversations/old/messages", json={"content": "hi"})
        assert said.status_code == 200, said.text
        assert [m["content"] for m in said.json()["messages"]] == [
            "Be brief.", "hi", "You said 'hi'"]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM convo_meta").fetchall() == [(str(SCHEMA_VERSION),)]
        assert db.execute("SELECT count(*) FROM subroutines").fetchone() == (0,)
    db.close()


def test_a_conversation_that_ends_inside_a_subroutine_stores_its_record_once(
        tmp_path: Path) -> None:
    path = tmp_path / "ends.db"
    app = create_app(*subroutine_bot(tmp_path), store=f"sqlite:///{path}",
                     limits={"model_calls": 1})
    with TestClient(app) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        ended = client.post(f"/api/conversations/{cid}/messages", json={"content": "jot A"})
    assert ended.json()["outcome"]["limit"] == "model_calls"
    stored = asyncio.run(load_stored(SQLiteStore(str(path)), cid))
    assert [[(m.role, m.content) for m in run.messages] for run in stored.subroutines] == [
        [("system", "Be brief."), ("user", "jot A"), ("assistant", ""), ("tool", "jotted A")]]
