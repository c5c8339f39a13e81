"""The state a branch starts with is the state as it was when ``before``'s message was made,
whoever wrote it later (API.md §28): a template, a hook, an ``ExecuteToolTemplate(store_as=)``
run, a tool inside a subroutine; in process, after a resume, and through a transcript. A
conversation recorded before convo kept the records keeps what its replay makes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from branch_kit import RAN, Turns, add_to_cart

from convo import Message, Runner, ScriptedInterface, Session
from convo._record.transcript import TranscriptWriter, read_transcript
from convo._requests import Flow
from convo._run.driver import drive
from convo.models import FunctionModel
from convo.templates import (
    AssistantTemplate,
    ExecuteToolTemplate,
    LoopTemplate,
    SubroutineTemplate,
    Template,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import tool

STATE_UNDO = "state_undo"  # what a message and Session.internal keep of the state's changes


@attrs.define(slots=True, eq=False)
class Tally(Template):
    """Counts the turns in ``state["turn"]`` (a template's own write)."""

    def render(self, session: Session) -> Flow:
        session.state["turn"] = session.state.get("turn", 0) + 1
        yield from ()
        return session


def replied(session: Session) -> None:  # an ``after`` hook's write
    session.state["replies"] = session.state.get("replies", 0) + 1
    session.state["last_reply"] = session.messages[-1].content


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return f"{len(RAN)} sunny in {city}"


def reply(messages: Sequence[Message], tools: Any) -> str:
    last = messages[-1]
    if last.role == "user" and str(last.content).startswith("add "):
        return f"{{add_to_cart(item='{str(last.content)[4:]}')}}"
    return f"re: {last.content}"


def _run(template: Template, users: list[str]) -> tuple[Session, Runner]:
    RAN.clear()
    runner = Runner(FunctionModel(reply), template, ScriptedInterface(users), raise_errors=True)
    return runner.run(), runner


def _branch(template: Template, saved: Any, before: int) -> Session:
    ran = list(RAN)
    branch = Runner(FunctionModel(reply), template, ScriptedInterface([])).branch(
        saved, before=before)
    assert RAN == ran  # nothing ran again
    return branch


TALLIED = LoopTemplate([Tally(), UserTemplate(), AssistantTemplate()])


def test_a_templates_later_writes_are_not_in_the_branch() -> None:
    saved, _ = _run(TALLIED, ["a", "b"])
    assert saved.state == {"turn": 3}  # the third turn's ask found no one
    assert _branch(TALLIED, saved, 2).state == {"turn": 2}  # edit "b"
    assert _branch(TALLIED, saved, 3).state == {"turn": 2}  # regenerate its reply
    assert _branch(TALLIED, saved, 0).state == {"turn": 1}
    turns = LoopTemplate([Turns(again=True), UserTemplate(), AssistantTemplate()])
    saved, _ = _run(turns, ["a", "b"])
    assert saved.state == {"turn": 3, "again": True}
    assert _branch(turns, saved, 1).state == {"turn": 1}  # a key written only later: gone


HOOKED = LoopTemplate([UserTemplate(), AssistantTemplate(after=replied)])


def test_a_hooks_later_writes_are_not_in_the_branch() -> None:
    saved, _ = _run(HOOKED, ["a", "b"])
    assert saved.state == {"replies": 2, "last_reply": "re: b"}
    # The hook ran after the last reply, before the ask the conversation ended at.
    assert STATE_UNDO in saved.internal
    assert _branch(HOOKED, saved, 3).state == {"replies": 1, "last_reply": "re: a"}
    assert _branch(HOOKED, saved, 1).state == {}


STORED = LoopTemplate([UserTemplate(), ExecuteToolTemplate(
    weather, arguments=lambda s: {"city": s.messages[-1].content}, store_as="weather"),
    AssistantTemplate()])


def test_a_store_as_runs_later_value_is_not_in_the_branch() -> None:
    saved, _ = _run(STORED, ["Paris", "Rome", "Oslo"])
    assert saved.state == {"weather": "3 sunny in Oslo"}
    assert _branch(STORED, saved, 4).state == {"weather": "2 sunny in Rome"}  # edit "Oslo"
    assert _branch(STORED, saved, 2).state == {"weather": "1 sunny in Paris"}
    assert _branch(STORED, saved, 0).state == {}


SUBROUTINE = LoopTemplate([UserTemplate(), SubroutineTemplate(
    ToolingTemplate([add_to_cart]), inherit="all")])


def test_a_tools_later_change_inside_a_subroutine_is_not_in_the_branch() -> None:
    saved, _ = _run(SUBROUTINE, ["add tea", "add jam"])
    assert saved.state == {"cart": ["tea", "jam"]}
    assert [m.role for m in saved.messages] == ["user", "assistant"] * 2
    assert _branch(SUBROUTINE, saved, 2).state == {"cart": ["tea"]}


def test_every_writer_through_a_resume_and_a_transcript(tmp_path: Path) -> None:
    template = LoopTemplate([Turns(again=True), UserTemplate(), ExecuteToolTemplate(
        weather, arguments={"city": "Oslo"}, store_as="weather"),
        ToolingTemplate([add_to_cart], after=replied)])
    path = tmp_path / "chat.jsonl"
    RAN.clear()
    writers: list[Any] = []

    def runner(users: list[str]) -> Runner:
        return Runner(FunctionModel(reply), template, ScriptedInterface(users),
                      on_event=lambda event: writers[-1](event), raise_errors=True)

    first = Session()
    writers.append(TranscriptWriter.create(path, first))
    runner(["add tea"]).run(first)
    writers[-1].close()
    saved = read_transcript(path)
    run = runner(["add jam", "hi"]).start(saved=saved.session)
    writers.append(TranscriptWriter.append(path, run.session, saved))
    drive(run.driver, run.answerer)
    writers[-1].close()
    resumed = run.session
    at = [m.content for m in resumed.messages].index("add jam")
    expected = {"turn": 2, "again": True, "weather": "1 sunny in Oslo", "cart": ["tea"],
                "replies": 1, "last_reply": "re: added tea"}
    assert _branch(template, resumed, at).state == expected  # the resumed session's records
    assert _branch(template, path, at).state == expected  # the transcript's
    assert resumed.state == {"turn": 4, "again": True, "weather": "5 sunny in Oslo",
                             "cart": ["tea", "jam"], "replies": 3, "last_reply": "re: hi"}
    assert _branch(template, path, 0).state == {"turn": 1}


def test_a_conversation_recorded_before_the_records_keeps_what_its_replay_makes() -> None:
    saved, _ = _run(HOOKED, ["a", "b"])
    old = Session([attrs.evolve(m, metadata={k: v for k, v in m.metadata.items()
                                             if k != STATE_UNDO}) for m in saved.messages],
                  saved.state, internal={})
    # Its last saved state, the templates replayed over it (as a resume does): what the hook
    # wrote later stays.
    assert _branch(HOOKED, old, 3).state == {"replies": 2, "last_reply": "re: b"}
