"""convo.testing._assertions: each helper passes on what happened and says what did otherwise."""

from __future__ import annotations

import pytest

from convo import Message, Runner, ScriptError, Session, ToolCall
from convo.models import FunctionModel, MockModel
from convo.templates import AssistantTemplate, EndTemplate, LinearTemplate, UserTemplate
from convo.testing import (
    assert_model_calls,
    assert_outcome,
    assert_tool_called,
    assert_tool_not_called,
    assert_transcript,
    expect,
)
from convo.testing._assertions import tool_calls


def ended_session() -> Session:
    tree = LinearTemplate([UserTemplate("hi"), AssistantTemplate(), EndTemplate("Bye!")])
    return Runner(MockModel(["Hello!"]), tree).run()


def tool_session() -> Session:
    return Session([
        Message("user", "add them"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "add", {"a": 2, "b": 3})]),
        Message("tool", "5", tool_call_id="c1"),
        Message("assistant", "", tool_calls=[ToolCall("c2", "finish", {"note": "ok"})]),
        Message("tool", "Finished", tool_call_id="c2"),
    ])


def test_assert_outcome_passes() -> None:
    session = ended_session()
    assert_outcome(session, "ended", farewell="Bye!", error=None)
    assert_outcome(session, farewell="Bye!")


def test_assert_outcome_shows_what_happened() -> None:
    with pytest.raises(AssertionError) as info:
        assert_outcome(ended_session(), "completed", farewell=None)
    assert str(info.value) == (
        "expected the run to end with status 'completed', farewell None; it ended with "
        "status 'ended', farewell 'Bye!'\n"
        "  (ended: the conversation was ended ('Bye!') (3 messages, 1 model call))\n"
        "The conversation (3 messages):\n"
        "  [0] user: 'hi'\n"
        "  [1] assistant: 'Hello!'\n"
        "  [2] assistant: 'Bye!'"
    )


def test_assert_outcome_on_a_session_never_run() -> None:
    with pytest.raises(AssertionError, match="the session has no outcome"):
        assert_outcome(Session(), "completed")


def test_assert_outcome_rejects_an_unknown_status() -> None:
    with pytest.raises(ValueError, match="unknown run status 'done'; one of 'completed'"):
        assert_outcome(ended_session(), "done")


def test_assert_outcome_error_text() -> None:
    tree = LinearTemplate([AssistantTemplate()])
    session = Runner(MockModel([]), tree, raise_errors=False).run()
    assert_outcome(session, "error", error="ran out of replies")
    with pytest.raises(AssertionError, match="an error containing 'boom'"):
        assert_outcome(session, "error", error="boom")


def test_assert_model_calls() -> None:
    model = MockModel(["a", "b"])
    tree = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
    Runner(model, tree).run()
    assert_model_calls(model, 1)
    with pytest.raises(AssertionError) as info:
        assert_model_calls(model, 2)
    assert str(info.value) == (
        "expected 2 model calls; MockModel(2 replies, 1 calls) was called 1 times\n"
        "  (2 replies scripted)\n"
        "The last call saw:\n"
        "  [0] user: 'hi'"
    )


def test_assert_model_calls_counts_a_function_model() -> None:
    model = FunctionModel(lambda messages, tools: "ok")
    Runner(model, AssistantTemplate()).run()
    assert_model_calls(model, 1)
    with pytest.raises(AssertionError, match="expected 0 model calls"):
        assert_model_calls(model, 0)


def test_assert_tool_called_matches_a_subset_of_arguments() -> None:
    session = tool_session()
    assert assert_tool_called(session, "add", a=2).id == "c1"
    assert assert_tool_called(session, "add", a=2, b=3).id == "c1"
    assert assert_tool_called(session, "finish").id == "c2"
    assert [(i, c.name) for i, c in tool_calls(session)] == [(1, "add"), (3, "finish")]


def test_assert_tool_called_lists_the_calls_made() -> None:
    with pytest.raises(AssertionError) as info:
        assert_tool_called(tool_session(), "add", a=3)
    message = str(info.value)
    assert message.startswith(
        "expected a call of add(a=3); the model made these tool calls:\n"
        '  [1] add({"a": 2, "b": 3})\n'
        '  [3] finish({"note": "ok"})\n'
        "The conversation (5 messages):\n"
    )


def test_assert_tool_not_called() -> None:
    session = tool_session()
    assert_tool_not_called(session, "multiply")
    with pytest.raises(AssertionError, match=r"expected no call of 'add'; found 1:\n  \[1\] add"):
        assert_tool_not_called(session, "add")


def test_assert_transcript_pairs_and_messages() -> None:
    session = ended_session()
    assert_transcript(session, [("user", "hi"), ("assistant", "Hello!"), ("assistant", "Bye!")])
    assert_transcript(session, [Message("user", "hi"), ("assistant", "Hello!"),
                                Message("assistant", "Bye!")])


def test_assert_transcript_fails_with_a_diff() -> None:
    with pytest.raises(AssertionError) as info:
        assert_transcript(ended_session(), [("user", "hi"), ("assistant", "Howdy!")])
    assert str(info.value) == (
        "the conversation differs from the expected transcript:\n"
        "--- expected\n"
        "+++ conversation\n"
        "@@ -1,2 +1,3 @@\n"
        " user: 'hi'\n"
        "-assistant: 'Howdy!'\n"
        "+assistant: 'Hello!'\n"
        "+assistant: 'Bye!'"
    )


def test_expect_gives_its_reply_when_the_conversation_fits() -> None:
    model = MockModel([expect("Hello!", after="hi"), expect("Bye!", after=("user", "bye")),
                       expect("Done.", after=lambda messages: len(messages) == 5)])
    tree = LinearTemplate([UserTemplate("hi"), AssistantTemplate(), UserTemplate("bye"),
                           AssistantTemplate(), UserTemplate("ok"), AssistantTemplate()])
    session = Runner(model, tree).run()
    assert [m.content for m in session.messages[1::2]] == ["Hello!", "Bye!", "Done."]


def test_expect_shows_the_step_that_differed() -> None:
    model = MockModel([expect("Hello!", after="hi"), expect("Bye!", after=("user", "bye"))])
    tree = LinearTemplate([UserTemplate("hi"), AssistantTemplate(), UserTemplate("see you"),
                           AssistantTemplate()])
    with pytest.raises(ScriptError) as info:
        Runner(model, tree).run()
    assert str(info.value) == (
        "the conversation went off script at expect('Bye!', after=('user', 'bye')): it "
        "expected the last message to be user: 'bye', got user: 'see you'.\n"
        "The conversation (3 messages):\n"
        "  [0] user: 'hi'\n"
        "  [1] assistant: 'Hello!'\n"
        "  [2] user: 'see you'"
    )
