"""The runner (API.md §4, §6): outcomes, limits, errors, events, run and arun alike."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import attrs
import pytest
from weather_tools import chat

from convo import (
    DefinitionError,
    Message,
    ModelError,
    Outcome,
    Runner,
    RunStatus,
    ScriptedInterface,
    ScriptError,
    Session,
    TurnResult,
    Usage,
)
from convo._errors import InterfaceError
from convo._requests import Flow
from convo.events import (
    Event,
    MessageAdded,
    ModelCallEnded,
    ModelCallStarted,
    RunEnded,
    TurnEnded,
    UserInput,
)
from convo.models import FunctionModel, MockModel
from convo.models._base import ToolSchemas
from convo.templates import (
    AssistantTemplate,
    EndTemplate,
    GenerateTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)


def _outcome(session: Session) -> Outcome:
    assert session.outcome is not None
    return session.outcome


def _chat() -> LinearTemplate:
    return chat("You teach {{ subject }}.")


def _timeless(session: Session) -> Session:
    """The session with the run's elapsed time zeroed, to compare two runs."""
    outcome = attrs.evolve(_outcome(session), elapsed_s=0.0)
    return Session(session.messages, session.state, turns=session.turns, outcome=outcome)


class _Raise(Template):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        object.__setattr__(self, "_exc", exc)

    def render(self, session: Session) -> Flow:
        raise self._exc  # type: ignore[attr-defined]
        yield


class _Turn(Template):
    def render(self, session: Session) -> Flow:
        yield TurnEnded(TurnResult(status=session.state["status"], response="r", done=True))
        return session


class _Raising:
    """A user interface that raises."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        raise self.exc


# -- how a run ends -------------------------------------------------------------------------------

def test_a_tree_that_runs_to_its_end_is_completed() -> None:
    session = Runner(MockModel(["Four."]), LinearTemplate([UserTemplate("2+2?"),
                                                           AssistantTemplate()])).run()
    outcome = _outcome(session)
    assert (outcome.status, outcome.farewell, outcome.error, outcome.turn) == (
        RunStatus.COMPLETED, None, None, None)
    assert (outcome.messages, outcome.model_calls) == (2, 1)
    assert outcome.elapsed_s >= 0


@pytest.mark.parametrize("status", ["completed", "pending_review", "implicit_completion"])
def test_otherwise_the_status_is_that_of_the_last_turn(status: str) -> None:
    template = LinearTemplate([_Turn(), UserTemplate("after the turn")])
    session = Runner(None, template).run(Session(state={"status": status}))
    outcome = _outcome(session)
    assert outcome.status == status
    assert outcome.turn == TurnResult(status=status, response="r", done=True)
    assert session.turns == [outcome.turn]


def test_end_template_ends_with_its_farewell() -> None:
    template = LoopTemplate([UserTemplate(), IfTemplate(lambda s: s.messages[-1].content == "bye",
                                                        EndTemplate("Goodbye!")),
                             AssistantTemplate()])
    session = Runner(MockModel(["Hi"]), template, ScriptedInterface(["hello", "bye"])).run()
    assert [m.content for m in session.messages] == ["hello", "Hi", "bye", "Goodbye!"]
    assert _outcome(session).status is RunStatus.ENDED
    assert _outcome(session).farewell == "Goodbye!"
    assert _outcome(session).messages == 4


def test_scripted_interactive_chat_is_stopped_when_the_script_runs_out() -> None:
    model = MockModel(["Hi! What shall we learn?", "Fractions are parts of a whole."])
    user = ScriptedInterface(["hello", "what are fractions?"])
    session = Runner(model, LoopTemplate([UserTemplate(), AssistantTemplate()]), user).run()
    assert session.messages == [
        Message("user", "hello"),
        Message("assistant", "Hi! What shall we learn?"),
        Message("user", "what are fractions?"),
        Message("assistant", "Fractions are parts of a whole."),
    ]
    outcome = _outcome(session)
    assert (outcome.status, outcome.error, outcome.messages, outcome.model_calls) == (
        RunStatus.STOPPED, None, 4, 2)
    model.assert_complete()
    user.assert_complete()
    assert user.asked == [None, None, None]  # the third ask ran out


@pytest.mark.parametrize("exc", [EOFError(), KeyboardInterrupt()])
def test_end_of_input_and_ctrl_c_stop_the_run_without_raising(exc: BaseException) -> None:
    session = Session([Message("system", "kept")])
    Runner(None, LinearTemplate([UserTemplate("hi"), UserTemplate()]), _Raising(exc)).run(session)
    assert _outcome(session).status is RunStatus.STOPPED
    assert session.messages == [Message("system", "kept"), Message("user", "hi")]


def test_ctrl_c_stops_arun_too() -> None:
    session = asyncio.run(Runner(None, UserTemplate(), _Raising(KeyboardInterrupt())).arun())
    assert _outcome(session).status is RunStatus.STOPPED


def test_cancelling_arun_stops_the_run_and_propagates() -> None:
    session = Session()

    async def cancel_me(messages: Sequence[Message], tools: ToolSchemas) -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)
        return "never"

    async def main() -> None:
        runner = Runner(FunctionModel(cancel_me), LinearTemplate([UserTemplate("hi"),
                                                                  AssistantTemplate()]))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(runner.arun(session))

    asyncio.run(main())
    assert _outcome(session).status is RunStatus.STOPPED
    assert session.messages == [Message("user", "hi")]


def test_max_messages_stops_a_runaway_loop() -> None:
    model = MockModel(["ok"], repeat_last=True)
    runner = Runner(model, LoopTemplate([UserTemplate("again"), AssistantTemplate()]),
                    max_messages=7)
    session = runner.run()
    assert len(session.messages) == 7
    assert [m.role for m in session.messages] == ["user", "assistant"] * 3 + ["user"]
    outcome = _outcome(session)
    assert (outcome.status, outcome.messages, outcome.model_calls, outcome.error) == (
        RunStatus.MAX_MESSAGES, 7, 4, None)  # the 4th reply would have been message 8


def test_max_messages_counts_the_messages_this_run_adds() -> None:
    session = Session([Message("user", f"old {i}") for i in range(5)])
    Runner(None, LoopTemplate([AssistantTemplate("x")]), max_messages=2).run(session)
    assert len(session.messages) == 7
    assert _outcome(session).status is RunStatus.MAX_MESSAGES


def test_max_messages_is_not_hit_by_a_run_that_fits() -> None:
    session = Runner(None, LoopTemplate([AssistantTemplate("x")], exit_loop_count=3),
                     max_messages=3).run()
    assert _outcome(session).status is RunStatus.COMPLETED


def test_max_messages_must_be_positive() -> None:
    with pytest.raises(DefinitionError) as info:
        Runner(None, UserTemplate("x"), max_messages=0)
    assert str(info.value) == "max_messages must be at least 1, got 0"


# -- errors ---------------------------------------------------------------------------------------

def test_an_error_keeps_the_messages_and_is_re_raised() -> None:
    model = MockModel(["first"])
    session = Session()
    runner = Runner(model, LoopTemplate([UserTemplate("q"), AssistantTemplate()]))
    with pytest.raises(ScriptError) as info:
        runner.run(session)
    assert session.messages == [Message("user", "q"), Message("assistant", "first"),
                                Message("user", "q")]
    outcome = _outcome(session)
    assert outcome.status is RunStatus.ERROR
    assert outcome.error == f"ScriptError: {info.value}"
    assert (outcome.messages, outcome.model_calls) == (3, 2)


def test_raise_errors_false_returns_the_session_with_the_error() -> None:
    boom = ValueError("boom")
    template = LinearTemplate([UserTemplate("hi"), _Raise(boom), UserTemplate("never")])
    events: list[Event] = []
    session = Runner(None, template, on_event=events.append, raise_errors=False).run()
    assert session.messages == [Message("user", "hi")]
    assert _outcome(session).status is RunStatus.ERROR
    assert _outcome(session).error == "ValueError: boom"
    assert events[-1] == RunEnded(_outcome(session))


def test_the_same_exception_object_is_re_raised() -> None:
    boom = ValueError("boom")
    with pytest.raises(ValueError) as info:
        Runner(None, _Raise(boom)).run()
    assert info.value is boom


def test_arun_records_and_re_raises_errors_too() -> None:
    session = Session()
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(Runner(None, LinearTemplate([UserTemplate("hi"), _Raise(ValueError("boom"))]))
                    .arun(session))
    assert session.messages == [Message("user", "hi")]
    assert _outcome(session).status is RunStatus.ERROR


def test_asking_without_a_user_interface_is_an_error() -> None:
    session = Runner(None, UserTemplate(), raise_errors=False).run()
    assert _outcome(session).error == (
        "InterfaceError: the template asks the user for input (a UserTemplate without "
        "content), but the Runner has no user_interface"
    )
    with pytest.raises(InterfaceError):
        Runner(None, UserTemplate()).run()


def test_calling_without_a_model_is_an_error() -> None:
    with pytest.raises(DefinitionError) as info:
        Runner(None, AssistantTemplate()).run()
    assert str(info.value) == (
        "no model to call: give the Runner a model, or the template its own model="
    )


def test_a_model_that_is_not_a_model_is_rejected() -> None:
    with pytest.raises(DefinitionError) as info:
        Runner("gpt-4o", AssistantTemplate())  # type: ignore[arg-type]
    assert str(info.value) == (
        "model must implement the Model protocol (complete/acomplete), got str"
    )


def test_a_model_reply_that_is_not_an_assistant_message_is_an_error() -> None:
    model = FunctionModel(lambda messages, tools: Message("user", "oops"))
    with pytest.raises(ModelError) as info:
        Runner(model, GenerateTemplate()).run()
    assert str(info.value).startswith("the model must return an assistant Message, got Message(")


def test_a_template_yielding_something_else_is_an_error() -> None:
    class Bad(Template):
        def render(self, session: Session) -> Flow:
            yield "hello"  # type: ignore[misc]
            return session

    with pytest.raises(TypeError) as info:
        Runner(None, Bad()).run()
    assert str(info.value) == ("a template yielded 'hello'; expected a Message, an Event or a "
                               "request from convo._requests")


# -- events ---------------------------------------------------------------------------------------

def _events_of(run: str) -> tuple[Session, list[Event]]:
    events: list[Event] = []
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    model = MockModel([Message("assistant", "Hi", metadata={"usage": usage})])
    runner = Runner(model, LinearTemplate([SystemTemplate("sys"), UserTemplate(),
                                           AssistantTemplate(), EndTemplate("Bye")]),
                    ScriptedInterface(["hello"]), on_event=events.append)
    session = runner.run() if run == "run" else asyncio.run(runner.arun())
    return session, events


@pytest.mark.parametrize("run", ["run", "arun"])
def test_events_arrive_in_order(run: str) -> None:
    session, events = _events_of(run)
    hi = session.messages[2]
    assert [type(e) for e in events] == [MessageAdded, UserInput, MessageAdded,
                                         ModelCallStarted, ModelCallEnded, MessageAdded,
                                         MessageAdded, RunEnded]
    assert events[0] == MessageAdded(Message("system", "sys"), 0)
    assert events[1] == UserInput(echoed=False)
    del events[1]
    assert events[1] == MessageAdded(Message("user", "hello"), 1)
    assert events[2] == ModelCallStarted(call_number=1, messages=2, tools=0)
    ended = events[3]
    assert isinstance(ended, ModelCallEnded)
    assert (ended.call_number, ended.message, ended.usage) == (1, hi, Usage(3, 1, 4))
    assert events[4] == MessageAdded(hi, 2)
    assert events[5] == MessageAdded(Message("assistant", "Bye"), 3)
    assert events[6] == RunEnded(_outcome(session))
    assert _outcome(session).usage == Usage(3, 1, 4)


def test_events_a_template_yields_are_passed_on() -> None:
    events: list[Event] = []
    Runner(None, _Turn(), on_event=events.append).run(Session(state={"status": "completed"}))
    assert events[0] == TurnEnded(TurnResult(status="completed", response="r", done=True))
    assert isinstance(events[1], RunEnded)


# -- run and arun ---------------------------------------------------------------------------------

def test_arun_gives_the_same_session_as_run() -> None:
    def build() -> Runner:
        usage = {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}
        model = MockModel(["One.", Message("assistant", "Two.", metadata={"usage": usage}),
                           "{note(text='x')} Three."])
        return Runner(model, _chat(), ScriptedInterface(["a", "b", "c"]))

    by_run = build().run(Session(state={"subject": "math"}))
    by_arun = asyncio.run(build().arun(Session(state={"subject": "math"})))
    assert _timeless(by_arun) == _timeless(by_run)
    assert len(by_run.messages) == 7
    assert _outcome(by_run).status is RunStatus.STOPPED


def test_arun_uses_the_async_entry_points() -> None:
    seen: list[str] = []

    async def reply(messages: Sequence[Message], tools: ToolSchemas) -> str:
        await asyncio.sleep(0)
        return f"async {messages[-1].content}"

    class AsyncUser:
        def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
            raise AssertionError("arun must use aask")

        async def aask(self, session: Session, instruction: str | None,
                       default: str | None) -> str:
            seen.append("aask")
            return "hi"

    template = LinearTemplate([UserTemplate(), AssistantTemplate()])
    session = asyncio.run(Runner(FunctionModel(reply), template, AsyncUser()).arun())
    assert [m.content for m in session.messages] == ["hi", "async hi"]
    assert seen == ["aask"]


def test_run_creates_a_session_when_none_is_given() -> None:
    session = Runner(None, UserTemplate("hi")).run()
    assert session.messages == [Message("user", "hi")]
    assert asyncio.run(Runner(None, UserTemplate("hi")).arun()).messages == session.messages
