"""SubroutineTemplate (API.md §11): its own session, inherit/keep, its record, resume."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from example_kit import load_example

from convo import DefinitionError, Message, Runner, RunStatus, ScriptedInterface, Session, ToolCall
from convo._resume import resume
from convo._session import SubroutineRun
from convo._transcript import TranscriptWriter, load_transcript
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    SubroutineTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.templates._subroutine import inherited
from convo.tools import EndConversationTool, tool

SYSTEM = Message("system", "You are a support bot.")
ASKED = Message("user", "Please email my receipt.")
SURE = Message("assistant", "Sure.")
DRAFT = Message("user", "Draft the email.")
EMAIL = Message("assistant", "Dear customer, here is your receipt.")


@tool
def find_receipt(order: str) -> str:
    """Find a receipt.

    Args:
        order: The order number.
    """
    return f"Receipt for {order}: 30.00 USD"


def parent(child: SubroutineTemplate) -> LinearTemplate:
    return LinearTemplate([SystemTemplate(SYSTEM.content), UserTemplate(ASKED.content),
                           AssistantTemplate(SURE.content), child, AssistantTemplate("Sent!")])


def drafting(**kw: object) -> SubroutineTemplate:
    return SubroutineTemplate(LinearTemplate([UserTemplate(DRAFT.content), AssistantTemplate()]),
                              template_id="draft", **kw)  # type: ignore[arg-type]


def test_the_child_runs_on_its_own_session_and_its_last_reply_is_kept() -> None:
    model = MockModel([EMAIL.content])
    session = Runner(model, parent(drafting())).run()
    assert model.calls[0].messages == (SYSTEM, DRAFT)
    assert session.messages == [SYSTEM, ASKED, SURE, EMAIL, Message("assistant", "Sent!")]
    assert session.subroutines == [SubroutineRun(
        label="SubroutineTemplate(template_id='draft')", index=3, inherited=1,
        messages=(SYSTEM, DRAFT, EMAIL))]
    assert Session.from_json(session.to_json()) == session


def test_the_start_event_shows_the_child_as_it_grows_and_a_resume_sends_it_too() -> None:
    from convo.events import SubroutineEnded, SubroutineStarted, describe

    seen: list[tuple[str, SubroutineRun]] = []

    def watch(event: object) -> None:
        if isinstance(event, SubroutineStarted):
            started.append(event)
            seen.append(("started", event.record()))
        elif isinstance(event, SubroutineEnded):
            seen.append(("ended", started[-1].record()))

    started: list[SubroutineStarted] = []
    session = Runner(MockModel([EMAIL.content]), parent(drafting()), on_event=watch).run()
    label = "SubroutineTemplate(template_id='draft')"
    assert seen == [
        ("started", SubroutineRun(label=label, index=3, inherited=1, messages=(SYSTEM,))),
        ("ended", session.subroutines[0])]
    assert describe(started[0]) == {"event": "SubroutineStarted", "label": label, "index": 3,
                                    "inherited": 1}
    # Replayed from its record, the child starts (and ends) for on_event all the same.
    seen.clear()
    template, fresh = resume(parent(drafting()), session)
    again = Runner(MockModel([]), template, on_event=watch).run(fresh)
    assert again.messages == session.messages
    assert seen == [("started", SubroutineRun(label=label, index=3, inherited=1,
                                              messages=(SYSTEM,))),
                    ("ended", session.subroutines[0])]


@pytest.mark.parametrize(("inherit", "sees"), [
    ("all", (SYSTEM, ASKED, SURE, DRAFT)),
    ("none", (DRAFT,)),
    (2, (ASKED, SURE, DRAFT)),
    (0, (DRAFT,)),
])
def test_inherit_decides_what_the_child_starts_with(inherit: object,
                                                    sees: tuple[Message, ...]) -> None:
    model = MockModel([EMAIL.content])
    Runner(model, parent(drafting(inherit=inherit))).run()
    assert model.calls[0].messages == sees


def test_the_last_n_never_start_inside_a_tool_calls_results() -> None:
    call = Message("assistant", "", tool_calls=(ToolCall("c1", "a", {}), ToolCall("c2", "b", {})))
    history = [SYSTEM, ASKED, call, Message("tool", "1", tool_call_id="c1"),
               Message("tool", "2", tool_call_id="c2"), SURE]
    assert inherited(history, 3) == [SURE]
    assert inherited(history, 4) == history[2:]
    assert inherited(history, 10) == history


def test_keep_all_appends_everything_the_child_added_tools_included() -> None:
    child = SubroutineTemplate(LinearTemplate([
        UserTemplate(DRAFT.content), ToolingTemplate([find_receipt])]), keep="all")
    model = MockModel(["{find_receipt(order='1042')}", EMAIL.content])
    session = Runner(model, parent(child)).run()
    assert [(m.role, m.content) for m in session.messages[3:]] == [
        ("user", DRAFT.content), ("assistant", ""), ("tool", "Receipt for 1042: 30.00 USD"),
        ("assistant", EMAIL.content), ("assistant", "Sent!")]
    assert len(session.turns) == 0  # the child's turn is the child's


def test_keep_none_appends_nothing_but_the_record_is_there() -> None:
    session = Runner(MockModel([EMAIL.content]), parent(drafting(keep="none"))).run()
    assert session.messages == [SYSTEM, ASKED, SURE, Message("assistant", "Sent!")]
    assert session.subroutines[0].messages[-1] == EMAIL


def test_the_child_has_its_own_model_if_given() -> None:
    own = MockModel([EMAIL.content])
    session = Runner(MockModel([]), parent(drafting(model=own))).run()
    assert len(own.calls) == 1
    assert session.messages[3] == EMAIL


def test_ending_the_conversation_inside_the_child_ends_only_the_child() -> None:
    child = SubroutineTemplate(ToolingTemplate([EndConversationTool()]), inherit="all")
    model = MockModel(["{end_conversation(message='Draft done.')}"])
    session = Runner(model, parent(child)).run()
    assert session.messages[3:] == [Message("assistant", "Draft done."),
                                    Message("assistant", "Sent!")]
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED


def test_the_child_sees_the_parents_variables_and_its_changes_are_kept() -> None:
    def remember(session: Session) -> bool:
        session.state["drafted"] = True
        return False

    child = SubroutineTemplate(LinearTemplate([SystemTemplate("Write to {{ name }}."),
                                               IfTemplate(remember, AssistantTemplate("no"))]),
                               keep="none")
    session = Runner(None, LinearTemplate([child])).run(Session(state={"name": "Ann"}))
    assert session.state == {"name": "Ann", "drafted": True}
    assert session.subroutines[0].messages == (Message("system", "Write to Ann."),)


def test_it_runs_under_arun() -> None:
    model = MockModel([EMAIL.content])
    session = asyncio.run(Runner(model, parent(drafting())).arun())
    assert session.messages[3] == EMAIL


def test_the_child_is_one_transcript_line_and_is_not_run_again_on_resume(tmp_path: Path
                                                                          ) -> None:
    template = LinearTemplate([parent(drafting()), LoopTemplate([UserTemplate(),
                                                                 AssistantTemplate()])])
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    Runner(MockModel([EMAIL.content]), template, ScriptedInterface([]), on_event=writer).run(first)
    writer.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    [line] = [r for r in lines if r["type"] == "subroutine"]
    assert line["subroutine"] == first.subroutines[0].to_dict()
    saved = load_transcript(path)
    assert saved == first

    model = MockModel(["You're welcome."])
    resumed, session = resume(template, saved)
    writer = TranscriptWriter.append(path, session, saved)
    Runner(model, resumed, ScriptedInterface(["Thanks"]), on_event=writer).run(session)
    writer.close()
    assert len(model.calls) == 1  # the child's saved reply answered it again
    assert model.calls[0].messages[-1] == Message("user", "Thanks")
    assert session.subroutines == first.subroutines
    assert load_transcript(path) == session
    assert [r["type"] for r in map(json.loads, path.read_text().splitlines())].count(
        "subroutine") == 1


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"inherit": "some"}, "SubroutineTemplate: inherit must be 'system', 'all', 'none' or a "
                          "number of messages (an int >= 0), got 'some'"),
    ({"inherit": -1}, "SubroutineTemplate: inherit must be 'system', 'all', 'none' or a "
                      "number of messages (an int >= 0), got -1"),
    ({"keep": "first"}, "SubroutineTemplate: keep must be 'last', 'all' or 'none', "
                        "got 'first'"),
])
def test_bad_arguments_are_rejected_when_built(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(DefinitionError, match=f"^{re.escape(error)}$"):
        SubroutineTemplate(AssistantTemplate("x"), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match=r"^SubroutineTemplate: template is str 'x', "):
        SubroutineTemplate("x")  # type: ignore[arg-type]


def test_the_draft_email_example_keeps_only_the_final_draft() -> None:
    example = load_example("draft_email")
    session = Runner(example.mock_model, example.template,
                     ScriptedInterface(example.demo_input)).run(Session(state=example.state))
    final = "Dear Ann, your refund of 30 USD is on its way. Mugs & Co."
    assert [m.content for m in session.messages] == [
        "You are the support assistant of Mugs & Co.", "Please confirm my refund by email.",
        final, "Thanks!", "You're welcome! Anything else?"]
    [run] = session.subroutines
    assert [m.role for m in run.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert run.messages[3].content == "Too long: 31 words, keep it under 25."


def test_a_run_ended_inside_the_child_keeps_its_record_and_resumes_inside_it(tmp_path: Path
                                                                             ) -> None:
    child = SubroutineTemplate(
        LinearTemplate([UserTemplate(DRAFT.content), ToolingTemplate([find_receipt]),
                        UserTemplate(), AssistantTemplate()]), template_id="draft")
    template = LinearTemplate([SystemTemplate(SYSTEM.content), child,
                               AssistantTemplate("Sent!")])
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    model = MockModel(["{find_receipt(order='A1')}", EMAIL.content])
    # the user leaves at the child's prompt: the run ends inside the child
    Runner(model, template, ScriptedInterface([]), on_event=writer).run(first)
    writer.close()
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED
    saved = load_transcript(path)
    assert saved == first
    [run] = saved.subroutines
    assert [m.role for m in run.messages] == ["system", "user", "assistant", "tool", "assistant"]

    model = MockModel(["Shorter: here is your receipt."])
    resumed, session = resume(template, saved)
    writer = TranscriptWriter.append(path, session, saved)
    Runner(model, resumed, ScriptedInterface(["Make it shorter."]),
           on_event=writer).run(session)
    writer.close()
    assert len(model.calls) == 1  # neither the child's first two calls nor its tool again
    assert model.calls[0].messages == (*run.messages, Message("user", "Make it shorter."))
    [done] = session.subroutines
    assert done.messages == (*run.messages, Message("user", "Make it shorter."),
                             Message("assistant", "Shorter: here is your receipt."))
    assert [m.content for m in session.messages] == [
        SYSTEM.content, "Shorter: here is your receipt.", "Sent!"]
    assert load_transcript(path) == session
