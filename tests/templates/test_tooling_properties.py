"""Property tests of the agent turn over random scripted model replies.

Whatever the model says (text, valid and broken tool calls, finish calls, empty replies), a
turn ends within ``max_iterations`` model calls, every tool call gets exactly one tool
message, injections stay within the budget, and the status agrees with the last reply.
The strategies are local on purpose (convo.testing.strategies has its own).
"""

from __future__ import annotations

import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from convo import Message, Runner, RunStatus, Session
from convo.models import MockModel
from convo.models._script import CallIds, parse_reply
from convo.templates import LinearTemplate, LoopGuard, SystemTemplate, ToolingTemplate, UserTemplate
from convo.tools import EndConversationTool, FinishResponseTool, FinishTaskTool, FinishTool, tool

PROPERTY = settings(max_examples=100, deadline=None)


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@tool
def fail() -> str:
    """Always fails."""
    raise RuntimeError("nope")


@tool(terminal=True)
def fmt(items: list[str]) -> str:
    """Format the final answer."""
    return "\n".join(items)


WORDS = st.text(alphabet="abcdefgh xyz", max_size=20)

VALID_CALLS = st.one_of(
    WORDS.map(lambda w: f"{{echo(text={w!r})}}"),
    st.lists(WORDS, max_size=3).map(lambda xs: f"{{fmt(items={xs!r})}}"),
)
BROKEN_CALLS = st.sampled_from([
    "{echo(text=3)}", "{echo(words='a')}", "{echo()}", "{nope(x=1)}", "{echo('{bad json')}",
    "{fail()}", "{fmt(items='a')}",
])
FINISH_CALLS = st.sampled_from([
    "{finish()}", "{finish(note='done')}", "{finish_response()}",
    "{finish_response(summary='s')}", "{finish_task('summary text')}",
    "{finish_task(status='partial')}", "{finish_task(status='bogus')}",
    "{task_completed('old name')}", "{end_conversation(message='Bye')}",
    "{end_conversation()}",
])
TEXTS = st.one_of(st.just(""), st.just("   "), st.just("ok"), WORDS,
                  st.sampled_from(["The answer is 42.", "echo: abc", "I need to think more."]))


@st.composite
def replies(draw: st.DrawFn) -> str:
    text = draw(TEXTS)
    calls = draw(st.lists(st.one_of(VALID_CALLS, BROKEN_CALLS, FINISH_CALLS), max_size=3))
    return " ".join([text, *calls]) if calls else text


@st.composite
def turns(draw: st.DrawFn) -> tuple[ToolingTemplate, list[str]]:
    mode = draw(st.sampled_from(["response", "task"]))
    template = ToolingTemplate(
        [echo, fail, fmt, FinishTool(), EndConversationTool(), FinishResponseTool(),
         FinishTaskTool()],
        mode=mode,
        restrict_output=draw(st.booleans()),
        restriction_max_injections=draw(st.integers(0, 3)),
        max_iterations=draw(st.integers(1, 7)),
        loop_guard=draw(st.sampled_from([None, LoopGuard(), LoopGuard(max_repeats=2,
                                                                        max_empty=2)])),
    )
    # one reply per possible model call: the script never runs out
    script = draw(st.lists(replies(), min_size=template.max_iterations,
                           max_size=template.max_iterations))
    return template, script


def _run(template: ToolingTemplate, script: list[str]) -> tuple[Session, MockModel]:
    model = MockModel(script)
    tree = LinearTemplate([SystemTemplate("You are an agent."), UserTemplate("Go."), template])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = Runner(model, tree).run()
    assert {str(w.message) for w in caught} <= {
        "the tool name 'task_completed' is deprecated; use 'finish_task'"}
    return session, model


@PROPERTY
@given(case=turns())
def test_a_turn_ends_within_max_iterations(case: tuple[ToolingTemplate, list[str]]) -> None:
    template, script = case
    session, model = _run(template, script)

    assert session.outcome is not None
    assert len(session.turns) == 1
    turn = session.turns[0]
    assert 1 <= len(model.calls) == turn.iterations <= template.max_iterations
    assert session.outcome.model_calls == len(model.calls)
    assert session.outcome.turn == turn
    assert session.outcome.status == turn.status


@PROPERTY
@given(case=turns())
def test_every_tool_call_gets_exactly_one_tool_message_in_order(
    case: tuple[ToolingTemplate, list[str]],
) -> None:
    template, script = case
    session, _ = _run(template, script)

    messages = session.messages
    answered: list[str] = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            following = messages[i + 1:i + 1 + len(ids)]
            assert [(m.role, m.tool_call_id) for m in following] == [("tool", x) for x in ids]
            assert [m.name for m in following] == [c.name for c in message.tool_calls]
            answered.extend(ids)
    tool_messages = [m.tool_call_id for m in messages if m.role == "tool"]
    assert tool_messages == answered
    assert len(set(answered)) == len(answered)
    # every error result says so, in the text and the metadata
    for m in messages:
        if m.role == "tool" and m.metadata.get("error"):
            assert m.content.startswith(("Error: ", "Not run: "))


@PROPERTY
@given(case=turns())
def test_injections_stay_within_the_budget(case: tuple[ToolingTemplate, list[str]]) -> None:
    template, script = case
    session, _ = _run(template, script)

    turn = session.turns[0]
    injected = [m for m in session.messages[2:] if m.role == "system"]
    assert all(m.content == template.restriction_message for m in injected)
    assert len(injected) == turn.injections
    assert session.messages[0] == Message("system", "You are an agent.")
    if not template.restrict_output:
        assert turn.injections == 0
    if template.restriction_max_injections:
        assert turn.injections <= template.restriction_max_injections
    assert turn.injections <= turn.iterations - 1 or turn.injections == 0
    if turn.restriction_exhausted:
        assert turn.injections == template.restriction_max_injections > 0


def _consistent(template: ToolingTemplate, session: Session, last: Message) -> None:
    turn = session.turns[0]
    status = turn.status
    names = {c.name for c in last.tool_calls}
    guard = template.loop_guard is not None
    limit = RunStatus.MAX_ITERATIONS if template.mode == "response" else \
        RunStatus.ITERATIONS_EXCEEDED
    if turn.done:
        assert status in (RunStatus.COMPLETED, RunStatus.PENDING_REVIEW, RunStatus.ENDED)
        assert turn.terminated_by is not None
        assert turn.terminated_by in names or (
            turn.terminated_by == "finish_task" and "task_completed" in names)
    else:
        assert turn.terminated_by is None
    if status is RunStatus.ENDED:
        assert "end_conversation" in names
        assert session.outcome is not None
        assert session.outcome.farewell in ("Bye", "Conversation ended.")
        assert session.messages[-1] == Message("assistant", session.outcome.farewell)
    elif status is RunStatus.PENDING_REVIEW:
        assert template.mode == "task"
        assert turn.finish_status in ("done", "partial")
    elif status is limit:
        assert turn.iterations == template.max_iterations
    elif status is RunStatus.LLM_EMPTY_RESPONSE_ERROR:
        assert guard and not last.tool_calls and not last.content.strip()
    elif status is RunStatus.IMPLICIT_COMPLETION:
        assert guard or (template.mode == "task" and not template.restrict_output)
    else:
        assert status is RunStatus.COMPLETED
        if not turn.done:
            assert not last.tool_calls
            assert turn.restriction_exhausted or not template.restrict_output
            assert template.mode == "response" or turn.restriction_exhausted
    if not last.tool_calls and status is not limit:
        assert turn.response == last.content
        assert session.messages[-1] == last


@PROPERTY
@given(case=turns())
def test_the_status_agrees_with_the_last_reply(case: tuple[ToolingTemplate, list[str]]) -> None:
    template, script = case
    session, model = _run(template, script)

    ids = CallIds()
    parsed: list[Message] = [parse_reply(s, ids) for s in script]
    given_replies = parsed[:len(model.calls)]
    last = given_replies[-1]
    # every reply the model gave is in the session, in order
    remaining = iter(session.messages)
    assert all(any(m == reply for m in remaining) for reply in given_replies)
    _consistent(template, session, last)


@PROPERTY
@given(case=turns())
def test_sync_and_async_runners_agree(case: tuple[ToolingTemplate, list[str]]) -> None:
    import asyncio

    template, script = case
    sync, _ = _run(template, script)
    tree = LinearTemplate([SystemTemplate("You are an agent."), UserTemplate("Go."), template])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asynchronous = asyncio.run(Runner(MockModel(script), tree).arun())
    assert asynchronous.messages == sync.messages
    assert asynchronous.turns == sync.turns

