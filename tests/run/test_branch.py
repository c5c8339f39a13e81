"""Runner.branch (API.md §28): a branch is the replay of a prefix, with nothing called; its state
is the state at the branch point (what tools changed later undone); the original is unchanged;
regenerating makes the model call again with exactly the messages before it."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from convo import Limits, Message, Runner, ScriptedInterface, Session
from convo._record.transcript import TranscriptWriter, load_transcript
from convo.models import FunctionModel
from convo.templates import AssistantTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import ToolContext, tool

RAN: list[str] = []


@tool
def add_to_cart(context: ToolContext, item: str) -> str:
    """Put an item in the cart.

    Args:
        item: What to add.
    """
    RAN.append(item)
    context.state.setdefault("cart", []).append(item)
    context.state["last"] = item
    return f"added {item}"


CHAT = LoopTemplate([UserTemplate(), ToolingTemplate([add_to_cart])])


class Script:
    """A model that says what each user message asks (``add X``: a call, then "done"), and
    remembers the messages of every call."""

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message], tools: Any) -> str:
        self.seen.append(list(messages))
        last = messages[-1]
        if last.role == "user" and str(last.content).startswith("add "):
            return f"{{add_to_cart(item='{str(last.content)[4:]}')}}"
        return f"done ({len(messages)})"


def _original() -> tuple[Session, FunctionModel]:
    RAN.clear()
    model = FunctionModel(Script())
    session = Runner(model, CHAT, ScriptedInterface(["add tea", "add jam"]),
                     raise_errors=True).run()
    # user, call, tool, reply, user, call, tool, reply
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"] * 2
    return session, model


def test_a_branch_calls_nothing_and_has_the_state_before_the_later_tool() -> None:
    saved, model = _original()
    assert saved.state == {"cart": ["tea", "jam"], "last": "jam"}
    before = copy.deepcopy(saved.to_dict())
    calls, ran = model.calls, list(RAN)
    branch = Runner(model, CHAT, ScriptedInterface([])).branch(saved, before=4)
    assert model.calls == calls and RAN == ran  # no model call, no tool run
    assert [m.content for m in branch.messages] == [m.content for m in saved.messages[:4]]
    assert branch.state == {"cart": ["tea"], "last": "tea"}
    assert branch.parent == {"id": None, "before": 4}
    assert branch.outcome is None
    assert saved.to_dict() == before  # the original is unchanged


def test_a_branch_before_the_first_tool_has_the_state_the_conversation_began_with() -> None:
    saved, model = _original()
    saved.state["name"] = "Ada"  # a key no tool wrote: kept
    branch = Runner(model, CHAT, ScriptedInterface([])).branch(saved, before=0)
    assert branch.messages == [] and branch.state == {"name": "Ada"}


def test_a_branch_goes_on_with_another_message_counting_only_its_own() -> None:
    saved, model = _original()
    runner = Runner(model, CHAT, ScriptedInterface(["add ham"]), limits=Limits(tool_calls=2))
    branch = runner.branch(saved, before=4)
    session = runner.resume(branch)
    assert [m.content for m in session.messages[4:]] == [
        "add ham", "", "added ham", "done (7)"]
    assert session.state == {"cart": ["tea", "ham"], "last": "ham"}
    assert session.parent == {"id": None, "before": 4}
    outcome = session.outcome
    assert outcome is not None and outcome.status == "stopped"
    # Counted: the branch's 4 model calls (2 replayed) and its 2 tool calls, within the limit
    # of 2 that the original's 2 + 1 would have passed.
    assert (outcome.messages, outcome.model_calls, outcome.limit) == (8, 4, None)


def test_regenerate_makes_the_model_call_again_with_exactly_the_messages_before_it() -> None:
    saved, _ = _original()
    script = Script()
    model = FunctionModel(script)
    runner = Runner(model, CHAT, ScriptedInterface([]))
    branch = runner.branch(saved, before=7)  # the reply after the tool result
    assert model.calls == 0
    session = runner.resume(branch)
    assert model.calls == 1
    assert script.seen == [saved.messages[:7]]
    assert session.messages[7].content == "done (7)"


def test_every_bad_before_names_the_index_and_what_is_there() -> None:
    saved, model = _original()
    runner = Runner(model, CHAT, ScriptedInterface([]))
    cases = {
        2: "before=2 is a tool message (the result of 'add_to_cart'); a branch starts before "
           "a user message or a model's reply",
        8: "before=8 is outside the conversation's messages (8 messages: indexes 0 to 7)",
        -1: "before=-1 is outside the conversation's messages (8 messages: indexes 0 to 7)",
    }
    for before, said in cases.items():
        with pytest.raises(ValueError) as caught:
            runner.branch(saved, before=before)
        assert str(caught.value) == said
    saved.messages.insert(0, Message("system", "Be brief."))
    with pytest.raises(ValueError, match=r"^before=0 is a system message; a branch starts"):
        runner.branch(saved, before=0)
    operator = Session([Message("user", "hi"),
                        Message("assistant", "Ann here", metadata={"author": "operator"})])
    with pytest.raises(ValueError, match=r"^before=1 is an operator's message; "):
        runner.branch(operator, before=1)


def test_a_scripted_message_is_not_a_models_reply() -> None:
    template = LoopTemplate([AssistantTemplate("Hello!"), UserTemplate()])
    saved = Runner(FunctionModel(Script()), template, ScriptedInterface(["hi"])).run()
    runner = Runner(FunctionModel(Script()), template, ScriptedInterface([]))
    with pytest.raises(ValueError) as caught:
        runner.branch(saved, before=0)
    assert str(caught.value) == (
        "before=0 is an assistant message the template wrote itself (a scripted or farewell "
        "message), not a model's reply; a branch starts before a user message or a model's "
        "reply")
    assert runner.branch(saved, before=1).messages[0].content == "Hello!"


def test_a_branch_of_a_transcript_keeps_its_parent_in_its_own_transcript(tmp_path: Path
                                                                          ) -> None:
    saved, model = _original()
    path = tmp_path / "first.jsonl"
    path.write_text("")
    path.unlink()
    writer = TranscriptWriter.create(path, Session(state={}))
    runner = Runner(model, CHAT, ScriptedInterface(["add tea", "add jam"]), on_event=writer)
    runner.run()
    writer.close()
    branch = runner.branch(str(path), before=4)
    assert branch.parent == {"id": str(path), "before": 4}
    second = tmp_path / "second.jsonl"
    writer = TranscriptWriter.create(second, branch)
    Runner(model, CHAT, ScriptedInterface(["add ham"]), on_event=writer).resume(branch)
    writer.close()
    header = json.loads(second.read_text().splitlines()[0])
    assert header["parent"] == {"id": str(path), "before": 4}
    assert load_transcript(second).parent == {"id": str(path), "before": 4}
    assert Session.from_json(branch.to_json()).parent == branch.parent
    assert "parent" not in saved.to_dict()  # a conversation that is no branch: as before


def test_abranch_is_branch_on_the_loop() -> None:
    saved, model = _original()
    calls = model.calls
    branch = asyncio.run(Runner(model, CHAT, ScriptedInterface([])).abranch(saved, before=4))
    assert model.calls == calls
    assert branch.state == {"cart": ["tea"], "last": "tea"}
