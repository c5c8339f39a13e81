"""ToolingTemplate: the agent turn of API.md §4, step by step, plus argument errors, author
errors, per-turn counters, results, events and async tools."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from provider_fakes import FakeProvider

from convo import (
    DefinitionError,
    Message,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    ToolCall,
    ToolDefinitionError,
    TurnResult,
)
from convo._requests import CallModel, CheckGuards, RunTools, ToolRun
from convo.events import (
    Event,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    RestrictionInjected,
    RunEnded,
    ToolCallEnded,
    ToolCallStarted,
    TurnEnded,
)
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
    FinishResponseTool,
    FinishTaskTool,
    FinishTool,
    Tool,
    ToolArgument,
    ToolResult,
    tool,
)

RESTRICTED = Message("system", DEFAULT_RESTRICTION_MESSAGE)


def _tool(call_id: str, name: str, content: str, *, error: bool = False,
          not_run: bool = False) -> Message:
    """A tool message (``not_run``: its tool was never invoked, bad arguments or no tool)."""
    metadata = ({"error": True} if error else {}) | ({"not_run": True} if not_run else {})
    return Message("tool", content, tool_call_id=call_id, name=name, metadata=metadata or None)


def _turn(tools: Sequence[Any], replies: Sequence[str | Message], *,
          events: list[Event] | None = None, system: str | None = None,
          fake: FakeProvider | None = None, **kw: Any) -> tuple[Session, Any]:
    """One agent turn on a MockModel, or on ``fake``'s provider (whose fixture checks that
    the script is used up)."""
    model = MockModel(replies) if fake is None else fake(replies)
    parts: list[Any] = [SystemTemplate(system)] if system else []
    template = LinearTemplate([*parts, UserTemplate("Go."), ToolingTemplate(tools, **kw)])
    session = Runner(model, template, on_event=events.append if events is not None else None,
                     raise_errors=False).run()
    if isinstance(model, MockModel):
        model.assert_complete()
    return session, model


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaput")


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "sunny", "celsius": 22}


# -- step 1: the model sees the messages and the tools' schemas ---------------------------------

def test_the_model_is_called_with_the_messages_and_the_tool_schemas() -> None:
    _, model = _turn([add, FinishTool()], ["Hi there, all good."], system="Be brief.")

    call = model.calls[0]
    assert call.messages == (Message("system", "Be brief."), Message("user", "Go."))
    assert call.tools == (add.schema(), FinishTool().schema())
    assert call.tool_names == ("add", "finish")


def test_a_template_model_overrides_the_runners() -> None:
    own = MockModel(["from the template's model"])
    runner_model = MockModel([])
    session = Runner(runner_model, ToolingTemplate([add], model=own)).run()

    assert session.messages == [Message("assistant", "from the template's model")]
    assert len(own.calls) == 1
    assert runner_model.calls == []


def test_render_yields_requests_without_any_runner() -> None:
    template = ToolingTemplate([add])
    flow = template.render(Session())
    assert next(flow) == CallModel(None, (add.schema(),), guards=())
    reply = Message("assistant", "", tool_calls=(ToolCall("c1", "add", {"a": 2}),))
    call = ToolCall("c1", "add", {"a": 2})
    # No text: no output guard to ask. Each call is put to the guards before its reply is
    # stored, each result before the model sees it (None: nothing changed).
    assert flow.send(reply) == CheckGuards("tool_call", None, {"a": 2, "b": 1}, call=call)
    assert flow.send(None) == reply
    assert flow.send(None) == ToolCallStarted(call)
    request = flow.send(None)
    assert isinstance(request, RunTools)
    # The function's defaults are filled in: the function never sees a missing argument.
    assert [(i.call.id, i.args) for i in request.invocations] == [("c1", {"a": 2, "b": 1})]
    assert flow.send([ToolRun(3)]) == CheckGuards("tool_result", None, "3", call=call)
    assert flow.send(None) == _tool("c1", "add", "3")


# -- step 2: tool calls run in order, one tool message each, then back to the model -------------

def test_parallel_calls_run_in_order_each_answered_once() -> None:
    order: list[int] = []

    @tool
    def note(n: int) -> str:
        """Note a number."""
        order.append(n)
        return f"noted {n}"

    session, model = _turn([note], ["{note(n=1)} {note(n=2)} {note(n=3)}", "All noted now."])

    assert order == [1, 2, 3]
    assert session.messages == [
        Message("user", "Go."),
        Message("assistant", "", tool_calls=tuple(
            ToolCall(f"call_{n}", "note", {"n": n}) for n in (1, 2, 3))),
        _tool("call_1", "note", "noted 1"),
        _tool("call_2", "note", "noted 2"),
        _tool("call_3", "note", "noted 3"),
        Message("assistant", "All noted now."),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="All noted now.",
                                        iterations=2)]
    assert len(model.calls) == 2
    # the second call saw every tool message
    assert model.calls[1].messages[-3:] == tuple(session.messages[2:5])


def test_results_are_json_once_and_strings_as_is() -> None:
    @tool
    def quoted() -> str:
        """Returns JSON text."""
        return '{"already": "json"}'

    @tool
    def wrapped() -> ToolResult:
        """Returns a ToolResult."""
        return ToolResult("plain text", metadata={"source": "cache"})

    session, _ = _turn([weather, quoted, wrapped],
                       ["{weather(city='Paris')} {quoted()} {wrapped()}", "Sunny in Paris."])

    assert session.messages[2:5] == [
        _tool("call_1", "weather", '{"city": "Paris", "sky": "sunny", "celsius": 22}'),
        _tool("call_2", "quoted", '{"already": "json"}'),
        Message("tool", "plain text", tool_call_id="call_3", name="wrapped",
                metadata={"source": "cache"}),
    ]


def test_a_result_that_is_not_json_is_an_error_result() -> None:
    @tool
    def odd() -> Any:
        """Returns an object nothing can write as JSON."""
        return object()

    session, model = _turn([odd], ["{odd()}", "Never mind."])

    assert session.messages[2] == _tool(
        "call_1", "odd",
        "Error: tool 'odd': the tool returned a object, which cannot be sent to the model as "
        "JSON (Unable to serialize unknown type: <class 'object'>); return a str, a ToolResult "
        "or JSON values", error=True)
    assert len(model.calls) == 2


# -- argument errors from the model: a tool message, and the loop goes on ------------------------

ERRORS = [
    ("{add('{bad json')}",
     "Error: the arguments for 'add' are not valid JSON (Expecting property name enclosed in "
     "double quotes: line 1 column 2 (char 1)): got '{bad json'; send a JSON object with a "
     "(integer), b (integer, optional)"),
    ("{add('[1, 2]')}",
     "Error: the arguments for 'add' must be a JSON object, got '[1, 2]'; send an object with "
     "a (integer), b (integer, optional)"),
    ("{add(b=2)}",
     "Error: tool 'add' is missing required argument 'a' (integer); it takes a (integer), "
     "b (integer, optional)"),
    ("{add(a=1, c=3)}",
     "Error: tool 'add' got unexpected argument 'c'; it takes a (integer), b (integer, "
     "optional)"),
    ("{add(a='3')}", "Error: tool 'add' argument 'a' must be integer, got string '3'"),
    ("{add(a=True)}", "Error: tool 'add' argument 'a' must be integer, got boolean True"),
    ("{subtract(a=1)}",
     "Error: there is no tool named 'subtract'; available tools: add, explode"),
    ("{explode()}", "Error: tool 'explode' failed: RuntimeError: kaput"),
]


@pytest.mark.parametrize(("script", "message"), ERRORS)
def test_a_bad_call_becomes_an_error_tool_message_and_the_loop_goes_on(
    script: str, message: str,
) -> None:
    events: list[Event] = []
    session, model = _turn([add, explode], [script, "{add(a=2)}", "It is 3, finally."],
                           events=events)

    name = script[1:script.index("(")]
    assert session.messages[2] == _tool("call_1", name, message, error=True,
                                        not_run=name != "explode")  # explode ran, and raised
    assert session.messages[3:] == [
        Message("assistant", "", tool_calls=(ToolCall("call_2", "add", {"a": 2}),)),
        _tool("call_2", "add", "3"),
        Message("assistant", "It is 3, finally."),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED,
                                        response="It is 3, finally.", iterations=3)]
    assert len(model.calls) == 3
    ended = [e for e in events if isinstance(e, ToolCallEnded)]
    assert [(e.call.id, e.content, e.is_error) for e in ended] == [
        ("call_1", message, True), ("call_2", "3", False)]


def test_broken_calls_forever_end_at_max_iterations() -> None:
    session, model = _turn([add], ["{add(a='x')}", "{add(a='y')}", "{add(a='z')}"],
                           max_iterations=3)

    assert [m.metadata.get("error") for m in session.messages if m.role == "tool"] == [
        True, True, True]
    assert session.turns == [TurnResult(status=RunStatus.MAX_ITERATIONS, iterations=3)]
    assert len(model.calls) == 3


def test_errors_inside_a_batch_do_not_stop_the_other_calls() -> None:
    session, _ = _turn([add, explode], ["{explode()} {add(a=1)} {nope()}", "Two and a half."])

    assert [(m.tool_call_id, m.content, bool(m.metadata)) for m in session.messages[2:5]] == [
        ("call_1", "Error: tool 'explode' failed: RuntimeError: kaput", True),
        ("call_2", "2", False),
        ("call_3", "Error: there is no tool named 'nope'; available tools: add, explode", True),
    ]


# -- author errors: raised when the template is built ------------------------------------------

def test_two_tools_with_one_name_are_rejected_at_build() -> None:
    @tool(name="add")
    def plus(a: int) -> int:
        """Plus."""
        return a

    with pytest.raises(ToolDefinitionError, match=r"two tools are named 'add'"):
        ToolingTemplate([add, plus])
    with pytest.raises(DefinitionError, match=r"two tools are named 'finish'"):
        ToolingTemplate([FinishTool(), FinishTool()])


def test_a_tool_named_like_an_alias_is_rejected_at_build() -> None:
    @tool
    def task_completed() -> str:
        """Clashes with finish_task's alias."""
        return ""

    with pytest.raises(DefinitionError, match=r"two tools are named 'task_completed'"):
        ToolingTemplate([FinishTaskTool(), task_completed], mode="task")


def test_a_non_tool_in_tools_is_rejected_at_build() -> None:
    def plain(a: int) -> int:
        return a

    with pytest.raises(DefinitionError) as info:
        ToolingTemplate([add, plain])  # type: ignore[list-item]
    assert str(info.value).startswith("ToolingTemplate: tools[1] is function <function ")
    assert str(info.value).endswith(
        "expected a Tool (subclass Tool, or decorate a function with @tool) or a toolset such "
        "as an MCPServer")
    with pytest.raises(DefinitionError, match=r"tools\[0\] is type"):
        ToolingTemplate([FinishTool])  # type: ignore[list-item]


def test_a_malformed_tool_is_rejected_at_build() -> None:
    class Nameless(Tool):
        description = "No name."

    class BadType(Tool):
        name = "bad"
        arguments = {"x": ToolArgument("x", "", Nameless)}  # noqa: RUF012

    with pytest.raises(ToolDefinitionError, match="has no name"):
        ToolingTemplate([Nameless()])
    with pytest.raises(ToolDefinitionError, match=r"tool 'bad' argument 'x': cannot describe"):
        ToolingTemplate([BadType()])


@pytest.mark.parametrize(("kw", "message"), [
    ({"mode": "chat"}, "ToolingTemplate: mode must be 'response' or 'task', got 'chat'"),
    ({"max_iterations": 0},
     "ToolingTemplate: max_iterations must be an int >= 1 or None (no limit), got 0"),
    ({"max_iterations": "3"},
     "ToolingTemplate: max_iterations must be an int >= 1 or None (no limit), got '3'"),
    ({"max_iterations": True},
     "ToolingTemplate: max_iterations must be an int >= 1 or None (no limit), got True"),
    ({"restriction_max_injections": -1},
     "ToolingTemplate: restriction_max_injections must be an int >= 0 (0 = unlimited), "
     "got -1"),
    ({"restriction_max_injections": None},
     "ToolingTemplate: restriction_max_injections must be an int >= 0 (0 = unlimited), "
     "got None"),
    ({"loop_guard": 3}, "ToolingTemplate: loop_guard must be a LoopGuard or None, got 3"),
])
def test_bad_settings_are_rejected_at_build(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError) as info:
        ToolingTemplate([add], **kw)
    assert str(info.value) == message


# -- step 3: a reply without tool calls ---------------------------------------------------------

def test_unrestricted_response_mode_completes_with_the_text() -> None:
    session, model = _turn([add], ["The answer is 4."])

    assert session.turns == [TurnResult(status=RunStatus.COMPLETED,
                                        response="The answer is 4.", iterations=1)]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED
    assert len(model.calls) == 1


def test_unrestricted_task_mode_is_an_implicit_completion() -> None:
    session, _ = _turn([add, FinishTaskTool()], ["I think I'm done here."], mode="task")

    assert session.turns == [TurnResult(status=RunStatus.IMPLICIT_COMPLETION,
                                        response="I think I'm done here.", iterations=1)]


def test_restricted_unlimited_injects_until_a_tool_is_called() -> None:
    events: list[Event] = []
    session, model = _turn(
        [add, FinishTool()],
        ["Just text, once.", "Just text, twice.", "Just text, thrice.", "{add(a=1)}",
         "Result: two. {finish()}"],
        system="You are careful.", restrict_output=True, events=events,
    )

    assert session.messages == [
        Message("system", "You are careful."),
        Message("user", "Go."),
        Message("assistant", "Just text, once."), RESTRICTED,
        Message("assistant", "Just text, twice."), RESTRICTED,
        Message("assistant", "Just text, thrice."), RESTRICTED,
        Message("assistant", "", tool_calls=(ToolCall("call_1", "add", {"a": 1}),)),
        _tool("call_1", "add", "2"),
        Message("assistant", "Result: two.", tool_calls=(ToolCall("call_2", "finish", {}),)),
        _tool("call_2", "finish", "Finished"),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED, response="Result: two.",
                                        terminated_by="finish", iterations=5, injections=3,
                                        done=True)]
    assert len(model.calls) == 5
    # the system prompt is never changed: every call starts with the same one
    assert {c.messages[0] for c in model.calls} == {Message("system", "You are careful.")}
    assert [e for e in events if isinstance(e, RestrictionInjected)] == [
        RestrictionInjected(DEFAULT_RESTRICTION_MESSAGE, n) for n in (1, 2, 3)]


def test_a_custom_restriction_message_within_a_budget(provider_model: FakeProvider
                                                            ) -> None:
    session, _ = _turn(
        [FinishTool()], ["Answer: 42, sure.", "Still 42, really."],
        restrict_output=True, restriction_max_injections=1,
        restriction_message="Please call a tool or use 'finish' to complete.",
        fake=provider_model,
    )

    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "Go."),
        ("assistant", "Answer: 42, sure."),
        ("system", "Please call a tool or use 'finish' to complete."),
        ("assistant", "Still 42, really."),
    ]
    assert session.turns == [TurnResult(status=RunStatus.COMPLETED,
                                        response="Still 42, really.", iterations=2,
                                        injections=1, restriction_exhausted=True)]
    assert provider_model.calls == 2


def test_restriction_budget_resets_every_turn() -> None:
    model = MockModel(["First answer, plain.", "First answer again.",
                       "Second answer, plain.", "Second answer again."])
    template = LinearTemplate([
        SystemTemplate("Use tools."),
        LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()], restrict_output=True,
                                                      restriction_max_injections=1)],
                     exit_loop_count=2),
    ])
    session = Runner(model, template, ScriptedInterface(["one", "two"])).run()

    assert [(m.role, m.content) for m in session.messages] == [
        ("system", "Use tools."),
        ("user", "one"),
        ("assistant", "First answer, plain."), ("system", DEFAULT_RESTRICTION_MESSAGE),
        ("assistant", "First answer again."),
        ("user", "two"),
        ("assistant", "Second answer, plain."), ("system", DEFAULT_RESTRICTION_MESSAGE),
        ("assistant", "Second answer again."),
    ]
    expected = [TurnResult(status=RunStatus.COMPLETED, response=r, iterations=2,
                           injections=1, restriction_exhausted=True)
                for r in ("First answer again.", "Second answer again.")]
    assert session.turns == expected
    assert session.outcome is not None
    assert session.outcome.turn == expected[-1]
    assert session.outcome.model_calls == 4
    assert session.messages[0] == Message("system", "Use tools.")
    model.assert_complete()


def test_injections_alone_do_not_trip_the_guard_when_a_tool_follows() -> None:
    session, _ = _turn([FinishTool()], ["", "{finish()}"], restrict_output=True)

    assert session.turns[-1].injections == 1
    assert session.turns[-1].terminated_by == "finish"


# -- step 4: max_iterations ---------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "status"), [("response", RunStatus.MAX_ITERATIONS),
                                              ("task", RunStatus.ITERATIONS_EXCEEDED)])
def test_max_iterations_by_mode(mode: str, status: RunStatus,
                                      provider_model: FakeProvider) -> None:
    session, _ = _turn([add], ["{add(a=1)}", "Adding more. {add(a=2)}", "{add(a=3)}"],
                       mode=mode, max_iterations=3, fake=provider_model)

    assert session.turns == [TurnResult(status=status, response="Adding more.",
                                        iterations=3)]
    assert session.messages[-1] == _tool("call_3", "add", "4")
    assert session.outcome is not None
    assert session.outcome.status is status
    assert session.outcome.model_calls == provider_model.calls == 3


@pytest.mark.parametrize(("mode", "status"), [("response", RunStatus.MAX_ITERATIONS),
                                              ("task", RunStatus.ITERATIONS_EXCEEDED)])
def test_no_injection_at_the_last_allowed_iteration(mode: str, status: RunStatus) -> None:
    events: list[Event] = []
    session, model = _turn([FinishTool()], ["Plain answer one.", "Plain answer two."],
                           mode=mode, restrict_output=True, max_iterations=2, events=events)

    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "Go."), ("assistant", "Plain answer one."),
        ("system", DEFAULT_RESTRICTION_MESSAGE), ("assistant", "Plain answer two.")]
    assert session.turns == [TurnResult(status=status, response="Plain answer two.",
                                        iterations=2, injections=1)]
    assert len(model.calls) == 2
    assert sum(isinstance(e, RestrictionInjected) for e in events) == 1


def test_max_iterations_one_is_a_single_model_call() -> None:
    session, model = _turn([add], ["{add(a=1)}"], max_iterations=1)

    assert session.turns == [TurnResult(status=RunStatus.MAX_ITERATIONS, iterations=1)]
    assert session.messages[-1] == _tool("call_1", "add", "2")
    assert len(model.calls) == 1


# -- results on the session -------------------------------------------------------------------

def test_every_turn_lands_on_session_turns_and_the_outcome_has_the_last(
        provider_model: FakeProvider) -> None:
    model = provider_model(["Hello!", "{add(a=4)}", "Five.", "{finish(note='bye')}"])
    template = LoopTemplate([UserTemplate(), ToolingTemplate([add, FinishTool()])],
                            exit_loop_count=3)
    session = Runner(model, template, ScriptedInterface(["hi", "4+1?", "thanks"])).run()

    assert session.turns == [
        TurnResult(status=RunStatus.COMPLETED, response="Hello!", iterations=1),
        TurnResult(status=RunStatus.COMPLETED, response="Five.", iterations=2),
        TurnResult(status=RunStatus.COMPLETED, terminated_by="finish", note="bye",
                   iterations=1, done=True),
    ]
    assert session.outcome is not None
    assert session.outcome.turn == session.turns[-1]
    assert session.outcome.model_calls == 4
    assert session.outcome.messages == len(session.messages) == 9
    restored = Session.from_json(session.to_json())
    assert restored.turns == session.turns


def test_the_turn_response_is_the_last_non_empty_text_of_the_turn() -> None:
    session, _ = _turn([add, FinishTool()],
                       ["Let me add. {add(a=1)}", "{add(a=2)}", "{finish()}"])

    assert session.turns[-1].response == "Let me add."


# -- events -----------------------------------------------------------------------------------

def test_events_of_a_turn_in_order() -> None:
    events: list[Event] = []
    session, _ = _turn([add, FinishTool()], ["{add(a=1)} {nope()}", "{finish(note='ok')}"],
                       events=events)

    kinds = [type(e).__name__ for e in events if not isinstance(e, MessageAdded)]
    assert kinds == [
        "ModelCallStarted", "ModelCallEnded",
        "ToolCallStarted", "ToolCallStarted", "ToolCallEnded", "ToolCallEnded",
        "ModelCallStarted", "ModelCallEnded",
        "ToolCallStarted", "ToolCallEnded",
        "TurnEnded", "RunEnded",
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [c.call.name for c in started] == ["add", "nope", "finish"]
    ended = [e for e in events if isinstance(e, ToolCallEnded)]
    assert [(e.call.name, e.content, e.is_error) for e in ended] == [
        ("add", "2", False),
        ("nope", "Error: there is no tool named 'nope'; available tools: add, finish", True),
        ("finish", "ok", False),
    ]
    assert [e.call_number for e in events if isinstance(e, ModelCallStarted)] == [1, 2]
    assert [e.message for e in events if isinstance(e, ModelCallEnded)] == [
        session.messages[1], session.messages[4]]
    assert [e.result for e in events if isinstance(e, TurnEnded)] == session.turns
    assert [e.outcome for e in events if isinstance(e, RunEnded)] == [session.outcome]
    added = [e.message for e in events if isinstance(e, MessageAdded)]
    assert added == session.messages


# -- async tools ------------------------------------------------------------------------------

def test_async_tools_run_concurrently_under_arun_results_in_call_order() -> None:
    # Each tool waits for the other to have started: this only finishes if they overlap.
    started: dict[str, asyncio.Event] = {}

    def meeting(name: str, other: str) -> Tool:
        """A tool ``name`` that says it started and waits until ``other`` has."""
        async def meet() -> str:
            for side in (name, other):
                started.setdefault(side, asyncio.Event())
            started[name].set()
            await started[other].wait()
            return f"{name} done"

        return tool(name=name, description=f"{name.title()}.", timeout=5)(meet)

    left, right = meeting("left", "right"), meeting("right", "left")

    model = MockModel(["{left()} {right()}", "Both finished."])
    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate([left, right])])
    session = asyncio.run(Runner(model, template).arun())

    assert session.messages[2:] == [
        _tool("call_1", "left", "left done"),
        _tool("call_2", "right", "right done"),
        Message("assistant", "Both finished."),
    ]
    assert session.outcome is not None
    assert session.outcome.status is RunStatus.COMPLETED


def test_async_and_sync_tools_mix_under_both_runners() -> None:
    @tool
    async def double(x: int) -> int:
        """Double."""
        await asyncio.sleep(0)
        return 2 * x

    replies = ["{double(x=2)} {add(a=2)} {double(x='no')}", "Four and three."]
    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate([double, add])])
    sync = Runner(MockModel(replies), template).run()
    asynchronous = asyncio.run(Runner(MockModel(replies), template).arun())

    expected = [
        _tool("call_1", "double", "4"),
        _tool("call_2", "add", "3"),
        _tool("call_3", "double", "Error: tool 'double' argument 'x' must be integer, got "
              "string 'no'", error=True, not_run=True),
    ]
    assert sync.messages[2:5] == expected
    assert asynchronous.messages == sync.messages
    assert asynchronous.turns == sync.turns


def test_an_async_tool_past_its_timeout_is_an_error_result_under_arun() -> None:
    @tool(timeout=0.01)
    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return "unreachable"

    model = MockModel(["{hang()}", "It timed out."])
    template = LinearTemplate([UserTemplate("Go."), ToolingTemplate([hang])])
    session = asyncio.run(Runner(model, template).arun())

    assert session.messages[2] == _tool(
        "call_1", "hang",
        "Error: tool 'hang' failed: TimeoutError: tool 'hang' timed out after 0.01 s",
        error=True)
    assert session.turns[-1].status is RunStatus.COMPLETED


def test_an_async_tool_can_finish_and_end_under_arun() -> None:
    class AsyncFinish(FinishResponseTool):
        async def _execute(self, args: dict[str, Any]) -> Any:  # type: ignore[override]
            return super()._execute(args)

    model = MockModel(["{finish_response(summary='s')}"])
    session = asyncio.run(Runner(model, ToolingTemplate([AsyncFinish()])).arun())

    assert session.messages[-1] == _tool("call_1", "finish_response",
                                         "Response complete. Summary: s")
    assert session.turns[-1].terminated_by == "finish_response"
