"""`POST /agui` (API.md §24): a RunAgentInput in, AG-UI 1.0 events out, each parsed strictly
by the `ag_ui.core` models and every recorded run passed by `ag-ui-validate`; threads are
conversations owned by their caller; only new user messages are added, under their ids."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from agui_kit import post_run, run_input, types, user, validate
from serve_kit import TEMPLATE, Counted
from starlette.testclient import TestClient
from test_served_events import TEMPLATE as WEATHER
from test_served_events import Streaming

from convo import FunctionModel
from convo.serve import TrustedHeader, create_app


def app(**options: Any) -> tuple[Any, Counted]:
    counted = Counted()
    return create_app(TEMPLATE, FunctionModel(counted), **options), counted


def test_a_plain_reply_streams_the_stored_ids_and_passes_the_validator(
        store_url: str) -> None:
    served, _ = app(store=store_url)
    with TestClient(served) as client:
        events = post_run(client, run_input("thread-1", "run-1", [user("u-1", "hello")]))
        stored = client.get("/api/conversations/thread-1").json()
    assert types(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                             "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert validate(events) == []
    assert (events[0]["threadId"], events[0]["runId"]) == ("thread-1", "run-1")
    assert events[-1]["outcome"] == {"type": "success"}
    assert [m["id"] for m in stored["messages"]][1:] == ["u-1", events[1]["messageId"]]
    assert events[2]["delta"] == "You said 'hello'"
    assert stored["messages"][2]["content"] == "You said 'hello'"


def test_tool_calls_name_their_assistant_message_and_results_follow() -> None:
    with TestClient(create_app(WEATHER, Streaming())) as client:
        events = post_run(client, run_input("t", "r", [user("u", "Weather in Oslo?")]))
        stored = client.get("/api/conversations/t").json()["messages"]
    assert types(events) == [
        "RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert validate(events) == []
    asked, result, answer = stored[2], stored[3], stored[4]
    assert events[3]["delta"] == "The user wants the weather."
    assert events[6] == {"type": "TOOL_CALL_START", "toolCallId": "call_1",
                         "toolCallName": "weather", "parentMessageId": asked["id"]}
    assert events[7]["delta"] == '{"city": "Oslo"}'
    assert events[9] == {"type": "TOOL_CALL_RESULT", "messageId": result["id"],
                         "toolCallId": "call_1", "content": "Sunny in Oslo", "role": "tool"}
    assert {e["messageId"] for e in events[10:14]} == {answer["id"]}  # streamed, then stored
    assert [e["delta"] for e in events[11:13]] == ["It is ", "sunny."]


def test_only_new_user_messages_are_added_and_a_run_with_nothing_new_calls_no_model() -> None:
    served, counted = app()
    with TestClient(served) as client:
        first = post_run(client, run_input("t", "r1", [user("u1", "hello")]))
        said = {"id": first[1]["messageId"], "role": "assistant", "content": "You said 'hello'"}
        again = post_run(client, run_input("t", "r2", [user("u1", "hello"), said]))
        more = post_run(client, run_input("t", "r3", [user("u1", "hello"), said,
                                                      user("u2", "bye")]))
        stored = client.get("/api/conversations/t").json()["messages"]
    assert types(again) == ["RUN_STARTED", "RUN_FINISHED"] and validate(again) == []
    assert counted.calls == 2
    assert types(more)[0] == "RUN_STARTED" and "MESSAGES_SNAPSHOT" not in types(more)
    assert [m["id"] for m in stored[1:4]] == ["u1", said["id"], "u2"]
    assert [m["content"] for m in stored[1:]] == ["hello", "You said 'hello'", "bye",
                                                   "You said 'bye'"]


def test_several_new_messages_each_answer_the_next_ask_in_order() -> None:
    served, counted = app()
    with TestClient(served) as client:
        events = post_run(client, run_input("t", "r", [user("a", "one"), user("b", "two")]))
        stored = client.get("/api/conversations/t").json()["messages"]
    assert [m["content"] for m in stored[1:]] == ["one", "You said 'one'", "two",
                                                   "You said 'two'"]
    assert types(events).count("TEXT_MESSAGE_START") == 2 and validate(events) == []
    assert counted.calls == 2


def test_messages_the_client_lacks_come_as_a_snapshot_right_after_run_started() -> None:
    served, _ = app()
    with TestClient(served) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        native = client.post(f"/api/conversations/{cid}/messages",
                             json={"content": "hi"}).json()["messages"]
        events = post_run(client, run_input(cid, "r", [user("u9", "and you?")]))
    assert types(events)[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
    assert events[1]["messages"] == [
        {"id": native[1]["id"], "role": "user", "content": "hi"},
        {"id": native[2]["id"], "role": "assistant", "content": "You said 'hi'"},
        {"id": "u9", "role": "user", "content": "and you?"}]
    assert validate(events) == []


def test_state_starts_a_new_thread_and_the_servers_state_wins_on_a_known_one() -> None:
    served, _ = app()
    with TestClient(served) as client:
        first = post_run(client, run_input("t", "r1", [user("u1", "hi")], state={"plan": "a"}))
        second = post_run(client, run_input("t", "r2", [user("u1", "hi")],
                                            state={"plan": "b"}))
        stored = client.get("/api/conversations/t").json()
    assert "STATE_SNAPSHOT" not in types(first)
    assert stored["state"] == {"plan": "a"}
    assert second[1] == {"type": "STATE_SNAPSHOT", "snapshot": {"plan": "a"}}
    assert validate(second) == []


@pytest.mark.parametrize(("body", "named"), [
    ({"runId": "r", "messages": []}, '"threadId" must be a non-empty string, got null'),
    ({"threadId": "t", "messages": []}, '"runId" must be a non-empty string, got null'),
    ({"threadId": "t", "runId": "r"}, '"messages" must be a list, got null'),
    ({"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}]},
     '"messages[0].id" must be a non-empty string, got null'),
    ({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "boss"}]},
     '"messages[0].role" must be one of developer, system, assistant, user, tool, '
     "activity, reasoning, got 'boss'"),
    ({"threadId": "t", "runId": "r", "messages": [], "state": [1]},
     '"state" must be a JSON object, got list'),
    ({"threadId": "t", "runId": "r", "messages": [], "tools": [{"description": "d"}]},
     '"tools[0].name" must be a non-empty string, got null'),
    ({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "c",
                                                                  "status": "done"}]},
     '"resume[0].status" must be "resolved" or "cancelled", got \'done\''),
])
def test_a_body_that_is_no_run_agent_input_is_400_naming_the_field(
        body: dict[str, Any], named: str) -> None:
    served, counted = app()
    with TestClient(served) as client:
        answer = client.post("/agui", json=body)
        assert answer.status_code == 400
        assert answer.json()["error"].startswith(named)
        assert client.get("/api/conversations").json()["conversations"] == []
    assert counted.calls == 0


def test_a_thread_is_its_callers_another_users_is_404_even_for_an_operator() -> None:
    served, counted = app(auth=TrustedHeader("X-User", operators="olga"))
    with TestClient(served) as client:
        post_run(client, run_input("t", "r", [user("u1", "mine")]), **{"X-User": "ann"})
        for who in ("bob", "olga"):
            answer = client.post("/agui", json=run_input("t", "r2", [user("u2", "x")]),
                                 headers={"X-User": who})
            assert (answer.status_code, answer.json()) == (404, {"error": "no thread 't'"})
        assert client.get("/api/conversations/t", headers={"X-User": "ann"}).json()[
            "messages"][-1]["content"] == "You said 'mine'"
        assert client.post("/agui", json=run_input("t", "r3", [])).status_code == 401
    assert counted.calls == 1


def test_a_thread_started_over_agui_continues_over_the_json_api(store_url: str) -> None:
    served, _ = app(store=store_url)
    with TestClient(served) as client:
        post_run(client, run_input("t", "r", [user("u1", "hello")]))
        answer = client.post("/api/conversations/t/messages", json={"content": "more"})
        assert answer.status_code == 200
        shown = answer.json()["messages"]
    assert [m["content"] for m in shown[1:]] == [
        "hello", "You said 'hello'", "more", "You said 'more'"]
    assert shown[1]["id"] == "u1"
    if store_url == "memory":
        return
    again, _ = app(store=store_url)  # another worker, or a restart
    with TestClient(again) as client:
        said = {"id": shown[4]["id"], "role": "assistant", "content": "You said 'more'"}
        events = post_run(client, run_input("t", "r2", [
            user("u1", "hello"), {"id": shown[2]["id"], "role": "assistant",
                                  "content": "You said 'hello'"},
            {"id": shown[3]["id"], "role": "user", "content": "more"}, said,
            user("u3", "last")]))
        stored = client.get("/api/conversations/t").json()["messages"]
    assert types(events)[1] == "TEXT_MESSAGE_START" and validate(events) == []
    assert [m["id"] for m in stored[:5]] == [m["id"] for m in shown]
    assert [m["content"] for m in stored[5:]] == ["last", "You said 'last'"]


def test_an_idempotency_key_replays_the_first_runs_events(store_url: str) -> None:
    served, counted = app(store=store_url)
    body = run_input("t", "r1", [user("u1", "hello")])
    with TestClient(served) as client:
        first = post_run(client, body, **{"Idempotency-Key": "k1"})
        repeat = post_run(client, body, **{"Idempotency-Key": "k1"})
        other = client.post("/agui", json=run_input("t", "r2", [user("u2", "bye")]),
                            headers={"Idempotency-Key": "k1"})
        refused = client.post("/agui", json=run_input("t", "r3", [], resume=[{
            "interruptId": "c", "status": "cancelled"}]), headers={"Idempotency-Key": "k2"})
        after = post_run(client, run_input("t", "r4", [user("u3", "again")]),
                         **{"Idempotency-Key": "k2"})
        stored = client.get("/api/conversations/t").json()["messages"]
    assert repeat == first and types(first)[-1] == "RUN_FINISHED"
    assert (other.status_code, other.json()) == (
        409, {"error": "this Idempotency-Key was used with other content"})
    assert refused.status_code == 400  # refused before it ran: the key stays unused
    assert types(after)[-4:-1] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    assert counted.calls == 2 and [m["content"] for m in stored[1:]] == [
        "hello", "You said 'hello'", "again", "You said 'again'"]


def test_two_first_runs_of_one_new_thread_one_creates_the_other_is_busy(
        store_url: str) -> None:
    # Both runs read the thread as unknown before either creates it (the load is held until
    # the second has read too): exactly one creates it and runs; the other is 409, busy.
    from convo.serve._stores import open_store

    store = open_store(store_url)
    load = store.load
    unknown = [0]
    both = asyncio.Event()

    async def racing(conversation_id: str, *, messages: bool = True) -> Any:
        found = await load(conversation_id, messages=messages)
        if found is None and conversation_id == "t" and unknown[0] < 2:
            unknown[0] += 1
            if unknown[0] == 2:
                both.set()
            await both.wait()
        return found

    store.load = racing  # type: ignore[method-assign]
    counted = Counted()

    async def main() -> list[httpx.Response]:
        app = create_app(TEMPLATE, FunctionModel(counted), store=store)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            return list(await asyncio.gather(*(client.post("/agui", json=run_input(
                "t", f"r{n}", [user(f"u{n}", f"hello {n}")])) for n in (1, 2))))

    answers = asyncio.run(main())
    statuses = sorted(a.status_code for a in answers)
    busy = next(a for a in answers if a.status_code == 409)
    assert statuses == [200, 409]
    assert busy.json() == {"error": "a turn is running in this conversation: wait for it to "
                                    "end, then send again"}
    assert counted.calls == 1
