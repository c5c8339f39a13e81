"""A served SubroutineTool (API.md §22): approval of the call, a person asked inside the
child, and rebuilds on another app over one store that neither call the model nor run a tool
again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from message_json import unnumbered
from starlette.testclient import TestClient
from weather_tools import chat_loop

from convo import Message, ModelError
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import (
    AssistantTemplate,
    ExecuteToolTemplate,
    LinearTemplate,
    LoopTemplate,
    SubroutineTool,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool

jotted: list[str] = []
model_calls: list[str] = []


@tool
def jot(text: str) -> str:
    """Write a note down."""
    jotted.append(text)
    return f"jotted {text}"


def answer(messages: Sequence[Message], tools: Any) -> str:
    names = [t["function"]["name"] for t in tools]
    last = messages[-1]
    model_calls.append(f"{'/'.join(names) or '-'}: {last.content}")
    if "delegate" in names:  # the parent's turn
        if last.role == "tool":
            return f"Done: {last.content}"
        if last.content.startswith("jot "):
            return f"{{delegate(input='{last.content[4:]}')}}"
        return f"You said {last.content!r}"
    if names == ["jot"]:  # the child's agent turn
        return f"Noted: {last.content}" if last.role == "tool" else \
            f"{{jot(text='{last.content}')}}"
    return f"Confirmed: {last.content}"  # the child's last reply


def bot() -> tuple[LinearTemplate, FunctionModel]:
    child = LinearTemplate([ToolingTemplate([jot]), UserTemplate(description="Confirm?"),
                            AssistantTemplate()])
    sub = SubroutineTool(child, name="delegate", description="Have a note taken.",
                         needs_approval=True)
    template = chat_loop(sub)
    return template, FunctionModel(answer)


def test_a_served_subroutine_tool_is_rebuilt_on_another_app_without_running_again(
        tmp_path: Path) -> None:
    jotted.clear()
    model_calls.clear()
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with TestClient(create_app(*bot(), store=store)) as one, \
            TestClient(create_app(*bot(), store=store)) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}"
        asked = two.post(f"{url}/messages", json={"content": "jot A"})
        assert asked.status_code == 200, asked.text
        [call] = asked.json()["waiting_for"]["calls"]
        assert (call["name"], call["arguments"]) == ("delegate", {"input": "A"})
        # approved on the other app: it rebuilds, then the child runs and asks a person
        inside = one.post(f"{url}/approvals",
                          json={"decisions": [{"call_id": call["id"], "approve": True}]})
        assert inside.status_code == 200, inside.text
        assert inside.json()["waiting_for"] == {"type": "user", "prompt": "Confirm?"}
        assert jotted == ["A"]
        assert model_calls == ["delegate: jot A", "jot: A", "jot: jotted A"]
        # the answer goes to the other app: it rebuilds inside the child (its saved model
        # calls and its tool are not made again) and the child ends, then the parent's turn
        done = two.post(f"{url}/messages", json={"content": "yes"})
        assert done.status_code == 200, done.text
        assert unnumbered(done.json()["added"]) == [
            {"role": "tool", "content": "Confirmed: yes", "tool_call_id": call["id"],
             "name": "delegate"},
            {"role": "assistant", "content": "Done: Confirmed: yes"}]
        assert jotted == ["A"]
        assert model_calls == ["delegate: jot A", "jot: A", "jot: jotted A", "-: yes",
                               "delegate: Confirmed: yes"]
        # past the child, a rebuild on the first app replays its record
        later = one.post(f"{url}/messages", json={"content": "hi"})
        assert later.status_code == 200, later.text
        assert unnumbered(later.json()["added"])[-1] == (
            {"role": "assistant", "content": "You said 'hi'"})
        assert jotted == ["A"]
        assert model_calls[5:] == ["delegate: hi"]
        shown = one.get(url).json()
        assert [(m["role"], m["content"]) for m in shown["messages"]] == [
            ("system", "Be brief."), ("user", "jot A"), ("assistant", ""),
            ("tool", "Confirmed: yes"), ("assistant", "Done: Confirmed: yes"), ("user", "hi"),
            ("assistant", "You said 'hi'")]


def count_turn(session: Any) -> None:
    session.state["turns"] = session.state.get("turns", 0) + 1


def test_a_served_tool_run_from_code_and_hooks_are_not_run_again_by_a_rebuild(
        tmp_path: Path) -> None:
    jotted.clear()
    model_calls.clear()

    def served() -> LinearTemplate:
        return LinearTemplate([
            ExecuteToolTemplate(jot, arguments={"text": "opened"}, store_as="opening"),
            ExecuteToolTemplate(jot, arguments={"text": "shown"}),
            LoopTemplate([LinearTemplate([UserTemplate(), AssistantTemplate()],
                                         after=count_turn)])])

    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with TestClient(create_app(served(), FunctionModel(answer), store=store)) as one, \
            TestClient(create_app(served(), FunctionModel(answer), store=store)) as two:
        created = one.post("/api/conversations", json={})
        cid = created.json()["id"]
        assert [(m["role"], m["content"]) for m in created.json()["messages"]] == [
            ("assistant", ""), ("tool", "jotted shown")]
        for client, text in [(two, "a"), (one, "b"), (two, "c")]:
            reply = client.post(f"/api/conversations/{cid}/messages", json={"content": text})
            assert reply.status_code == 200, reply.text
        assert jotted == ["opened", "shown"]  # each run once, though rebuilt three times
        assert model_calls == ["-: a", "-: b", "-: c"]
        assert one.get(f"/api/conversations/{cid}").json()["state"] == {
            "opening": "jotted opened", "turns": 3}


def test_a_failed_model_call_inside_the_child_waits_for_a_retry_on_any_app(
        tmp_path: Path) -> None:
    jotted.clear()
    model_calls.clear()
    failing = [True]

    def flaky(messages: Sequence[Message], tools: Any) -> str:
        names = [t["function"]["name"] for t in tools]
        if names == ["jot"] and messages[-1].role == "tool" and failing:
            failing.pop()
            raise ModelError("HTTP 500 from the test model")
        return answer(messages, tools)

    child = LinearTemplate([ToolingTemplate([jot]), AssistantTemplate("(noted)")])
    sub = SubroutineTool(child, name="delegate", description="Have a note taken.",
                         keep="all")
    template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([sub])])])
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with TestClient(create_app(template, FunctionModel(flaky), store=store)) as one, \
            TestClient(create_app(template, FunctionModel(flaky), store=store)) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{cid}"
        failed = one.post(f"{url}/messages", json={"content": "jot A"})
        assert failed.status_code == 502, failed.text
        assert failed.json()["waiting_for"]["type"] == "retry"
        assert jotted == ["A"]
        retried = two.post(f"{url}/retry", json={})
        assert retried.status_code == 200, retried.text
        assert jotted == ["A"]  # the child's tool is not run again
        assert unnumbered(retried.json()["added"])[-2:] == [
            {"role": "tool", "content": "jotted A\n\nNoted: jotted A\n\n(noted)",
             "tool_call_id": retried.json()["added"][-2]["tool_call_id"], "name": "delegate"},
            {"role": "assistant", "content": "Done: jotted A\n\nNoted: jotted A\n\n(noted)"}]
        assert model_calls == ["delegate: jot A", "jot: A", "jot: jotted A",
                               "delegate: jotted A\n\nNoted: jotted A\n\n(noted)"]
