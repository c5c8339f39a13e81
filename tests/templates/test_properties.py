"""Property tests for the DSL, driven by convo.testing.strategies (STYLE habit 10).

- any template tree, any scripted model: the run ends, within its bounds, with an Outcome;
- an agent turn under any script: it ends within max_iterations, every tool call is answered
  exactly once, injections stay within budget, the status agrees with the last reply;
- any session survives the JSON round-trip.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convo import Message, Runner, RunStatus, ScriptedInterface, Session
from convo.models import FunctionModel, MockModel
from convo.models._script import CallIds, as_message, parse_reply
from convo.templates import LinearTemplate, LoopGuard, SystemTemplate, ToolingTemplate, UserTemplate
from convo.testing import strategies as cst
from convo.tools import EndConversationTool, FinishResponseTool, FinishTaskTool, FinishTool, tool

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

ENDINGS_WITHOUT_TOOLS = {RunStatus.COMPLETED, RunStatus.ENDED, RunStatus.STOPPED,
                         RunStatus.MAX_MESSAGES}


def cycling_model(script: Sequence[str | Message]) -> tuple[FunctionModel, list[Message]]:
    """A FunctionModel answering with the script, round and round; and its replies so far."""
    ids = CallIds()
    answered: list[Message] = []

    def reply(messages: Sequence[Message], tools: Any) -> Message:
        message = as_message(script[len(answered) % len(script)], ids, "script")
        answered.append(message)
        return message

    return FunctionModel(reply), answered


# ---- any tree ----------------------------------------------------------------------------

@PROPERTY
@given(
    tree=cst.template_trees(),
    script=cst.scripts(),
    user=st.lists(cst.texts(max_size=10), max_size=4),
    max_messages=st.integers(1, 60),
)
def test_every_tree_ends_with_an_outcome_within_max_messages(
    tree: Any, script: list[str | Message], user: list[str], max_messages: int,
) -> None:
    model, _ = cycling_model(script)
    session = Runner(model, tree, ScriptedInterface(user), max_messages=max_messages).run()

    outcome = session.outcome
    assert outcome is not None
    assert outcome.status in ENDINGS_WITHOUT_TOOLS
    assert outcome.messages == len(session.messages) <= max_messages
    assert outcome.model_calls == model.calls
    if outcome.status is RunStatus.ENDED and outcome.farewell:
        assert session.messages[-1] == Message("assistant", outcome.farewell)
    if outcome.status is RunStatus.MAX_MESSAGES:
        assert len(session.messages) == max_messages
    assert Session.from_json(session.to_json()) == session


@settings(max_examples=30, deadline=None)
@given(tree=cst.template_trees(), script=cst.scripts(), user=st.lists(cst.texts(max_size=10),
                                                                       max_size=4))
def test_arun_gives_the_same_session_as_run(
    tree: Any, script: list[str | Message], user: list[str],
) -> None:
    sync = Runner(cycling_model(script)[0], tree, ScriptedInterface(user), max_messages=80).run()
    async_ = asyncio.run(Runner(cycling_model(script)[0], tree, ScriptedInterface(user),
                                max_messages=80).arun())
    assert async_.messages == sync.messages
    assert async_.outcome is not None and sync.outcome is not None
    assert async_.outcome.status == sync.outcome.status


# ---- sessions and scripts ----------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(session=cst.sessions())
def test_any_session_survives_the_json_round_trip(session: Session) -> None:
    again = Session.from_json(session.to_json())
    assert again == session
    assert again.to_dict() == session.to_dict()


@settings(max_examples=100, deadline=None)
@given(reply=cst.reply_strings(["echo", "count"]))
def test_every_scripted_reply_parses_to_an_assistant_message(reply: str) -> None:
    message = parse_reply(reply, CallIds())
    assert message.role == "assistant"
    assert "{" not in message.content
    assert len({c.id for c in message.tool_calls}) == len(message.tool_calls)
    if "{" in reply:
        assert 1 <= len(message.tool_calls) <= 3
    else:
        assert message == Message("assistant", reply)


@settings(max_examples=50, deadline=None)
@given(history=cst.histories())
def test_histories_answer_every_tool_call_once(history: list[Message]) -> None:
    assert_calls_answered_once(history)


# ---- the agent turn ------------------------------------------------------------------------

@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: what to say.
    """
    return text


@tool
def count(n: int) -> int:
    """Count one up.

    Args:
        n: the number.
    """
    return n + 1


@tool(terminal=True)
def format_result(text: str) -> str:
    """Format the answer; ends the turn.

    Args:
        text: the answer.
    """
    return f"Result: {text}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


TOOL_NAMES = ["echo", "count", "format_result", "explode"]
FINISH_NAMES = {"finish", "finish_response", "finish_task"}


def assert_calls_answered_once(messages: Sequence[Message]) -> None:
    """Each assistant tool call is followed by exactly one tool message, in call order."""
    answered = 0
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        ids = [c.id for c in message.tool_calls]
        after = messages[i + 1:i + 1 + len(ids)]
        assert [(m.role, m.tool_call_id) for m in after] == [("tool", id_) for id_ in ids], (
            f"message {i}: calls {ids} are answered by {[m.to_dict() for m in after]}")
        answered += len(ids)
    assert sum(m.role == "tool" for m in messages) == answered


@st.composite
def agent_turns(draw: st.DrawFn) -> tuple[ToolingTemplate, list[str | Message]]:
    mode = draw(st.sampled_from(["response", "task"]))
    finish = FinishResponseTool() if mode == "response" else FinishTaskTool()
    template = ToolingTemplate(
        [echo, count, format_result, explode, FinishTool(), EndConversationTool(), finish],
        mode=mode,
        restrict_output=draw(st.booleans()),
        restriction_max_injections=draw(st.integers(0, 3)),
        max_iterations=draw(st.integers(1, 8)),
        loop_guard=draw(st.none() | st.builds(LoopGuard, max_repeats=st.integers(2, 4),
                                              max_empty=st.integers(1, 4))),
    )
    return template, draw(cst.scripts(TOOL_NAMES, deprecated=True, max_size=10))


@PROPERTY
@given(case=agent_turns())
def test_an_agent_turn_always_ends_for_a_reason_that_matches_its_last_reply(
    case: tuple[ToolingTemplate, list[str | Message]],
) -> None:
    turn_template, script = case
    model, answered = cycling_model(script)
    tree = LinearTemplate([SystemTemplate("You are an agent."), UserTemplate("Go."),
                           turn_template])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = Runner(model, tree).run()
    messages = session.messages
    # the deprecated alias warns when it is run, and nothing else does
    answers = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    alias_ran = turn_template.mode == "task" and any(
        c.name == "task_completed" and not answers[c.id].startswith("Not run:")
        for m in messages for c in m.tool_calls)
    assert [str(w.message) for w in caught] == [
        "the tool name 'task_completed' is deprecated; use 'finish_task'"] * len(caught)
    assert bool(caught) == alias_ran
    outcome = session.outcome
    assert outcome is not None and len(session.turns) == 1
    turn = session.turns[0]
    last = answered[-1]

    # bounded
    assert 1 <= turn.iterations == model.calls <= turn_template.max_iterations
    # every call answered exactly once
    assert_calls_answered_once(messages)
    # injections within the budget, and exactly the system messages injected
    budget = turn_template.restriction_max_injections
    injected = sum(m.role == "system" and m.content == turn_template.restriction_message
                   for m in messages)
    assert injected == turn.injections < turn.iterations or injected == turn.injections == 0
    if budget:
        assert turn.injections <= budget
    if not turn_template.restrict_output:
        assert turn.injections == 0
    # the outcome is the turn's
    assert outcome.turn == turn
    assert outcome.status == turn.status
    assert_status_matches_last_reply(turn_template, turn, last, messages)


def assert_status_matches_last_reply(
    template: ToolingTemplate, turn: Any, last: Message, messages: Sequence[Message],
) -> None:
    # the deprecated alias terminates as the tool it names
    called = {"finish_task" if c.name == "task_completed" else c.name for c in last.tool_calls}
    status = turn.status
    if turn.terminated_by is not None:
        assert turn.done and turn.terminated_by in called
    if status is RunStatus.ENDED:
        assert "end_conversation" in called
        assert turn.response in ("Bye!", "Conversation ended.")
        assert messages[-1] == Message("assistant", turn.response)
    elif status is RunStatus.PENDING_REVIEW:
        assert template.mode == "task"
        assert turn.terminated_by == "finish_task"
        assert turn.finish_status in ("done", "partial", "blocked")
    elif status in (RunStatus.MAX_ITERATIONS, RunStatus.ITERATIONS_EXCEEDED):
        assert turn.iterations == template.max_iterations
        assert (status is RunStatus.MAX_ITERATIONS) == (template.mode == "response")
        assert not turn.done
    elif status is RunStatus.LLM_EMPTY_RESPONSE_ERROR:
        assert template.loop_guard is not None
        assert last.content.strip() == "" and not last.tool_calls
    elif status is RunStatus.COMPLETED and not turn.done:
        # a plain-text reply ended the turn
        assert not last.tool_calls
        assert turn.response == last.content
        assert template.mode == "response" or turn.restriction_exhausted
        assert not template.restrict_output or turn.restriction_exhausted
    elif status is RunStatus.COMPLETED:
        # a terminal tool, or the turn's own finish tool
        assert turn.terminated_by in called
        if turn.terminated_by == "format_result":
            assert messages[-1].content.startswith("Result: ")
            assert turn.response == messages[-1].content
        else:
            assert turn.terminated_by in FINISH_NAMES
    elif status is RunStatus.IMPLICIT_COMPLETION:
        assert template.mode == "task" or template.loop_guard is not None
        if template.loop_guard is None:
            assert not last.tool_calls
    else:
        raise AssertionError(f"unexpected turn status {status!r}")
    if turn.restriction_exhausted:
        assert template.restrict_output
        assert template.restriction_max_injections == turn.injections > 0
    if not last.tool_calls and template.loop_guard is None and not template.restrict_output:
        expected = RunStatus.COMPLETED if template.mode == "response" else \
            RunStatus.IMPLICIT_COMPLETION
        assert status == expected


@settings(max_examples=40, deadline=None)
@given(script=cst.scripts(TOOL_NAMES, max_size=6))
def test_a_mock_model_script_with_a_tooling_loop_in_a_user_loop_always_ends(
    script: list[str | Message],
) -> None:
    from convo import LoopTemplate

    agent = ToolingTemplate([echo, count, format_result, EndConversationTool(), FinishTool()],
                            max_iterations=4)
    tree = LoopTemplate([UserTemplate(), agent])
    session = Runner(MockModel(script, repeat_last=True), tree,
                     ScriptedInterface(["a", "b", "c"])).run()
    assert session.outcome is not None
    assert session.outcome.status in (RunStatus.STOPPED, RunStatus.ENDED)
    assert len(session.turns) <= 3
    assert all(t.iterations <= 4 for t in session.turns)
    assert_calls_answered_once(session.messages)
