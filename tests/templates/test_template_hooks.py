"""before= / after= on every template (API.md §22): order, when they do not run, state
changes recorded and not run again on resume."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from convo import DefinitionError, Runner, RunStatus, ScriptedInterface, Session
from convo._requests import Flow
from convo._transcript import TranscriptWriter
from convo.models import MockModel
from convo.templates import (
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    LinearTemplate,
    LoopTemplate,
    MessageTemplate,
    SubroutineTemplate,
    ToolingTemplate,
    UserTemplate,
)

log: list[str] = []


def note(text: str) -> Any:
    def hook(session: Session) -> None:
        log.append(f"{text} ({len(session.messages)} messages)")
    return hook


def count_pass(session: Session) -> None:
    session.state["passes"] = session.state.get("passes", 0) + 1


def test_hooks_run_in_order_before_it_renders_and_after_it_ends() -> None:
    log.clear()
    template = LinearTemplate(
        [AssistantTemplate("Hi.", before=note("inner before"), after=note("inner after"))],
        before=[note("outer before 1"), note("outer before 2")], after=note("outer after"))
    Runner(MockModel([]), template).run()
    assert log == ["outer before 1 (0 messages)", "outer before 2 (0 messages)",
                   "inner before (0 messages)", "inner after (1 messages)",
                   "outer after (1 messages)"]


def test_every_kind_of_template_takes_them() -> None:
    log.clear()
    template = LinearTemplate([
        UserTemplate(before=note("user")),
        ToolingTemplate([], before=note("tooling before"), after=note("tooling after")),
        SubroutineTemplate(AssistantTemplate(), after=note("subroutine after"))])
    Runner(MockModel(["Reply.", "Child."]), template, ScriptedInterface(["Hello"])).run()
    assert log == ["user (0 messages)", "tooling before (1 messages)",
                   "tooling after (2 messages)", "subroutine after (3 messages)"]


def test_a_before_hook_can_normalise_what_a_template_renders() -> None:
    def shout(session: Session) -> None:
        session.state["name"] = session.state["name"].upper()

    session = Runner(MockModel([]), AssistantTemplate("Hi {{ name }}", before=shout)).run(
        Session(state={"name": "ann"}))
    assert session.messages[0].content == "Hi ANN"


def test_after_does_not_run_when_the_conversation_ends_inside_or_on_a_break() -> None:
    log.clear()
    ended = LinearTemplate([EndTemplate("Bye.")], after=note("never: ended"))
    session = Runner(MockModel([]), LinearTemplate([ended], after=note("never: outer"))).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    broken = LoopTemplate([LinearTemplate([BreakTemplate()], after=note("never: break"))],
                          after=note("loop after"))
    Runner(MockModel([]), broken).run()
    assert log == ["loop after (0 messages)"]


def test_a_loop_counts_its_passes_and_the_count_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = Session()
    writer = TranscriptWriter.create(path, first)
    loop = LoopTemplate([LinearTemplate([UserTemplate(), AssistantTemplate()],
                                        after=count_pass)])
    Runner(MockModel(["One.", "Two."]), LinearTemplate([loop]), ScriptedInterface(["a", "b"]),
           on_event=writer).run(first)
    writer.close()
    states = [r["state"] for r in map(json.loads, path.read_text().splitlines())
              if r["type"] == "state"]
    assert states == [{"passes": 1}, {"passes": 2}]
    assert first.state == {"passes": 2}


def test_a_resumed_run_does_not_run_the_hooks_it_replays_again() -> None:
    looped = LinearTemplate([UserTemplate(), AssistantTemplate()], after=count_pass)
    template = LoopTemplate([looped])
    first = Runner(MockModel(["One.", "Two."]), template, ScriptedInterface(["a", "b"])).run()
    assert first.state == {"passes": 2}
    model = MockModel(["Three."])
    session = Runner(model, template, ScriptedInterface(["c"])).resume(first)
    assert session.state == {"passes": 3}  # the two replayed passes are not counted again
    assert len(model.calls) == 1


def test_a_failing_hook_ends_the_run_naming_the_template() -> None:
    def broken(session: Session) -> None:
        raise KeyError("name")

    session = Runner(MockModel([]), AssistantTemplate("Hi", template_id="greet",
                                                      before=broken),
                     raise_errors=False).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.ERROR
    assert session.outcome.error == (
        "RunError: AssistantTemplate(template_id='greet'): before hook "
        "test_a_failing_hook_ends_the_run_naming_the_template.<locals>.broken failed: "
        "KeyError: 'name'")
    assert session.messages == []


def test_a_subclass_calling_super_runs_the_hooks_once() -> None:
    log.clear()

    @attrs.define(slots=True, eq=False)
    class Twice(MessageTemplate):
        def render(self, session: Session) -> Flow:
            yield from super().render(session)
            yield from super().render(session)
            return session

    session = Runner(MockModel([]), Twice("Hi", role="assistant", before=note("once"))).run()
    assert [m.content for m in session.messages] == ["Hi", "Hi"]
    assert log == ["once (0 messages)"]


def test_they_run_under_arun() -> None:
    log.clear()
    template = AssistantTemplate(before=note("before"), after=note("after"))
    asyncio.run(Runner(MockModel(["Hi."]), template).arun())
    assert log == ["before (0 messages)", "after (1 messages)"]


@pytest.mark.parametrize("value", [3, [note("x"), "y"]])
def test_a_hook_that_is_not_callable_is_rejected_when_built(value: Any) -> None:
    with pytest.raises(DefinitionError, match="^" + re.escape(
            "AssistantTemplate: after must be a callable (session) -> None or a list of "
            "them, got ")):
        AssistantTemplate("x", after=value)
