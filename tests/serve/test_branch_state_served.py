"""A served branch on the memory, SQLite and Postgres stores has the state as it was when
``before``'s message was made, whoever wrote it later (a template, a hook, an
``ExecuteToolTemplate(store_as=)`` run, a tool inside a subroutine), the stored conversation
rebuilt between the turns; and ``not_undone`` lists the calls made inside subroutines at or
after ``before`` (a ``SubroutineTemplate``'s child's, a ``SubroutineTool``'s child's) in the
order they ran, the original unchanged (API.md §28)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from branch_kit import CALLS, RAN, Turns, add_to_cart, charge, say, served
from starlette.testclient import TestClient

from convo import Message, Session
from convo.templates import (
    ExecuteToolTemplate,
    LoopTemplate,
    SubroutineTemplate,
    SubroutineTool,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool


def replied(session: Session) -> None:
    session.state["replies"] = session.state.get("replies", 0) + 1


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(f"weather {city}")
    return f"{city} #{len([r for r in RAN if r.startswith('weather')])}"


PAY = SubroutineTool(ToolingTemplate([charge]), name="pay", description="Pay for it.")


def reply(messages: Sequence[Message], tools: Any) -> str:
    CALLS[0] += 1
    last = messages[-1]
    text = str(last.content)
    if last.role == "user":
        if text.startswith(("add ", "buy ")):  # the cart's subroutine adds it
            return f"{{add_to_cart(item='{text[4:]}')}}"
        if text.startswith("charge "):  # inside pay's child
            return f"{{charge(amount={text[7:]})}}"
    if last.role == "assistant":  # the turn after the cart's subroutine: pay, if buying
        said = next(str(m.content) for m in reversed(messages) if m.role == "user")
        if said.startswith("buy "):
            return "{pay(input='charge 3')}"
    return f"re: {text}"


TEMPLATE = LoopTemplate([
    Turns(again=True), UserTemplate(), ExecuteToolTemplate(weather, arguments={"city": "Oslo"},
                                                 store_as="weather"),
    SubroutineTemplate(ToolingTemplate([add_to_cart]), inherit="all"),
    ToolingTemplate([PAY], after=replied)])


@pytest.fixture
def client(store_url: str) -> Iterator[TestClient]:
    with served(TEMPLATE, reply, store_url) as c:
        yield c


def original(client: TestClient, *said: str) -> tuple[str, dict[str, Any]]:
    created = client.post("/api/conversations", json={"state": {"name": "Ann"}})
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    for text in said:
        say(client, cid, text)
    return cid, client.get(f"/api/conversations/{cid}").json()


def branched(client: TestClient, cid: str, before: int) -> dict[str, Any]:
    response = client.post(f"/api/conversations/{cid}/branch", json={"before": before})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_the_state_of_a_served_branch_is_the_state_at_before_whoever_wrote_it(
        client: TestClient) -> None:
    cid, body = original(client, "add tea", "add jam")
    assert body["state"] == {"name": "Ann", "turn": 3, "again": True, "weather": "Oslo #2",
                             "cart": ["tea", "jam"], "replies": 2}
    users = [i for i, m in enumerate(body["messages"]) if m["role"] == "user"]
    ran, calls = list(RAN), CALLS[0]
    edit = branched(client, cid, users[1])  # before "add jam"
    assert (RAN, CALLS[0]) == (ran, calls)  # nothing ran, no model was asked
    assert edit["state"] == {"name": "Ann", "turn": 2, "again": True, "weather": "Oslo #1",
                             "cart": ["tea"], "replies": 1}
    first = branched(client, cid, users[0])
    assert first["state"] == {"name": "Ann", "turn": 1}
    # Regenerating the last reply: before it, the hook after it had not run.
    again = branched(client, cid, len(body["messages"]) - 1)
    assert CALLS[0] == calls + 1 and RAN == ran  # that one model call, no tool
    assert again["state"] == {"name": "Ann", "turn": 3, "again": True, "weather": "Oslo #2",
                              "cart": ["tea", "jam"], "replies": 2}  # the hook ran after it
    assert client.get(f"/api/conversations/{cid}").json() == body  # the original: unchanged


def test_not_undone_lists_the_calls_made_inside_subroutines_in_the_order_they_ran(
        client: TestClient) -> None:
    cid, body = original(client, "add tea", "buy ham")
    assert [m["role"] for m in body["messages"]] == [
        "user", "assistant", "assistant",  # the cart's child's reply kept, then the turn's
        "user", "assistant", "assistant", "tool", "assistant"]  # pay called, its result
    assert RAN == ["weather Oslo", "add tea", "weather Oslo", "add ham", "charge 3"]
    made = branched(client, cid, 3)  # before "buy ham"
    assert [(c["name"], c["arguments"]) for c in made["not_undone"]] == [
        ("add_to_cart", {"item": "ham"}),  # in the cart's child
        ("charge", {"amount": 3}),  # in pay's child, which ran before pay's result
        ("pay", {"input": "charge 3"})]
    assert all(c["id"] for c in made["not_undone"])
    made = branched(client, cid, 0)
    assert [c["name"] for c in made["not_undone"]] == ["add_to_cart", "add_to_cart", "charge",
                                                        "pay"]
    # Regenerating the last reply: every call was made before it.
    assert branched(client, cid, 7)["not_undone"] == []
    assert branched(client, cid, 2)["not_undone"] == [
        {k: c[k] for k in ("id", "name", "arguments")} for c in made["not_undone"][1:]]


def test_the_limits_of_a_served_branch_cover_only_its_own_messages(store_url: str) -> None:
    # Three model calls a turn: the cart's child, its reply after the tool, the turn's reply.
    with served(TEMPLATE, reply, store_url, limits={"model_calls": 7}) as client:
        cid, _ = original(client, "add tea", "add jam")
        made = branched(client, cid, 3)  # before "add jam": 3 calls replayed
        went_on = say(client, made["id"], "add ham")  # 3 + 3 of the 7
        assert (went_on["status"], went_on["outcome"]) == ("waiting", None)
        assert went_on["state"]["cart"] == ["tea", "ham"]
        over = say(client, cid, "add ham")  # 6 + 3: the original's own count is over
        assert over["status"] == "ended", over
        assert over["outcome"]["status"] == "usage_limit"
        assert over["outcome"]["limit"] == "model_calls"
