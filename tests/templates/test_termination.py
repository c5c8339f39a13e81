"""The termination family of API.md §3, row by row, driven by MockModel scripts (the rows
that take ``provider_model`` also on every provider's wire-level fake).

Each test pins the whole transcript, the turn's result, the run's outcome and the number of
model calls, so a change in what the model sees shows up here.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from provider_fakes import FakeProvider, plain

from convo import (
    Message,
    ReachedEndTemplateException,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    ToolCall,
    TurnResult,
)
from convo._interfaces import EchoMockInterface
from convo._resume import resume
from convo.events import Event, TaskCompleted, TurnEnded
from convo.models import MockModel
from convo.templates import (
    DEFAULT_RESTRICTION_MESSAGE,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import (
    EndConversationTool,
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
    TerminateResponse,
    Tool,
    ToolArgument,
    tool,
)

RESTRICTED = Message("system", DEFAULT_RESTRICTION_MESSAGE)


def _calls(*calls: tuple[str, dict[str, Any]] | ToolCall, first: int = 1) -> tuple[ToolCall, ...]:
    out = []
    for i, c in enumerate(calls, first):
        out.append(c if isinstance(c, ToolCall) else ToolCall(f"call_{i}", c[0], c[1]))
    return tuple(out)


def _asks(content: str, *calls: tuple[str, dict[str, Any]] | ToolCall, first: int = 1) -> Message:
    return Message("assistant", content, tool_calls=_calls(*calls, first=first))


def _tool(call_id: str, name: str, content: str, *, error: bool = False,
          not_run: bool = False) -> Message:
    """A tool message; ``not_run``: its tool was not invoked (its effects are none)."""
    metadata = {**({"error": True} if error else {}), **({"not_run": True} if not_run else {})}
    return Message("tool", content, tool_call_id=call_id, name=name, metadata=metadata)


def _turn(tools: Sequence[Tool], replies: Sequence[str], *, events: list[Event] | None = None,
          fake: FakeProvider | None = None, **kw: Any) -> tuple[Session, Any]:
    """One user message, then one agent turn, on a MockModel or on ``fake``'s provider (whose
    fixture checks that the script is used up)."""
    model = MockModel(replies) if fake is None else fake(replies)
    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate(tools, **kw)])
    session = Runner(model, template, on_event=events.append if events is not None else None,
                     raise_errors=False).run()
    if isinstance(model, MockModel):
        model.assert_complete()
    return session, model


@tool(terminal=True)
def formatResult(items: list[str]) -> str:
    """Format items into the final response.

    Args:
        items: The items, in order.
    """
    return "\n".join(f"{n + 1}. {i}" for n, i in enumerate(items))


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"result for {query}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


# -- TerminateResponse -----------------------------------------------------------------------

class Approve(Tool):
    name = "approve"
    description = "Approve the request."
    arguments = {  # noqa: RUF012
        "reason": ToolArgument("reason", "Why", str, required=False),
    }

    def _execute(self, args: dict[str, Any]) -> TerminateResponse:
        return TerminateResponse(args.get("reason"))


def test_terminate_response_without_message_says_finished_and_ends_the_turn() -> None:
    session, model = _turn([Approve(), lookup], ["Approving. {approve()}"])

    assert session.messages == [
        Message("user", "Go."),
        _asks("Approving.", ("approve", {})),
        # how the turn ended is kept on the message: a resumed run ends it the same way
        Message("tool", "Finished", tool_call_id="call_1", name="approve",
                metadata={"terminated": {"status": "completed"}}),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="Approving.",
                                        terminated_by="approve", iterations=1, done=True)]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.model_calls == len(model.calls) == 1


def test_terminate_response_message_becomes_the_tool_message() -> None:
    session, _ = _turn([Approve()], ["{approve(reason='looks fine')}"])

    assert session.messages[-1] == Message("tool", "looks fine", tool_call_id="call_1",
                                           name="approve",
                                           metadata={"terminated": {"status": "completed"}})
    assert session.turns[-1].terminated_by == "approve"
    assert session.turns[-1].done


class Escalate(Tool):
    name = "escalate"
    description = "Hand the case to a person."
    arguments = {}  # noqa: RUF012
    runs = 0

    def _execute(self, args: dict[str, Any]) -> TerminateResponse:
        Escalate.runs += 1
        return TerminateResponse("Escalated.", status=RunStatus.STOPPED, note="over the limit",
                                 summary="a refund of 900 USD")


def test_a_tool_that_ended_the_turn_ends_it_again_on_resume_without_running() -> None:
    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate([Escalate(), lookup]),
                               UserTemplate(), ToolingTemplate([])])
    Escalate.runs = 0
    first = Runner(MockModel(["{escalate()}"]), template, ScriptedInterface([])).run()
    assert Escalate.runs == 1
    assert first.messages[-1].metadata == {"terminated": {
        "status": "stopped", "note": "over the limit", "summary": "a refund of 900 USD"}}

    model = MockModel(["Hello again."])
    resumed, session = resume(template, Session.from_json(first.to_json()))
    Runner(model, resumed, ScriptedInterface(["Hi"])).run(session)
    assert Escalate.runs == 1
    assert [m.messages[-1].content for m in model.calls] == ["Hi"]  # not "Escalated."
    assert session.messages == [*first.messages, Message("user", "Hi"),
                                Message("assistant", "Hello again.")]
    assert session.turns[0] == first.turns[0] == TurnResult(
        status=RunStatus.STOPPED, response=None, terminated_by="escalate",
        note="over the limit", summary="a refund of 900 USD", iterations=1, done=True)


def test_terminate_response_value() -> None:
    assert TerminateResponse().text == "Finished"
    assert TerminateResponse("Task completed successfully").text == "Task completed successfully"
    assert TerminateResponse().status is RunStatus.COMPLETED


# -- finish ------------------------------------------------------------------------------------

def test_finish_tool_definition() -> None:
    finish = FinishTool()
    assert finish.name == "finish"
    assert finish.description == ("Signal the current task is complete. "
                                  "Call this before ending when output is restricted.")
    params = finish.schema()["function"]["parameters"]
    assert params["properties"]["note"]["type"] == "string"
    assert params["required"] == []
    assert finish.execute() == TerminateResponse(None)
    assert finish.execute(note="all good").text == "all good"


def test_finish_with_a_note_ends_the_turn_with_the_note(provider_model: FakeProvider) -> None:
    session, _ = _turn([lookup, FinishTool()],
                       ["{lookup(query='x')}", "Done. {finish(note='Looked it up')}"],
                       fake=provider_model)

    assert plain(session.messages) == [
        Message("user", "Go."),
        _asks("", ("lookup", {"query": "x"})),
        _tool("call_1", "lookup", "result for x"),
        _asks("Done.", ("finish", {"note": "Looked it up"}), first=2),
        _tool("call_2", "finish", "Looked it up"),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="Done.",
                                        terminated_by="finish", note="Looked it up",
                                        iterations=2, done=True)]
    assert provider_model.calls == 2


def test_seed_finish_under_restricted_output_with_two_injections() -> None:
    # The model answers directly twice; each time a system message asks for a tool; the third
    # time it calls finish. Seed 000 "Restriction with Limited Injections".
    session, model = _turn(
        [FinishTool()],
        ["The answer is 4.", "As I said, 4.", "{finish(note='answered: 4')}"],
        restrict_output=True, restriction_max_injections=2,
    )

    assert session.messages == [
        Message("user", "Go."),
        Message("assistant", "The answer is 4."),
        RESTRICTED,
        Message("assistant", "As I said, 4."),
        RESTRICTED,
        _asks("", ("finish", {"note": "answered: 4"})),
        _tool("call_1", "finish", "answered: 4"),
    ]
    assert session.turns == [TurnResult(
        status=RunStatus.COMPLETED, response="As I said, 4.", terminated_by="finish",
        note="answered: 4", iterations=3, injections=2, done=True)]
    assert len(model.calls) == 3
    # the injected reminder is what the model saw last before its final call
    assert model.calls[2].messages[-1] == RESTRICTED


def test_seed_restriction_budget_runs_out_and_the_text_is_accepted() -> None:
    # Same short answer every time: the budget, not the loop guard, ends the turn.
    session, model = _turn([FinishTool()], ["Paris", "Paris", "Paris"],
                           restrict_output=True, restriction_max_injections=2)

    assert [m.role for m in session.messages] == [
        "user", "assistant", "system", "assistant", "system", "assistant"]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="Paris",
                                        iterations=3, injections=2,
                                        restriction_exhausted=True)]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED
    assert session.outcome.model_calls == len(model.calls) == 3


# -- end_conversation --------------------------------------------------------------------------

def test_end_conversation_tool_definition() -> None:
    end = EndConversationTool()
    assert end.name == "end_conversation"
    assert end.schema()["function"]["parameters"]["required"] == []
    with pytest.raises(ReachedEndTemplateException) as info:
        end.execute(message="Bye!")
    assert info.value.farewell_message == "Bye!"
    with pytest.raises(ReachedEndTemplateException) as info:
        end.execute()
    assert info.value.farewell_message == "Conversation ended."


def test_seed_end_conversation_inside_linear_template() -> None:
    # Seed 003's integration test. The tool call keeps its tool message, so the saved
    # session can be sent to the API again; the farewell follows as one assistant message.
    model = MockModel(["I'll end this conversation now. "
                       "{end_conversation(message='Thanks for chatting!')}"])
    template = LinearTemplate([
        SystemTemplate(content="You can end the conversation using the end_conversation tool."),
        UserTemplate(content="Let's end this chat."),
        ToolingTemplate(tools=[EndConversationTool()]),
        UserTemplate(content="never reached"),
    ])

    session = Runner(model, template, user_interface=EchoMockInterface()).run()

    assert session.messages == [
        Message("system", "You can end the conversation using the end_conversation tool."),
        Message("user", "Let's end this chat."),
        _asks("I'll end this conversation now.",
              ("end_conversation", {"message": "Thanks for chatting!"})),
        _tool("call_1", "end_conversation",
              '{"status": "success", "message": "Thanks for chatting!"}'),
        Message("assistant", "Thanks for chatting!"),
    ]
    assert json.loads(session.messages[3].content) == {"status": "success",
                                                         "message": "Thanks for chatting!"}
    outcome = session.outcome
    assert outcome is not None
    assert outcome.status is RunStatus.ENDED
    assert outcome.farewell == "Thanks for chatting!"
    assert outcome.model_calls == 1
    assert outcome.turn == TurnResult(status=RunStatus.ENDED, response="Thanks for chatting!",
                                      terminated_by="end_conversation", iterations=1, done=True)


def test_seed_end_conversation_inside_a_user_loop(provider_model: FakeProvider) -> None:
    model = provider_model(["Hello! How can I help?",
                            "{end_conversation(message='Goodbye, have a nice day!')}"])
    template = LinearTemplate([
        SystemTemplate("You are a helpful assistant. When the user wants to end the "
                       "conversation, use the end_conversation tool with a polite farewell."),
        LoopTemplate([UserTemplate(), ToolingTemplate(tools=[EndConversationTool()])]),
    ])
    user = ScriptedInterface(["Hi", "That's all, bye"])

    session = Runner(model, template, user).run()

    assert [(m.role, m.content) for m in session.messages[1:]] == [
        ("user", "Hi"),
        ("assistant", "Hello! How can I help?"),
        ("user", "That's all, bye"),
        ("assistant", ""),
        ("tool", '{"status": "success", "message": "Goodbye, have a nice day!"}'),
        ("assistant", "Goodbye, have a nice day!"),
    ]
    farewells = [m for m in session.messages if m.content == "Goodbye, have a nice day!"]
    assert len(farewells) == 1
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.outcome.farewell == "Goodbye, have a nice day!"
    assert session.outcome.model_calls == 2
    assert [t.status for t in session.turns] == [RunStatus.COMPLETED, RunStatus.ENDED]
    user.assert_complete()


def test_end_conversation_without_a_message_uses_the_default_farewell() -> None:
    session, _ = _turn([EndConversationTool()], ["{end_conversation()}"])

    assert session.messages[-2:] == [
        _tool("call_1", "end_conversation",
              '{"status": "success", "message": "Conversation ended."}'),
        Message("assistant", "Conversation ended."),
    ]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.outcome.farewell == "Conversation ended."


class HangUp(Tool):
    """Any tool may end the conversation by raising ReachedEndTemplateException."""

    name = "hang_up"
    description = "Hang up without a word."
    arguments = {}  # noqa: RUF012

    def _execute(self, args: dict[str, Any]) -> Any:
        raise ReachedEndTemplateException()


def test_any_tool_raising_reached_end_ends_the_conversation() -> None:
    session, _ = _turn([HangUp()], ["Hanging up. {hang_up()}"])

    # No farewell: the tool message says so, and no farewell message is appended.
    assert session.messages[-1] == _tool("call_1", "hang_up",
                                         '{"status": "success", "message": null}')
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.outcome.farewell is None
    assert session.turns[-1].response == "Hanging up."


# -- terminal tools ----------------------------------------------------------------------------

def test_seed_terminal_format_result_is_the_response_verbatim() -> None:
    session, model = _turn(
        [lookup, formatResult],
        ["{formatResult(items=['Apple', 'Banana'])}"],
    )

    assert session.messages == [
        Message("user", "Go."),
        _asks("", ("formatResult", {"items": ["Apple", "Banana"]})),
        _tool("call_1", "formatResult", "1. Apple\n2. Banana"),
        Message("assistant", "1. Apple\n2. Banana"),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED,
                                        response="1. Apple\n2. Banana",
                                        terminated_by="formatResult", iterations=1, done=True)]
    assert len(model.calls) == 1  # no extra model call after a terminal tool


def test_terminal_tool_description_tells_the_model_and_the_system_prompt_is_untouched() -> None:
    model = MockModel(["{formatResult(items=['a'])}"])
    template = LinearTemplate([SystemTemplate("Be brief."), UserTemplate("List."),
                               ToolingTemplate([formatResult])])
    Runner(model, template).run()

    description = model.calls[0].tools[0]["function"]["description"]
    assert description == (
        "Format items into the final response. Calling this tool ends your turn: its output "
        "is your response. Do not add text after calling it.")
    assert description.endswith("Do not add text after calling it.")
    assert model.calls[0].messages[0] == Message("system", "Be brief.")
    assert lookup.schema()["function"]["description"] == "Look something up."


def test_a_second_terminal_call_in_a_batch_gets_an_error_and_does_not_run() -> None:
    ran: list[str] = []

    @tool(terminal=True)
    def reply(text: str) -> str:
        """Reply."""
        ran.append(text)
        return text

    session, model = _turn(
        [reply, lookup],
        ["{reply(text='first')} {reply(text='second')} {lookup(query='q')}"],
    )

    assert ran == ["first"]
    assert session.messages[2:] == [
        _tool("call_1", "reply", "first"),
        _tool("call_2", "reply",
              "Error: not run: 'reply' was already called in this batch and ends the turn; "
              "only one terminal tool call is allowed per batch", error=True, not_run=True),
        _tool("call_3", "lookup", "result for q"),
        Message("assistant", "first"),
    ]
    assert session.turns[-1].terminated_by == "reply"
    assert len(model.calls) == 1


def test_a_failing_terminal_tool_is_an_ordinary_error_and_the_loop_goes_on() -> None:
    @tool(terminal=True)
    def respond(items: list[str]) -> str:
        """Respond."""
        if not items:
            raise ValueError("nothing to list")
        return ", ".join(items)

    session, model = _turn([respond], ["{respond(items=[])}", "{respond(items=['x', 'y'])}"])

    assert session.messages[1:] == [
        _asks("", ("respond", {"items": []})),
        _tool("call_1", "respond", "Error: tool 'respond' failed: ValueError: nothing to list",
              error=True),
        _asks("", ("respond", {"items": ["x", "y"]}), first=2),
        _tool("call_2", "respond", "x, y"),
        Message("assistant", "x, y"),
    ]
    assert session.turns[-1] == TurnResult(status=RunStatus.COMPLETED, response="x, y",
                                           terminated_by="respond", iterations=2, done=True)
    assert len(model.calls) == 2


def test_a_terminal_call_with_bad_arguments_is_an_error_and_the_loop_goes_on() -> None:
    session, model = _turn([formatResult], ["{formatResult(items='Apple')}",
                                            "{formatResult(items=['Apple'])}"])

    assert session.messages[2] == _tool(
        "call_1", "formatResult",
        "Error: tool 'formatResult' argument 'items' must be array of string, got string "
        "'Apple'", error=True, not_run=True)
    assert session.messages[-1] == Message("assistant", "1. Apple")
    assert len(model.calls) == 2


# -- finish_response ---------------------------------------------------------------------------

def test_finish_response_ends_a_response_turn() -> None:
    session, model = _turn([lookup, FinishResponseTool()],
                           ["It is 4. {finish_response()}"])

    assert session.messages[-1] == _tool("call_1", "finish_response", "Response complete.")
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="It is 4.",
                                        terminated_by="finish_response", iterations=1,
                                        done=True)]
    assert len(model.calls) == 1


def test_finish_response_with_a_summary() -> None:
    session, _ = _turn([FinishResponseTool()],
                       ["{finish_response(summary='Explained the sum')}"])

    assert session.messages[-1] == _tool("call_1", "finish_response",
                                         "Response complete. Summary: Explained the sum")
    assert session.turns[-1].summary == "Explained the sum"
    assert session.turns[-1].status is RunStatus.COMPLETED


def test_finish_response_in_task_mode_is_an_error_naming_finish_task() -> None:
    session, model = _turn([FinishResponseTool(), FinishTaskTool()],
                           ["{finish_response()}", "{finish_task()}"], mode="task")

    assert session.messages[2] == _tool(
        "call_1", "finish_response",
        "Error: 'finish_response' does not finish a turn in task mode; call 'finish_task' "
        "to finish", error=True, not_run=True)
    assert session.turns[-1].status is RunStatus.PENDING_REVIEW
    assert len(model.calls) == 2


# -- finish_task -------------------------------------------------------------------------------

def test_seed_finish_task_json_partial_is_pending_review() -> None:
    events: list[Event] = []
    session, model = _turn(
        [lookup, FinishTaskTool()],
        ["{lookup(query='login')}",
         """{finish_task('{"summary": "Implemented half the login", "status": "partial"}')}"""],
        mode="task", events=events,
    )

    text = ("Partial progress made. Marked for human review. Summary: Implemented half the "
            "login [FINISH_STATUS:partial]")
    assert session.messages[-2:] == [
        _asks("", ToolCall("call_2", "finish_task", {}, raw_arguments=(
            '{"summary": "Implemented half the login", "status": "partial"}'))),
        _tool("call_2", "finish_task", text),
    ]
    turn = TurnResult(status=RunStatus.PENDING_REVIEW, terminated_by="finish_task",
                      summary="Implemented half the login", finish_status="partial",
                      iterations=2, done=True)
    assert session.turns == [turn]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.PENDING_REVIEW
    assert session.outcome.turn == turn
    assert len(model.calls) == 2
    ended = [e for e in events if isinstance(e, TurnEnded | TaskCompleted)]
    assert ended == [TurnEnded(turn),
                     TaskCompleted("partial", "Implemented half the login",
                                   requires_review=True)]


@pytest.mark.parametrize(("script", "summary", "status", "text"), [
    ("{finish_task('Task completed successfully')}", "Task completed successfully", "done",
     "Task objective achieved. Marked for human review. Summary: Task completed "
     "successfully [FINISH_STATUS:done]"),
    ("{finish_task()}", None, "done",
     "Task objective achieved. Marked for human review. [FINISH_STATUS:done]"),
    ("{finish_task(summary='No API key', status='blocked')}", "No API key", "blocked",
     "Task blocked - cannot proceed. Marked for human review. Summary: No API key "
     "[FINISH_STATUS:blocked]"),
    ("""{finish_task('{"summary": "Implemented the login feature", "status": "done"}')}""",
     "Implemented the login feature", "done",
     "Task objective achieved. Marked for human review. Summary: Implemented the login "
     "feature [FINISH_STATUS:done]"),
    ("{finish_task('{not json')}", "{not json", "done",
     "Task objective achieved. Marked for human review. Summary: {not json "
     "[FINISH_STATUS:done]"),
    ("""{finish_task('"quoted summary"')}""", "quoted summary", "done",
     "Task objective achieved. Marked for human review. Summary: quoted summary "
     "[FINISH_STATUS:done]"),
])
def test_finish_task_forms(script: str, summary: str | None, status: str, text: str,
                          provider_model: FakeProvider) -> None:
    if "finish_task('" in script:
        provider_model.cannot("anthropic", "gemini", why="a tool call's input is a JSON object "
                              "on this provider's wire: a raw argument string cannot be sent")
    session, _ = _turn([FinishTaskTool()], [script], mode="task", fake=provider_model)

    assert session.messages[-1].content == text
    assert session.turns[-1] == TurnResult(
        status=RunStatus.PENDING_REVIEW, terminated_by="finish_task", summary=summary,
        finish_status=status, iterations=1, done=True)


def test_finish_task_with_an_unknown_status_asks_for_one_of_three() -> None:
    session, model = _turn(
        [FinishTaskTool()],
        ["{finish_task(status='finished')}",
         """{finish_task('{"summary": "s", "status": "nearly"}')}""",
         "{finish_task(status='done')}"],
        mode="task",
    )

    error = ("Error: tool 'finish_task' argument 'status' must be one of 'done', 'partial', "
             "'blocked', got string {!r}")
    assert [m.content for m in session.messages if m.role == "tool"] == [
        error.format("finished"), error.format("nearly"),
        "Task objective achieved. Marked for human review. [FINISH_STATUS:done]"]
    assert session.turns[-1].status is RunStatus.PENDING_REVIEW
    assert len(model.calls) == 3


def test_finish_task_in_response_mode_is_an_error_naming_finish_response() -> None:
    session, model = _turn([FinishTaskTool(), FinishResponseTool()],
                           ["{finish_task('done')}", "{finish_response()}"])

    assert session.messages[2] == _tool(
        "call_1", "finish_task",
        "Error: 'finish_task' does not finish a turn in response mode; call "
        "'finish_response' to finish", error=True, not_run=True)
    assert session.turns[-1].status is RunStatus.COMPLETED
    assert session.turns[-1].terminated_by == "finish_response"
    assert len(model.calls) == 2


def test_task_completed_alias_warns_and_still_finishes(caplog: pytest.LogCaptureFixture) -> None:
    message = "the tool name 'task_completed' is deprecated; use 'finish_task'"
    with caplog.at_level(logging.WARNING, logger="convo"), \
            pytest.warns(DeprecationWarning, match=message):
        session, _ = _turn([FinishTaskTool()], ["{task_completed('Wrote the report')}"],
                           mode="task")

    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("convo", logging.WARNING, message)]
    assert session.messages[-1] == _tool(
        "call_1", "task_completed",
        "Task objective achieved. Marked for human review. Summary: Wrote the report "
        "[FINISH_STATUS:done]")
    assert session.turns[-1].status is RunStatus.PENDING_REVIEW
    assert session.turns[-1].terminated_by == "finish_task"
    # the alias is accepted, never advertised
    assert [s["function"]["name"] for s in [FinishTaskTool().schema()]] == ["finish_task"]


def test_finish_task_tool_schema() -> None:
    params = FinishTaskTool().schema()["function"]["parameters"]
    assert params["properties"]["status"]["enum"] == ["done", "partial", "blocked"]
    assert params["properties"]["summary"]["type"] == "string"
    assert params["required"] == []


def test_finish_tool_is_not_a_mode_finish_and_completes_a_task_turn() -> None:
    session, _ = _turn([FinishTool()], ["{finish()}"], mode="task")

    assert session.turns[-1].status is RunStatus.COMPLETED
    assert session.turns[-1].terminated_by == "finish"


# -- precedence inside one batch ---------------------------------------------------------------

def test_precedence_end_beats_terminal_beats_finish_and_every_call_is_answered(
        provider_model: FakeProvider) -> None:
    session, _ = _turn(
        [lookup, formatResult, FinishTool(), EndConversationTool()],
        ["{finish(note='n')} {formatResult(items=['a'])} {end_conversation(message='Bye')} "
         "{lookup(query='z')}"], fake=provider_model,
    )

    assert plain(session.messages[2:]) == [
        _tool("call_1", "finish", "n"),
        _tool("call_2", "formatResult", "1. a"),
        _tool("call_3", "end_conversation", '{"status": "success", "message": "Bye"}'),
        _tool("call_4", "lookup", "result for z"),
        Message("assistant", "Bye"),
    ]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.ENDED
    assert session.turns[-1].terminated_by == "end_conversation"
    assert provider_model.calls == 1


def test_precedence_terminal_beats_finish() -> None:
    session, _ = _turn([formatResult, FinishTool()],
                       ["{finish(note='n')} {formatResult(items=['a', 'b'])}"])

    assert [m.content for m in session.messages[2:]] == ["n", "1. a\n2. b", "1. a\n2. b"]
    assert session.turns[-1] == TurnResult(status=RunStatus.COMPLETED, response="1. a\n2. b",
                                           terminated_by="formatResult", iterations=1,
                                           done=True)


def test_precedence_finish_beats_going_on_even_after_an_error_in_the_batch() -> None:
    session, model = _turn([lookup, FinishTool()],
                           ["{explode()} {lookup(query='q')} {finish()}"])

    assert [m.content for m in session.messages if m.role == "tool"] == [
        "Error: there is no tool named 'explode'; available tools: lookup, finish",
        "result for q",
        "Finished",
    ]
    assert session.turns[-1].terminated_by == "finish"
    assert len(model.calls) == 1


def test_two_finish_calls_in_a_batch_both_answered_the_first_decides() -> None:
    session, _ = _turn([FinishTool()], ["{finish(note='one')} {finish(note='two')}"])

    assert [m.content for m in session.messages if m.role == "tool"] == ["one", "two"]
    assert session.turns[-1].note == "one"


# -- the examples (one per seed scenario) end as their docstrings say --------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    """A fresh copy of an example module (its mock_model unused)."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_example(name: str) -> Session:
    module = _load(name)
    session = Session(state=dict(getattr(module, "state", {})))
    user = ScriptedInterface(getattr(module, "demo_input", []))
    session = Runner(module.mock_model, module.template, user).run(session)
    module.mock_model.assert_complete()
    user.assert_complete()
    return session


def test_example_finish_restricted() -> None:
    session = _run_example("finish_restricted")
    assert session.turns[-1] == TurnResult(
        status=RunStatus.COMPLETED, response="120 euros are 129.60 dollars.",
        terminated_by="finish", note="120 EUR = 129.60 USD at 1.08", iterations=4,
        injections=2, done=True)


def test_example_terminal_tool() -> None:
    session = _run_example("terminal_tool")
    assert session.messages[-1] == Message("assistant", "1. Apple\n2. Banana")
    assert session.outcome is not None
    assert session.outcome.model_calls == 3


def test_example_end_conversation() -> None:
    session = _run_example("end_conversation")
    assert session.outcome is not None
    assert (session.outcome.status, session.outcome.farewell) == (
        RunStatus.ENDED, "Goodbye, and say hi to Miso!")
    assert session.messages[-1] == Message("assistant", "Goodbye, and say hi to Miso!")


def test_example_finish_task() -> None:
    session = _run_example("finish_task")
    turn = session.turns[-1]
    assert (turn.status, turn.finish_status, turn.summary) == (
        RunStatus.PENDING_REVIEW, "partial", "Renamed 2 of 3 files; legacy.ini has no rule")


def test_example_loop_guard() -> None:
    session = _run_example("loop_guard")
    assert session.turns[-1] == TurnResult(
        note="loop guard: the same tool calls 3 times in a row",
        status=RunStatus.IMPLICIT_COMPLETION, iterations=3)
    assert session.messages[-1].content.startswith("Not run: the same tool calls 3 times")
