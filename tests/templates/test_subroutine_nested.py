"""A subroutine inside a subroutine (API.md §11, §28), at any depth: each child's model sees
only its own session; each child's record holds the records of the subroutines inside it, so
that a resume, a rebuild and a branch through them replay them (no model or tool called
again), in process and through a transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from branch_kit import RAN, SENT, Turns, clear, stamp, stamp_reply

from convo import Message, Runner, RunStatus, ScriptedInterface, Session
from convo._resume import resume
from convo._session import SubroutineRun
from convo._transcript import TranscriptWriter, load_transcript
from convo.models import FunctionModel, MockModel
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    SubroutineTool,
    SystemTemplate,
    Template,
    ToolingTemplate,
    UserTemplate,
)


def nested(depth: int, *, keep: str = "last") -> Template:
    """``depth`` subroutines, one inside the other; each asks for a stamp of its own (its
    depth and the turn), then runs the next, then says what it did."""
    inside: list[Template] = [] if depth == 1 else [nested(depth - 1, keep=keep)]
    return SubroutineTemplate(LinearTemplate([
        UserTemplate(f"stamp d{depth} t{{{{ turn }}}}"), ToolingTemplate([stamp]), *inside,
        AssistantTemplate()]), inherit="none", keep=keep, template_id=f"depth {depth}")


def chat(depth: int = 3, *, keep: str = "last") -> Template:
    return LoopTemplate([Turns(), UserTemplate(), nested(depth, keep=keep), AssistantTemplate()])


@pytest.fixture(autouse=True)
def _clean() -> None:
    clear()


def test_a_nested_childs_model_is_sent_its_own_session_not_the_outer_childs() -> None:
    inner = SubroutineTemplate(LinearTemplate([UserTemplate("Inner task."),
                                               AssistantTemplate()]), inherit="none")
    middle = SubroutineTemplate(LinearTemplate([UserTemplate("Middle task."), inner,
                                                AssistantTemplate()]), inherit="none")
    outer = SubroutineTemplate(LinearTemplate([UserTemplate("Outer task."), middle,
                                               AssistantTemplate()]), inherit="all")
    model = MockModel(["inner reply", "middle reply", "outer reply", "top reply"])
    session = Runner(model, LinearTemplate([SystemTemplate("System."), outer,
                                            AssistantTemplate()])).run()
    assert [[m.content for m in call.messages] for call in model.calls] == [
        ["Inner task."],
        ["Middle task.", "inner reply"],
        ["System.", "Outer task.", "middle reply"],
        ["System.", "outer reply"]]
    assert [m.content for m in session.messages] == ["System.", "outer reply", "top reply"]


def test_each_childs_record_holds_the_records_of_the_subroutines_inside_it() -> None:
    session = Runner(FunctionModel(stamp_reply), chat(3), ScriptedInterface(["hello"])).run()
    assert RAN == ["d3 t1", "d2 t1", "d1 t1"]
    [outer] = session.subroutines
    [middle] = outer.subroutines
    [inner] = middle.subroutines
    assert (outer.label, outer.index, outer.inherited) == (
        "SubroutineTemplate(template_id='depth 3')", 1, 0)
    # each child: its stamp, the result, the reply; the child inside's last reply; its own
    assert [m.content for m in outer.messages] == [
        "stamp d3 t1", "", "stamped d3 t1", "done: stamped d3 t1",
        "re: re: done: stamped d1 t1", "re: re: re: done: stamped d1 t1"]
    assert (middle.index, middle.inherited, inner.index, inner.inherited) == (4, 0, 4, 0)
    assert [m.content for m in inner.messages] == [
        "stamp d1 t1", "", "stamped d1 t1", "done: stamped d1 t1",
        "re: done: stamped d1 t1"]
    assert inner.subroutines == ()
    assert outer.size == len(outer.messages) + len(middle.messages) + len(inner.messages)
    assert "subroutines" not in inner.to_dict()  # a record without any is written as before
    assert SubroutineRun.from_dict(json.loads(json.dumps(outer.to_dict()))) == outer
    assert Session.from_json(session.to_json()) == session


def test_a_resumed_transcript_replays_every_depth_without_calling_anything(tmp_path: Path
                                                                           ) -> None:
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    Runner(FunctionModel(stamp_reply), chat(3), ScriptedInterface(["hello", "again"]),
           on_event=writer).run(first)
    writer.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    # one line per subroutine of the conversation, the ones inside it in its record
    assert [r["subroutine"]["label"] for r in lines if r["type"] == "subroutine"] == [
        "SubroutineTemplate(template_id='depth 3')"] * 2
    saved = load_transcript(path)
    assert saved == first
    ran, sent = list(RAN), len(SENT)

    template, session = resume(chat(3), saved)
    Runner(FunctionModel(stamp_reply), template, ScriptedInterface(["third"])).run(session)
    assert RAN == [*ran, "d3 t3", "d2 t3", "d1 t3"]  # only the new turn's
    assert len(SENT) == sent + 10  # only the new turn's: three a depth, and the reply
    assert session.messages[:len(saved.messages)] == saved.messages
    assert session.subroutines[:2] == saved.subroutines


def test_a_run_ended_inside_the_innermost_child_resumes_inside_it(tmp_path: Path) -> None:
    deepest = SubroutineTemplate(LinearTemplate([
        UserTemplate("stamp deep"), ToolingTemplate([stamp]), UserTemplate(),
        AssistantTemplate()]), inherit="none", template_id="deepest")
    outer = SubroutineTemplate(LinearTemplate([
        UserTemplate("stamp outer"), ToolingTemplate([stamp]), deepest, AssistantTemplate()]),
        inherit="none", template_id="outer")
    template = LinearTemplate([SystemTemplate("System."), outer, AssistantTemplate("Bye.")])
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    # the user leaves at the innermost child's prompt: the run ends inside both
    Runner(FunctionModel(stamp_reply), template, ScriptedInterface([]), on_event=writer).run(first)
    writer.close()
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED
    saved = load_transcript(path)
    assert saved == first
    [run] = saved.subroutines
    [inner] = run.subroutines
    assert [m.content for m in inner.messages] == [
        "stamp deep", "", "stamped deep", "done: stamped deep"]
    assert RAN == ["outer", "deep"]
    sent = len(SENT)

    template_, session = resume(template, saved)
    Runner(FunctionModel(stamp_reply), template_, ScriptedInterface(["Go on."])).run(session)
    assert RAN == ["outer", "deep"]  # no tool again
    assert SENT[sent:] == [  # the innermost child's next reply, then the outer's
        [*(m.content for m in inner.messages), "Go on."],
        ["stamp outer", "", "stamped outer", "done: stamped outer",
         "re: Go on."]]
    assert [m.content for m in session.messages] == [
        "System.", "re: re: Go on.", "Bye."]


def test_a_branch_through_nested_subroutines_calls_nothing_and_undoes_their_state() -> None:
    runner = Runner(FunctionModel(stamp_reply), chat(3), ScriptedInterface(["hello", "again"]))
    first = runner.run()
    users = [i for i, m in enumerate(first.messages) if m.role == "user"]
    assert first.state["marks"] == ["d3 t1", "d2 t1", "d1 t1", "d3 t2", "d2 t2", "d1 t2"]
    ran, sent = list(RAN), len(SENT)

    branch = runner.branch(first, before=users[1])
    assert (RAN, len(SENT)) == (ran, sent)  # built by replay: nothing called
    assert branch.messages == first.messages[:users[1]]
    assert branch.state["marks"] == ["d3 t1", "d2 t1", "d1 t1"]  # the second turn's undone
    assert branch.subroutines == first.subroutines[:1]

    again = Runner(FunctionModel(stamp_reply), chat(3), ScriptedInterface(["other"])).resume(branch)
    assert RAN == [*ran, "d3 t2", "d2 t2", "d1 t2"]  # the branch's own turn, live
    assert again.state["marks"] == ["d3 t1", "d2 t1", "d1 t1", "d3 t2", "d2 t2", "d1 t2"]
    assert again.messages[users[1]].content == "other"
    assert again.subroutines[0] == first.subroutines[0]

    # Regenerating the reply after the nested subroutines: the same, up to that reply.
    ran, sent = list(RAN), len(SENT)
    regenerated = runner.branch(first, before=len(first.messages) - 1)
    assert (RAN, len(SENT)) == (ran, sent)
    assert regenerated.subroutines == first.subroutines


def test_a_subroutine_tool_inside_a_subroutine_is_recorded_and_replayed() -> None:
    pay = SubroutineTool(ToolingTemplate([stamp]), name="pay", description="Pay.")

    def model(messages: Sequence[Message], tools: Any) -> str:
        last = messages[-1]
        if last.role == "user" and last.content == "pay it":
            return "{pay(input='stamp paid')}"
        return stamp_reply(messages, tools)

    template = LoopTemplate([UserTemplate(), SubroutineTemplate(LinearTemplate([
        UserTemplate("pay it"), ToolingTemplate([pay])]), inherit="none", template_id="desk"),
        AssistantTemplate()])
    runner = Runner(FunctionModel(model), template, ScriptedInterface(["one", "two"]))
    first = runner.run()
    assert RAN == ["paid", "paid"]
    assert [[r.label for r in run.subroutines] for run in first.subroutines] == [
        ["SubroutineTool(pay)"], ["SubroutineTool(pay)"]]
    users = [i for i, m in enumerate(first.messages) if m.role == "user"]
    branch = runner.branch(first, before=users[1])
    assert RAN == ["paid", "paid"]
    assert branch.subroutines == first.subroutines[:1]
    assert branch.state["marks"] == ["paid"]
