"""Served conversations with a subroutine inside a subroutine, on the memory, SQLite and
Postgres stores, rebuilt from the store for every request: each child's record holds the
records of the subroutines inside it, so a rebuild past them or inside the innermost calls
no model or tool again, a branch through them is made by replay, and ``not_undone`` lists the
calls made inside them where the outermost started, each once (API.md §11, §28)."""

from __future__ import annotations

from collections.abc import Iterator

import branch_kit
import pytest
from branch_kit import CALLS, RAN, Turns, say, stamp, stamp_reply
from starlette.testclient import TestClient

from convo.templates import (
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    Template,
    ToolingTemplate,
    UserTemplate,
)


def stamping(text: str) -> list[Template]:
    return [UserTemplate(f"stamp {text}"), ToolingTemplate([stamp])]


# The inner child's messages are all kept by the outer one (keep="all"): its calls are in the
# outer child's messages too, and listed once.
INNER = SubroutineTemplate(LinearTemplate(stamping("inner {{ turn }}")), inherit="none",
                           keep="all", template_id="inner")
OUTER = SubroutineTemplate(LinearTemplate([*stamping("outer {{ turn }}"), INNER,
                                           *stamping("after {{ turn }}")]),
                           inherit="none", template_id="outer")
TEMPLATE = LoopTemplate([Turns(), UserTemplate(), ToolingTemplate([stamp]), OUTER])

# Three deep, the innermost asking the user: the conversation waits inside all three.
ASKING = LoopTemplate([UserTemplate(), SubroutineTemplate(LinearTemplate([
    *stamping("one"), SubroutineTemplate(LinearTemplate([
        *stamping("two"), SubroutineTemplate(LinearTemplate([
            *stamping("three"), UserTemplate(), ToolingTemplate([stamp])]),
            inherit="none", template_id="three")]), inherit="none", template_id="two")]),
    inherit="none", template_id="one")])


def served(template: Template, store_url: str) -> TestClient:
    return branch_kit.served(template, stamp_reply, store_url)


@pytest.fixture
def client(store_url: str) -> Iterator[TestClient]:
    with served(TEMPLATE, store_url) as c:
        yield c


def test_rebuilt_past_nested_subroutines_nothing_runs_again_and_a_branch_lists_their_calls(
        client: TestClient) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    say(client, cid, "stamp top 1")
    body = say(client, cid, "stamp top 2")  # rebuilt first: through both children's records
    turn = ["outer {t}", "inner {t}", "after {t}"]
    assert RAN == ["top 1", *(m.format(t=1) for m in turn), "top 2",
                   *(m.format(t=2) for m in turn)]
    # each child: its call and the reply after the result; the top: the same
    assert CALLS[0] == 2 * (2 + 3 * 2)
    users = [i for i, m in enumerate(body["messages"]) if m["role"] == "user"]
    assert users == [0, 5]

    made = client.post(f"/api/conversations/{cid}/branch", json={"before": 5})
    assert made.status_code == 201, made.text
    branch = made.json()
    assert [(c["name"], c["arguments"]) for c in branch["not_undone"]] == [
        ("stamp", {"mark": m}) for m in ["top 2", "outer 2", "inner 2", "after 2"]]
    assert all(c["id"] for c in branch["not_undone"])  # (each session numbers its own)
    assert branch["state"]["marks"] == ["top 1", "outer 1", "inner 1", "after 1"]
    assert (RAN[8:], CALLS[0]) == ([], 16)  # the branch: made by replay

    # Before the first message: both turns' calls, each where its subroutine started.
    everything = client.post(f"/api/conversations/{cid}/branch", json={"before": 0}).json()
    assert [c["arguments"]["mark"] for c in everything["not_undone"]] == RAN

    went_on = say(client, branch["id"], "stamp top 3")  # rebuilt, then live
    assert RAN[8:] == ["top 3", "outer 2", "inner 2", "after 2"]
    assert went_on["state"]["marks"] == [*RAN[:4], *RAN[8:]]
    assert client.get(f"/api/conversations/{cid}").json()["state"]["marks"] == RAN[:8]


def test_a_conversation_waiting_inside_the_innermost_of_three_is_rebuilt_inside_it(
        store_url: str) -> None:
    with served(ASKING, store_url) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        waiting = say(client, cid, "go")
        assert waiting["waiting_for"]["type"] == "user"
        assert (RAN, CALLS[0]) == (["one", "two", "three"], 6)
        done = say(client, cid, "stamp four")  # rebuilt: replayed into the third child
        assert (RAN, CALLS[0]) == (["one", "two", "three", "four"], 8)
        assert [m["content"] for m in done["messages"]] == [
            "go", "done: stamped four"]
        branch = client.post(f"/api/conversations/{cid}/branch", json={"before": 0}).json()
        assert [c["arguments"]["mark"] for c in branch["not_undone"]] == [
            "one", "two", "three", "four"]
        assert RAN == ["one", "two", "three", "four"]


def test_a_dry_run_answers_the_branchs_not_undone_and_makes_nothing(client: TestClient
                                                                    ) -> None:
    cid = client.post("/api/conversations", json={}).json()["id"]
    say(client, cid, "stamp top 1")
    say(client, cid, "stamp top 2")
    for before in (0, 5, 8):  # user messages, the reply before the outer subroutine
        listed = client.get("/api/conversations").json()["conversations"]
        ran, calls = list(RAN), CALLS[0]
        dry = client.post(f"/api/conversations/{cid}/branch",
                          json={"before": before, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert (RAN, CALLS[0]) == (ran, calls)  # nothing called
        assert client.get("/api/conversations").json()["conversations"] == listed
        made = client.post(f"/api/conversations/{cid}/branch", json={"before": before})
        assert made.status_code == 201, made.text
        assert dry.json() == {"before": before, "not_undone": made.json()["not_undone"]}
        assert len(dry.json()["not_undone"]) == {0: 8, 5: 4, 8: 3}[before]

    for before, there in ((2, "a tool message (the result of 'stamp')"),
                          (9, "an assistant message the template wrote itself (a scripted or "
                              "farewell message), not a model's reply")):
        bad = client.post(f"/api/conversations/{cid}/branch",
                          json={"before": before, "dry_run": True})
        made = client.post(f"/api/conversations/{cid}/branch", json={"before": before})
        assert (bad.status_code, bad.json()) == (400, made.json()) == (400, {
            "error": f"before={before} is {there}; a branch starts before a user message or "
                     "a model's reply"})
    wrong = client.post(f"/api/conversations/{cid}/branch", json={"before": 0, "dry_run": 1})
    assert (wrong.status_code, wrong.json()) == (
        400, {"error": '"dry_run" must be true or false, got 1'})
