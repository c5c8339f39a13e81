"""Tools that see the conversation: ToolContext (session, state, call id, events), state
changes recorded in transcripts and restored on resume, without running a tool again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from convo import Event, Runner, ScriptedInterface, Session, ToolDefinitionError
from convo._resume import resume
from convo._transcript import TranscriptWriter, load_transcript
from convo.events import ToolCallEnded
from convo.models import MockModel
from convo.templates import LinearTemplate, LoopTemplate, ToolingTemplate, UserTemplate
from convo.tools import Tool, ToolContext, tool

NOTES = Path(__file__).resolve().parents[1] / "cli_fixtures" / "notes.py"


@attrs.frozen
class Progress(Event):
    text: str


RUNS: list[str] = []


@tool
def remember(ctx: ToolContext, fact: str) -> str:
    """Remember a fact.

    Args:
        fact: What to remember.
    """
    RUNS.append(fact)
    ctx.state["notes"] = [*ctx.state.get("notes", []), fact]
    ctx.emit(Progress(f"{ctx.tool_name} {ctx.call_id} retry={ctx.retry}"))
    return f"{len(ctx.state['notes'])} notes; {len(ctx.session.messages)} messages so far"


def test_the_context_is_not_in_the_schema() -> None:
    assert remember.takes_context
    assert remember.schema()["function"]["parameters"] == {
        "type": "object",
        "properties": {"fact": {"type": "string", "description": "What to remember."}},
        "required": ["fact"],
        "additionalProperties": False,
    }


def test_a_tool_sees_session_state_call_id_and_emits_events() -> None:
    events: list[Event] = []
    model = MockModel(["{remember(fact='milk')} {remember(fact='eggs')}", "Done."])
    session = Runner(model, LinearTemplate([UserTemplate("Note these."),
                                            ToolingTemplate([remember])]),
                     on_event=events.append).run(Session(state={"notes": ["bread"]}))
    assert session.state == {"notes": ["bread", "milk", "eggs"]}
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "2 notes; 2 messages so far", "3 notes; 2 messages so far"]
    # A tool's events reach on_event before its tool message, in call order.
    seen = [e.text if isinstance(e, Progress) else e.call.id for e in events
            if isinstance(e, Progress | ToolCallEnded)]
    assert seen == ["remember call_1 retry=0", "call_1", "remember call_2 retry=0", "call_2"]


def test_async_tools_and_arun_get_the_context_too() -> None:
    @tool
    async def count(ctx: ToolContext) -> int:
        """Count calls."""
        await asyncio.sleep(0)
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        return int(ctx.state["n"])

    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate([count])])
    runner = Runner(MockModel(["{count()} {count()}", "Two."]), template)
    assert asyncio.run(runner.arun()).state == {"n": 2}
    runner = Runner(MockModel(["{count()} {count()}", "Two."]), template)
    assert runner.run().state == {"n": 2}


def test_execute_passes_a_context_given_by_code() -> None:
    ctx = ToolContext(Session(state={}), call=_call("c9"))
    assert remember.execute(ctx, fact="x") == "1 notes; 0 messages so far"
    assert ctx.state == {"notes": ["x"]}
    assert [e for e in ctx.events] == [Progress("remember c9 retry=0")]
    with pytest.raises(TypeError) as info:
        ctx.emit("not an event")  # type: ignore[arg-type]
    assert str(info.value) == ("ToolContext.emit takes an Event (subclass convo.Event), got "
                               "str 'not an event'")


def _call(call_id: str) -> Any:
    from convo import ToolCall

    return ToolCall(call_id, "remember", {})


def test_a_subclass_takes_the_context_with_takes_context() -> None:
    class Counter(Tool):
        name = "counter"
        description = "Counts."
        takes_context = True

        def _execute(self, args: dict[str, Any], context: ToolContext) -> str:  # type: ignore[override]
            context.state["count"] = context.state.get("count", 0) + 1
            return str(context.state["count"])

    session = Runner(MockModel(["{counter()}", "{counter()}", "ok"]),
                     ToolingTemplate([Counter()])).run()
    assert session.state == {"count": 2}


def test_the_context_must_be_the_first_parameter() -> None:
    def late(fact: str, ctx: ToolContext) -> None:
        """Late."""

    with pytest.raises(ToolDefinitionError) as info:
        tool(late)
    assert str(info.value) == ("@tool 'late': the ToolContext must be the first parameter, "
                               "not 'ctx'")


CHAT = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([remember])])])


def test_state_changes_are_recorded_and_restored_on_resume_without_rerunning(
        tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    RUNS.clear()
    try:
        Runner(MockModel(["{remember(fact='milk')}", "Noted.", "{remember(fact='eggs')}",
                          "Noted."]), CHAT, ScriptedInterface(["milk", "eggs"]),
               on_event=writer).run(session)
    finally:
        writer.close()
    assert RUNS == ["milk", "eggs"]
    saved = load_transcript(path)
    assert saved.state == {"notes": ["milk", "eggs"]}

    resumed, session = resume(CHAT, saved)
    writer = TranscriptWriter.append(path, session, saved)
    try:
        Runner(MockModel(["{remember(fact='tea')}", "Noted."]), resumed,
               ScriptedInterface(["tea"]), on_event=writer).run(session)
    finally:
        writer.close()
    assert RUNS == ["milk", "eggs", "tea"]  # the saved calls were not run again
    assert session.state == {"notes": ["milk", "eggs", "tea"]}
    assert [m.content for m in session.messages if m.role == "tool"][-1] == (
        "3 notes; 10 messages so far")
    assert load_transcript(path).state == {"notes": ["milk", "eggs", "tea"]}


def _convo(*args: str, stdin: str, env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-m", "convo", *args], input=stdin, env=env,
                            capture_output=True, text=True, timeout=30, check=True)
    return result.stdout


def test_stateful_tools_across_convo_run_resume(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(HOME=str(tmp_path), CONVO_HISTORY=str(tmp_path / "history"), NO_COLOR="1",
               PYTHONIOENCODING="utf-8")
    path = tmp_path / "t.jsonl"
    first = _convo("run", str(NOTES), "--save", str(path), stdin="remember milk\nremember eggs",
                   env=env)
    assert first.count("(remember ran") == 2
    second = _convo("run", str(NOTES), "--resume", str(path), "--save", str(path),
                    stdin="recall", env=env)
    assert "(remember ran" not in second  # replayed, not run again
    assert "(recall ran)\n  ↳ recall: milk, eggs\nAssistant: Tool says: milk, eggs\n" in second
    assert load_transcript(path).state == {"notes": ["milk", "eggs"]}
