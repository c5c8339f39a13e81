"""AG-UI and the AI SDK face while a turn runs (API.md §26): a run answers 409 unless
``forwardedProps.while_busy`` (AG-UI) or the body's ``while_busy`` (the AI SDK) asks to queue,
steer or interrupt; queued messages go into the engine's one queue (the native API's: ``GET``
shows them, they are answered in order, under the client's ids), and Idempotency-Key holds.

Over HTTP in one event loop (the bot's model and tool held at asyncio gates: ``Bot`` of
while_busy_kit.py), each stream parsed by the real packages (``ag_ui.core``, ``ag-ui-validate``);
then the real JavaScript clients (`@ag-ui/client`'s HttpAgent, the `ai` package's transport
and reader) against a server on a free port, the model held at a thread's gate."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest
from agui_kit import parsed, run_input, types, user, validate
from aisdk_kit import chat, serving
from node_clients import run_node
from weather_tools import chat_loop
from while_busy_kit import Bot, Client, bot, said, served, settled

from convo import FinishTool, FunctionModel, Message
from convo.serve import create_app

__all__ = ["bot"]  # the fixture


async def _serving(bot: Bot, store: str, test: Callable[[Client], Awaitable[None]]) -> None:
    async with served(create_app(bot.template, FunctionModel(bot.reply), store=store)) as c:
        await test(c)


def run(bot: Bot, store: str, test: Callable[[Client], Awaitable[None]]) -> None:
    asyncio.run(_serving(bot, store, test))


def _data(text: str) -> list[Any]:
    lines = [line for line in text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines), lines
    return [line[6:] for line in lines]


async def agui(c: Client, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
    """A run's status and its events (each parsed strictly by ``ag_ui.core``), or its JSON."""
    answer = await c.post("/agui", json=body, headers={"Accept": "text/event-stream",
                                                       **headers})
    if not answer.headers["content-type"].startswith("text/event-stream"):
        return answer.status_code, answer.json()
    events = [json.loads(d) for d in _data(answer.text)]
    for event in events:
        parsed(event)
    return answer.status_code, events


async def ai_sdk(c: Client, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
    """A request's status and its chunks (``[DONE]`` checked and left off), or its JSON."""
    answer = await c.post("/ai-sdk/chat", json=body, headers=headers)
    if not answer.headers["content-type"].startswith("text/event-stream"):
        return answer.status_code, answer.json()
    assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
    data = _data(answer.text)
    assert data[-1] == "[DONE]"
    return answer.status_code, [json.loads(d) for d in data[:-1]]


def ui_user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def chat_body(chat_id: str, *messages: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"id": chat_id, "messages": list(messages), "trigger": "submit-message", **more}


def queued_of(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What a run's ``convo.queued`` event (or ``data-convo-queued`` part) says it queued."""
    found = [e for e in events if e.get("name") == "convo.queued"
             or e["type"] == "data-convo-queued"]
    assert len(found) == 1, events
    value = found[0].get("value") or found[0]["data"]
    return [(m["id"], m["content"]) for m in value["queued"]]


async def shown(c: Client, cid: str) -> dict[str, Any]:
    got: dict[str, Any] = (await c.get(f"/api/conversations/{cid}")).json()
    return got


# -- AG-UI -------------------------------------------------------------------------------


def test_agui_queues_a_run_that_asks_to_and_the_queue_answers_it(bot: Bot,
                                                                 store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(agui(c, run_input("t1", "r1", [user("u1", "slow one")])))
        await bot.in_model.wait()
        history = [user("u1", "slow one"), user("u2", "two")]
        refused = await agui(c, run_input("t1", "r2", history))
        assert refused == (409, {"error": "a turn is running in this conversation: wait for "
                                          "it to end, then send again"})
        status, events = await agui(c, run_input("t1", "r2", history,
                                                 forwardedProps={"while_busy": "queue"}))
        assert status == 202
        assert types(events) == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
        assert queued_of(events) == [("u2", "two")]
        assert validate(events) == []
        again = await agui(c, run_input("t1", "r3", [*history, user("u3", "three")],
                                        forwardedProps={"while_busy": "queue"}))
        assert queued_of(again[1]) == [("u2", "two"), ("u3", "three")]  # u2 not twice
        assert [(q["id"], q["content"]) for q in (await shown(c, "t1"))["queued"]] == [
            ("u2", "two"), ("u3", "three")]
        bot.model_gate.set()
        assert (await first)[0] == 200
        done = await settled(c, "t1")
        assert said(done) == [("user", "slow one"), ("assistant", "re: slow one"),
                              ("user", "two"), ("assistant", "re: two"),
                              ("user", "three"), ("assistant", "re: three")]
        assert [m["id"] for m in done["messages"] if m["role"] == "user"] == ["u1", "u2", "u3"]
        later = await agui(c, run_input("t1", "r4", [*history, user("u3", "three")]))
        assert types(later[1]) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]

    run(bot, store_url, test)


def test_agui_a_run_that_resends_a_message_still_queued_adds_it_not_again(
        bot: Bot, store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(agui(c, run_input("t1", "r1", [
            user("u1", "slowrefund 42")])))
        await bot.in_model.wait()
        history = [user("u1", "slowrefund 42"), user("u2", "two")]
        assert (await agui(c, run_input("t1", "r2", history, forwardedProps={
            "while_busy": "queue"})))[0] == 202
        bot.model_gate.set()
        status, events = await first
        call = events[-1]["outcome"]["interrupts"][0]["id"]  # the queue waits behind it
        assert [q["id"] for q in (await shown(c, "t1"))["queued"]] == ["u2"]
        status, events = await agui(c, run_input("t1", "r3", history, resume=[{
            "interruptId": call, "status": "resolved", "payload": {"approve": True}}]))
        assert status == 200 and validate(events, resumed=True) == []
        assert said(await settled(c, "t1")) == [
            ("user", "slowrefund 42"), ("assistant", ""), ("tool", "refunded 42"),
            ("assistant", "after refunded 42"), ("user", "two"), ("assistant", "re: two")]

    run(bot, store_url, test)


def test_agui_an_unknown_while_busy_is_400_naming_the_field(bot: Bot) -> None:
    async def test(c: Client) -> None:
        answer = await agui(c, run_input("t1", "r1", [user("u1", "hi")],
                                         forwardedProps={"while_busy": "later"}))
        assert answer == (400, {"error": '"forwardedProps.while_busy" must be one of '
                                         '"reject", "queue", "interrupt", "steer", got '
                                         '"later"'})

    run(bot, "memory", test)


def test_agui_steer_is_seen_by_the_running_turns_next_model_call(bot: Bot,
                                                                 store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(agui(c, run_input("t1", "r1", [user("u1", "look A")])))
        await bot.in_tool.wait()
        status, events = await agui(c, run_input("t1", "r2", [
            user("u1", "look A"), user("u2", "the order is A7")], forwardedProps={
            "while_busy": "steer"}))
        assert (status, queued_of(events)) == (202, [("u2", "the order is A7")])
        bot.tool_gate.set()
        status, events = await first
        assert status == 200 and validate(events) == []
        assert bot.seen[-1][-3:] == [("assistant", ""), ("tool", "found A"),
                                     ("user", "the order is A7")]
        assert said(await settled(c, "t1"))[-2:] == [
            ("user", "the order is A7"), ("assistant", "re: the order is A7")]
        assert len(bot.seen) == 2

    run(bot, store_url, test)


def test_agui_interrupt_stops_the_turn_and_streams_the_new_runs_reply(
        bot: Bot, store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(agui(c, run_input("t1", "r1", [user("u1", "slow one")])))
        await bot.in_model.wait()
        status, events = await agui(c, run_input("t1", "r2", [
            user("u1", "slow one"), user("u2", "instead")], forwardedProps={
            "while_busy": "interrupt"}))
        assert status == 200 and validate(events) == []
        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
            "re: instead"]
        old_status, old = await first
        assert old_status == 200 and types(old)[-1] == "RUN_FINISHED"
        assert said(await settled(c, "t1")) == [
            ("user", "slow one"), ("user", "instead"), ("assistant", "re: instead")]

    run(bot, store_url, test)


def test_agui_an_idempotency_key_holds_for_a_queued_run(bot: Bot, store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(agui(c, run_input("t1", "r1", [user("u1", "slow one")])))
        await bot.in_model.wait()
        body = run_input("t1", "r2", [user("u1", "slow one"), user("u2", "two")],
                         forwardedProps={"while_busy": "queue"})
        once = await c.post("/agui", json=body, headers={"Idempotency-Key": "k1"})
        twice = await c.post("/agui", json=body, headers={"Idempotency-Key": "k1"})
        assert (once.status_code, twice.status_code) == (202, 202)
        assert _data(once.text)[1:-1] == _data(twice.text)[1:-1]  # (the run's own stamps)
        assert len((await shown(c, "t1"))["queued"]) == 1
        bot.model_gate.set()
        await first
        assert [t for _, t in said(await settled(c, "t1"))].count("two") == 1

    run(bot, store_url, test)


# -- the AI SDK --------------------------------------------------------------------------


def test_ai_sdk_queues_a_request_that_asks_to_and_the_queue_answers_it(
        bot: Bot, store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(ai_sdk(c, chat_body("c1", ui_user("u1", "slow one"))))
        await bot.in_model.wait()
        sent = chat_body("c1", ui_user("u1", "slow one"), ui_user("u2", "two"))
        refused = await ai_sdk(c, sent)
        assert refused == (409, {"error": "a turn is running in this conversation: wait for "
                                          "it to end, then send again"})
        status, chunks = await ai_sdk(c, {**sent, "while_busy": "queue"})
        assert status == 202
        assert [k["type"] for k in chunks] == ["start", "data-convo-queued", "finish"]
        assert queued_of(chunks) == [("u2", "two")]
        assert [q["id"] for q in (await shown(c, "c1"))["queued"]] == ["u2"]
        bot.model_gate.set()
        assert (await first)[0] == 200
        done = await settled(c, "c1")
        assert said(done)[2:] == [("user", "two"), ("assistant", "re: two")]
        assert [m["id"] for m in done["messages"] if m["role"] == "user"] == ["u1", "u2"]

    run(bot, store_url, test)


def test_ai_sdk_an_unknown_while_busy_is_400_naming_the_field(bot: Bot) -> None:
    async def test(c: Client) -> None:
        answer = await ai_sdk(c, chat_body("c1", ui_user("u1", "hi"), while_busy=7))
        assert answer == (400, {"error": '"while_busy" must be one of "reject", "queue", '
                                         '"interrupt", "steer", got 7'})

    run(bot, "memory", test)


def test_ai_sdk_interrupt_and_steer(bot: Bot, store_url: str) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(ai_sdk(c, chat_body("c1", ui_user("u1", "look A"))))
        await bot.in_tool.wait()
        status, chunks = await ai_sdk(c, chat_body(
            "c1", ui_user("u1", "look A"), ui_user("u2", "and A7"), while_busy="steer"))
        assert (status, queued_of(chunks)) == (202, [("u2", "and A7")])
        bot.tool_gate.set()
        await first
        assert bot.seen[-1][-1] == ("user", "and A7")
        await settled(c, "c1")
        second = asyncio.create_task(ai_sdk(c, chat_body("c2", ui_user("u3", "slow"))))
        await bot.in_model.wait()
        status, chunks = await ai_sdk(c, chat_body(
            "c2", ui_user("u3", "slow"), ui_user("u4", "now"), while_busy="interrupt"))
        assert status == 200
        assert [k["delta"] for k in chunks if k["type"] == "text-delta"] == ["re: now"]
        await second
        assert said(await settled(c, "c2")) == [
            ("user", "slow"), ("user", "now"), ("assistant", "re: now")]

    run(bot, store_url, test)


def test_ai_sdk_an_idempotency_key_holds_for_a_queued_request(bot: Bot) -> None:
    async def test(c: Client) -> None:
        first = asyncio.create_task(ai_sdk(c, chat_body("c1", ui_user("u1", "slow one"))))
        await bot.in_model.wait()
        sent = chat_body("c1", ui_user("u1", "slow one"), ui_user("u2", "two"),
                         while_busy="queue")
        once = await ai_sdk(c, sent, **{"Idempotency-Key": "k1"})
        twice = await ai_sdk(c, sent, **{"Idempotency-Key": "k1"})
        assert once == twice and once[0] == 202
        bot.model_gate.set()
        await first
        assert [t for _, t in said(await settled(c, "c1"))].count("two") == 1

    run(bot, "memory", test)


def test_ai_sdk_regenerate_leaves_the_queue_with_the_chats_id_which_the_branch_takes(
        bot: Bot, store_url: str) -> None:
    """The queue belongs to the id the user is on: a regenerate gives the chat's id to the
    branch (``Renaming.swap``), so its queued messages are answered there; the original, under
    its new id, has none."""
    async def test(c: Client) -> None:
        history = [ui_user("u1", "slowrefund 42"), ui_user("u2", "two")]
        first = asyncio.create_task(ai_sdk(c, chat_body("c1", history[0])))
        await bot.in_model.wait()
        assert (await ai_sdk(c, chat_body("c1", *history, while_busy="queue")))[0] == 202
        bot.model_gate.set()
        status, chunks = await first
        assert [k["type"] for k in chunks][-3:] == ["tool-approval-request", "finish-step",
                                                    "finish"]
        status, chunks = await ai_sdk(c, chat_body("c1", *history,
                                                   trigger="regenerate-message"))
        assert status == 200, chunks
        branch = await shown(c, "c1")
        original = await shown(c, branch["parent"]["id"])
        assert [q["id"] for q in branch["queued"]] == ["u2"]
        assert original["queued"] == []
        call = branch["waiting_for"]["calls"][0]["id"]
        decided = await c.post("/api/conversations/c1/approvals",
                               json={"decisions": [{"call_id": call, "approve": True}]})
        assert decided.status_code == 200
        assert said(await settled(c, "c1"))[-2:] == [("user", "two"), ("assistant", "re: two")]
        original = await shown(c, original["id"])
        assert "two" not in [t for _, t in said(original)]
        assert original["waiting_for"]["type"] == "approval"

    run(bot, store_url, test)


# -- the real JavaScript clients ---------------------------------------------------------


class Held:
    """A bot whose model waits at a thread's gate for a message starting "slow"."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.template = chat_loop(FinishTool())

    async def reply(self, messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        if last.text.startswith("slow"):
            self.entered.set()
            await asyncio.to_thread(self.gate.wait, 30)
        return f"re: {last.text}"


Held_ = tuple[Held, str, httpx.Client, str]


@pytest.fixture
def held(store_url: str) -> Iterator[Held_]:
    """The held bot served on a free port of ``store_url``: the bot, its URL, a client and a
    conversation whose first turn runs, held at the gate until the test opens it."""
    bot = Held()
    app = create_app(bot.template, FunctionModel(bot.reply), store=store_url)
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        first = threading.Thread(target=lambda: httpx.post(
            f"{url}/api/conversations/{cid}/messages", json={"content": "slow one"},
            timeout=30))
        first.start()
        assert bot.entered.wait(30)
        try:
            yield bot, url, client, cid
        finally:
            bot.gate.set()
            first.join(30)


AGUI_QUEUED = """
import { HttpAgent } from "@ag-ui/client";
const [url, threadId] = process.argv.slice(2);
const agent = new HttpAgent({ url: url + "/agui", threadId });
const seen = [];
agent.addMessage({ id: "u2", role: "user", content: "two" });
await agent.runAgent({ runId: "run-q", forwardedProps: { while_busy: "queue" } },
  { onEvent: ({ event }) => { seen.push(event); } });
console.log(JSON.stringify({ events: seen }));
"""


def _settled(client: httpx.Client, cid: str) -> dict[str, Any]:
    for _ in range(2000):
        body: dict[str, Any] = client.get(f"/api/conversations/{cid}").json()
        if not body["queued"] and body["status"] != "running":
            return body
        threading.Event().wait(0.01)  # polling for the queue's turns, not timing the test
    raise AssertionError(f"the queue was not taken: {body}")


def test_agui_http_agent_queues_a_run_while_a_turn_runs(held: Held_) -> None:
    bot, url, client, cid = held
    result = run_node(AGUI_QUEUED, url, cid)
    events = result["events"]
    assert [e["type"] for e in events] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert events[1]["name"] == "convo.queued"
    assert [(m["id"], m["content"]) for m in events[1]["value"]["queued"]] == [("u2", "two")]
    bot.gate.set()
    assert [(m["role"], m["content"]) for m in _settled(client, cid)["messages"][1:]] == [
        ("user", "slow one"), ("assistant", "re: slow one"), ("user", "two"),
        ("assistant", "re: two")]


def test_ai_sdk_transport_and_reader_take_a_queued_request(held: Held_) -> None:
    bot, url, client, cid = held
    result = chat(url, cid, {"say": ["u2", "two"]}, body={"while_busy": "queue"})
    [answered] = result["runs"]
    assert answered["errors"] == [] and "refused" not in answered
    assert [c["type"] for c in answered["chunks"]] == ["start", "data-convo-queued", "finish"]
    assert [p["type"] for p in answered["message"]["parts"]] == ["data-convo-queued"]
    assert [(m["id"], m["content"]) for m in answered["message"]["parts"][0]["data"][
        "queued"]] == [("u2", "two")]
    bot.gate.set()
    done = _settled(client, cid)["messages"]
    assert [(m["role"], m["content"], m.get("id")) for m in done[-2:]] == [
        ("user", "two", "u2"), ("assistant", "re: two", done[-1]["id"])]
