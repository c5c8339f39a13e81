"""SubroutineTool (API.md §22): a template as a tool, run on the one core like a
SubroutineTemplate (its own session, recorded, replayed on resume, counted by limits)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from weather_tools import agent, chat_loop

from convo import (
    DefinitionError,
    Limits,
    Message,
    MessageAdded,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
)
from convo._resume import resume
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import Event, SubroutineEnded, SubroutineStarted
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    EndTemplate,
    LinearTemplate,
    SubroutineTool,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import EndConversationTool, tool

looked_up: list[str] = []


@tool
def look_up(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    looked_up.append(topic)
    return f"notes on {topic}"


@tool(needs_approval=True)
def publish(text: str) -> str:
    """Publish a text."""
    return f"published {text}"


def researcher(**kw: object) -> SubroutineTool:
    child = ToolingTemplate([look_up])
    return SubroutineTool(child, name="research", description="Research a topic.", **kw)  # type: ignore[arg-type]


def asked(sub: SubroutineTool) -> LinearTemplate:
    """"What is a mug?" asked of an agent that has ``sub``."""
    return agent("What is a mug?", sub, system="You answer questions.")


def test_the_call_runs_the_template_on_its_own_session_and_its_reply_is_the_result() -> None:
    looked_up.clear()
    model = MockModel(["{research(input='mugs')}", "{look_up(topic='mugs')}",
                       "A mug is a cup with a handle.", "It is a cup with a handle."])
    events: list[Event] = []
    session = Runner(model, asked(researcher()), on_event=events.append).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    call = session.messages[2].tool_calls[0]
    assert [(m.role, m.content) for m in session.messages] == [
        ("system", "You answer questions."), ("user", "What is a mug?"), ("assistant", ""),
        ("tool", "A mug is a cup with a handle."), ("assistant", "It is a cup with a handle.")]
    assert session.messages[3].tool_call_id == call.id
    assert looked_up == ["mugs"]
    # inherit="none": the child saw its input only, and the look_up tool's schema
    assert model.calls[1].messages == (Message("user", "mugs"),)
    assert [t["function"]["name"] for t in model.calls[1].tools] == ["look_up"]
    [run] = session.subroutines
    assert (run.label, run.index, run.inherited) == ("SubroutineTool(research)", 3, 0)
    assert [(m.role, m.content) for m in run.messages] == [
        ("user", "mugs"), ("assistant", ""), ("tool", "notes on mugs"),
        ("assistant", "A mug is a cup with a handle.")]
    # events carry the child's scope; the child is framed by its start and end
    scoped = [e.message.content for e in events
              if isinstance(e, MessageAdded) and e.scope == ("SubroutineTool(research)",)]
    assert scoped == ["mugs", "", "notes on mugs", "A mug is a cup with a handle."]
    kinds = [type(e) for e in events if isinstance(e, SubroutineStarted | SubroutineEnded)]
    assert kinds == [SubroutineStarted, SubroutineEnded]
    model.assert_complete()


def test_the_schema_has_input_and_an_optional_system_message() -> None:
    schema = researcher().schema()["function"]
    assert schema["name"] == "research"
    assert schema["description"] == "Research a topic."
    assert schema["parameters"]["required"] == ["input"]
    assert sorted(schema["parameters"]["properties"]) == ["input", "system_message"]


def test_a_system_message_and_inherit_start_the_child_session() -> None:
    model = MockModel(["{research(input='mugs', system_message='Be short.')}", "Cups.", "Ok."])
    session = Runner(model, asked(researcher(inherit="system"))).run()
    # the parent's system message, then the call's system message, then the input
    assert model.calls[1].messages == (Message("system", "You answer questions."),
                                       Message("system", "Be short."), Message("user", "mugs"))
    assert session.subroutines[0].inherited == 1
    assert session.messages[3].content == "Cups."


def test_inherit_all_leaves_out_the_call_being_answered() -> None:
    model = MockModel(["{research(input='mugs')}", "Cups.", "Ok."])
    Runner(model, asked(researcher(inherit="all"))).run()
    assert [m.role for m in model.calls[1].messages] == ["system", "user", "user"]


def test_argument_validation_is_the_tools_own() -> None:
    model = MockModel(["{research(topic='mugs')}", "Sorry."])
    session = Runner(model, asked(researcher())).run()
    assert session.messages[3].role == "tool"
    assert session.messages[3].metadata == {"error": True, "not_run": True}  # never invoked
    assert "input" in session.messages[3].content
    assert session.subroutines == []  # nothing ran
    assert len(model.calls) == 2


def test_repeated_calls_are_independent_sessions() -> None:
    model = MockModel(["{research(input='a')}{research(input='b')}", "A.", "B.", "Both."])
    session = Runner(model, asked(researcher())).run()
    assert [m.content for m in session.messages[3:5]] == ["A.", "B."]
    assert model.calls[1].messages == (Message("user", "a"),)
    assert model.calls[2].messages == (Message("user", "b"),)
    assert [r.messages[0].content for r in session.subroutines] == ["a", "b"]


def test_metadata_and_the_state_are_preserved() -> None:
    def noted(session: Session) -> None:
        session.state["researched"] = session.state["user"] + " asked"

    child = LinearTemplate([SystemTemplate("Research for {{ user }}."), AssistantTemplate()],
                           after=noted)
    sub = SubroutineTool(child, name="research", description="d")
    reply = Message("assistant", "Cups.", metadata={"source": "child"})
    model = MockModel(["{research(input='mugs')}", reply, "Ok."])
    session = Runner(model, asked(sub)).run(Session(state={"user": "Ann"}))
    assert session.subroutines[0].messages[-1].metadata == {"source": "child"}
    assert model.calls[1].messages[-1] == Message("system", "Research for Ann.")
    assert session.state == {"user": "Ann", "researched": "Ann asked"}


@pytest.mark.parametrize(("keep", "result"), [
    ("last", "Second."), ("all", "First.\n\nSecond."), ("none", "")])
def test_keep_decides_the_result(keep: str, result: str) -> None:
    child = LinearTemplate([AssistantTemplate(), UserTemplate("More."), AssistantTemplate()])
    sub = SubroutineTool(child, name="research", description="d", keep=keep)
    model = MockModel(["{research(input='go')}", "First.", "Second.", "Done."])
    session = Runner(model, asked(sub)).run()
    assert session.messages[3].content == (result if keep != "all"
                                           else "First.\n\nMore.\n\nSecond.")


@pytest.mark.parametrize("ending", ["EndTemplate", "end_conversation"])
def test_ending_the_conversation_inside_ends_only_the_child(ending: str) -> None:
    if ending == "EndTemplate":
        child = LinearTemplate([AssistantTemplate(), EndTemplate(), AssistantTemplate("never")])
        replies = ["{research(input='go')}", "Found it.", "The parent goes on."]
        result = "Found it."
    else:
        child = LinearTemplate([ToolingTemplate([EndConversationTool()]),
                                AssistantTemplate("never")])
        replies = ["{research(input='go')}", "Found it. {end_conversation()}",
                   "The parent goes on."]
        result = "Conversation ended."  # the farewell is the child's last reply
    sub = SubroutineTool(child, name="research", description="d")
    session = Runner(MockModel(replies), asked(sub)).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    assert session.messages[3].content == result
    assert session.messages[-1].content == "The parent goes on."


def test_limits_count_the_childs_model_and_tool_calls() -> None:
    model = MockModel(["{research(input='mugs')}", "{look_up(topic='mugs')}", "Cups.", "Ok."])
    session = Runner(model, asked(researcher()), limits=Limits(model_calls=2)).run()
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.limit) == (RunStatus.USAGE_LIMIT,
                                                              "model_calls")
    assert session.outcome.model_calls == 2
    [run] = session.subroutines  # the child's record, as it stood
    assert [m.role for m in run.messages] == ["user", "assistant", "tool"]
    session = Runner(MockModel(["{research(input='mugs')}", "{look_up(topic='mugs')}",
                                "Cups.", "Ok."]),
                     asked(researcher()), limits=Limits(tool_calls=0)).run()
    assert session.subroutines[0].messages[2].content == \
        "Not run: the tool_calls limit was reached"


def test_a_needs_approval_subroutine_tool_is_asked_about_and_a_rejection_is_its_result(
) -> None:
    ui = ScriptedInterface([], approvals=[False])
    model = MockModel(["{research(input='mugs')}", "Ok, I won't."])
    session = Runner(model, asked(researcher(needs_approval=True)), ui).run()
    assert [c.name for c in ui.asked_approvals] == ["research"]
    assert session.messages[3].metadata == {"rejected": True}
    assert session.subroutines == [] and len(model.calls) == 2
    ui = ScriptedInterface([], approvals=[True, True])
    child = ToolingTemplate([publish])
    sub = SubroutineTool(child, name="writer", description="d", needs_approval=True)
    model = MockModel(["{writer(input='hi')}", "{publish(text='hi')}", "Out.", "Done."])
    session = Runner(model, asked(sub), ui).run()
    assert [c.name for c in ui.asked_approvals] == ["writer", "publish"]  # inside too
    assert session.subroutines[0].messages[2].content == "published hi"
    assert sorted(session.approvals) == sorted([ui.asked_approvals[0].id,
                                                ui.asked_approvals[1].id])


def test_it_runs_under_arun() -> None:
    model = MockModel(["{research(input='mugs')}", "Cups.", "Ok."])
    session = asyncio.run(Runner(model, asked(researcher())).arun())
    assert session.messages[3].content == "Cups."


def test_a_resumed_transcript_replays_the_child_without_calling_anything(tmp_path: Path
                                                                           ) -> None:
    looked_up.clear()
    sub = SubroutineTool(LinearTemplate([ToolingTemplate([look_up]), UserTemplate("More?"),
                                         AssistantTemplate()]),
                         name="research", description="d")
    template = chat_loop(sub, system="S")
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    model = MockModel(["{research(input='mugs')}", "{look_up(topic='mugs')}", "Cups.",
                       "Big cups.", "Mugs are big cups."])
    Runner(model, template, ScriptedInterface(["What is a mug?"]), on_event=writer).run(first)
    writer.close()
    assert looked_up == ["mugs"]
    saved = load_transcript(path)
    assert saved == first
    assert saved.subroutines[0].label == "SubroutineTool(research)"

    model = MockModel(["Anything else?"])
    resumed_template, session = resume(template, saved)
    writer = TranscriptWriter.append(path, session, saved)
    Runner(model, resumed_template, ScriptedInterface(["Thanks"]), on_event=writer).run(session)
    writer.close()
    assert looked_up == ["mugs"]  # the child's tool did not run again
    assert len(model.calls) == 1  # nor its model: only the new turn called it
    assert model.calls[0].messages[-1] == Message("user", "Thanks")
    resumed = load_transcript(path)
    assert resumed.subroutines == first.subroutines
    assert [m.content for m in resumed.messages][-2:] == ["Thanks", "Anything else?"]


def test_a_run_ended_inside_the_child_resumes_inside_it() -> None:
    sub = SubroutineTool(LinearTemplate([AssistantTemplate(), UserTemplate(description="More?"),
                                         AssistantTemplate()]),
                         name="research", description="d")
    template = LinearTemplate([UserTemplate(), ToolingTemplate([sub])])
    model = MockModel(["{research(input='mugs')}", "Cups."])
    first = Runner(model, template, ScriptedInterface(["What is a mug?"])).run()
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED
    [run] = first.subroutines
    assert [m.content for m in run.messages] == ["mugs", "Cups."]
    model = MockModel(["Big cups.", "A mug is a big cup."])
    session = Runner(model, template, ScriptedInterface(["Bigger?"])).resume(first)
    assert len(model.calls) == 2
    assert model.calls[0].messages == (Message("user", "mugs"), Message("assistant", "Cups."),
                                       Message("user", "Bigger?"))
    assert [m.content for m in session.messages] == ["What is a mug?", "", "Big cups.",
                                                     "A mug is a big cup."]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"inherit": "some"}, "SubroutineTool 'research': inherit must be 'system', 'all', "
                          "'none' or a number of messages (an int >= 0), got 'some'"),
    ({"keep": "first"}, "SubroutineTool 'research': keep must be 'last', 'all' or 'none', "
                        "got 'first'"),
])
def test_bad_arguments_are_rejected_when_built(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(DefinitionError, match=f"^{re.escape(error)}$"):
        researcher(**kwargs)
    with pytest.raises(DefinitionError, match=r"^SubroutineTool 'x': template is str 'y', "):
        SubroutineTool("y", name="x", description="d")  # type: ignore[arg-type]


def test_invoking_it_as_a_function_says_how_it_runs() -> None:
    with pytest.raises(TypeError, match="SubroutineTool 'research' runs a template: it is "
                                        "called by a ToolingTemplate or an "
                                        "ExecuteToolTemplate"):
        researcher().invoke({"input": "x"})


def test_its_template_is_checked_with_the_tree() -> None:
    from convo import BreakTemplate

    child = LinearTemplate([AssistantTemplate(template_id="twice"), BreakTemplate()])
    sub = SubroutineTool(child, name="research", description="d")
    with pytest.raises(DefinitionError, match=re.escape(
            "BreakTemplate at LinearTemplate > [2] ToolingTemplate > [0] LinearTemplate > [1] "
            "BreakTemplate is not inside any LoopTemplate")):
        Runner(MockModel([]), asked(sub))
    sub = SubroutineTool(AssistantTemplate(template_id="twice"), name="research",
                         description="d")
    tree = LinearTemplate([AssistantTemplate("x", template_id="twice"),
                           ToolingTemplate([sub])])
    with pytest.raises(DefinitionError, match=r"^duplicate template_id 'twice'"):
        Runner(MockModel([]), tree)
