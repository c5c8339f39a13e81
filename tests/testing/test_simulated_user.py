"""SimulatedUser: a model plays the user, with a persona and a goal."""

from __future__ import annotations

import asyncio

import pytest
from testing_kit import fails_saying
from weather_tools import chat

from convo import Message, Runner
from convo.models import FunctionModel, MockModel
from convo.templates import (
    AssistantTemplate,
    EndTemplate,
    IfTemplate,
    LinearTemplate,
    UserTemplate,
)
from convo.testing import SimulatedUser, assert_outcome, assert_transcript

barista = chat("You are a barista.", greeting="Hi! What can I get you?")


def test_the_user_model_sees_the_conversation_with_roles_swapped() -> None:
    user_model = MockModel(["A latte, please.", "Thanks! [DONE]"])
    user = SimulatedUser(user_model, persona="a tired student", goal="order a latte")
    bot_model = MockModel(["One latte.", "You're welcome."])

    session = Runner(bot_model, barista, user).run()

    assert_outcome(session, "stopped")
    assert user.stopped_because == "done"
    assert user.goal_reached
    assert user.replies == ["A latte, please.", "Thanks!"]
    assert_transcript(session, [
        ("system", "You are a barista."), ("assistant", "Hi! What can I get you?"),
        ("user", "A latte, please."), ("assistant", "One latte."),
        ("user", "Thanks!"), ("assistant", "You're welcome."),
    ])
    second = user_model.calls[1].messages
    assert second[0].role == "system"
    assert "Who you are: a tired student" in second[0].content
    assert "Your goal: order a latte" in second[0].content
    assert "[DONE]" in second[0].content
    assert [(m.role, m.content) for m in second[1:]] == [
        ("user", "Hi! What can I get you?"), ("assistant", "A latte, please."),
        ("user", "One latte."),
    ]
    assert user_model.calls[1].tools == ()


def test_a_reply_that_is_only_the_marker_ends_at_once() -> None:
    user = SimulatedUser(MockModel(["[done]"]), persona="p", goal="g")
    session = Runner(MockModel([]), barista, user).run()
    assert_outcome(session, "stopped")
    assert session.messages[-1].content == "Hi! What can I get you?"
    assert user.stopped_because == "done" and user.replies == []


def test_max_turns_stops_a_user_that_never_reaches_its_goal() -> None:
    user = SimulatedUser(MockModel(["Hm?"], repeat_last=True), persona="p", goal="g",
                         max_turns=3)
    session = Runner(MockModel(["What?"], repeat_last=True), barista, user).run()

    assert_outcome(session, "stopped")
    assert user.turns == 3 and user.stopped_because == "max_turns"
    assert not user.goal_reached
    with pytest.raises(AssertionError) as failed:
        user.assert_goal_reached(session)
    assert str(failed.value).splitlines()[:4] == [
        "the simulated user did not reach its goal: it reached max_turns=3 without reaching "
        "its goal",
        "  persona: p",
        "  goal: g",
        "  the run: stopped: the user quit or the run was cancelled (8 messages, 3 model calls)",
    ]


def test_stop_when_ends_the_run_and_counts_as_the_goal() -> None:
    user = SimulatedUser(MockModel(["Latte.", "Cake."]), persona="p", goal="g",
                         stop_when=lambda s: "latte" in s.messages[-1].content.lower())
    session = Runner(MockModel(["One latte."]), barista, user).run()
    assert user.stopped_because == "stop_when" and user.goal_reached
    assert session.messages[-1].content == "One latte."


def test_a_user_who_speaks_first_gets_a_kickoff_and_the_form_prompt() -> None:
    seen: list[list[Message]] = []

    def play(messages: list[Message], tools: object) -> str:
        seen.append(list(messages))
        return "Hello [DONE]"

    tree = LinearTemplate([UserTemplate(description="Your order?"), AssistantTemplate(),
                           UserTemplate()])
    user = SimulatedUser(FunctionModel(play), persona="p", goal="g")
    session = Runner(MockModel(["Hi."]), tree, user).run()

    assert [m.content for m in session.messages] == ["Hello", "Hi."]
    assert seen[0][0].content.endswith("The assistant's form asks: Your order?")
    assert [(m.role, m.content) for m in seen[0][1:]] == [
        ("user", "(The conversation starts. Write your first message.)")]


def test_the_bot_may_end_first() -> None:
    tree = LinearTemplate([UserTemplate(), IfTemplate(lambda s: True, EndTemplate("Bye."))])
    user = SimulatedUser(MockModel(["hi"]), persona="p", goal="g")
    session = Runner(None, tree, user).run()
    assert_outcome(session, "ended", farewell="Bye.")
    assert user.stopped_because is None and not user.goal_reached
    assert user.describe_stop() == "it has not said it was done (1 turns so far)"


def test_the_async_runner_awaits_the_user_model() -> None:
    user = SimulatedUser(MockModel(["Tea.", "[DONE]"]), persona="p", goal="g")
    session = asyncio.run(Runner(MockModel(["Tea it is."]), barista, user).arun())
    assert [m.content for m in session.messages][-2:] == ["Tea.", "Tea it is."]
    assert user.stopped_because == "done"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="max_turns must be at least 1, got 0"):
        SimulatedUser(MockModel([]), persona="p", goal="g", max_turns=0)
    with pytest.raises(TypeError, match=r"model must be a convo model .*, got list"):
        SimulatedUser(["hi"], persona="p", goal="g")  # type: ignore[arg-type]


# -- the fixture, as a user's test file uses it -------------------------------------------------

BOT = """
from convo import AssistantTemplate, LinearTemplate, LoopTemplate, Runner, UserTemplate

bot = LinearTemplate([AssistantTemplate("Hi! What can I get you?"),
                      LoopTemplate([UserTemplate(), AssistantTemplate()])])
"""


def test_the_fixture_takes_a_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BOT + """
def test_order(mock_model, simulated_user):
    user = simulated_user(["A latte.", "Thanks [DONE]"], persona="a student",
                          goal="order a latte")
    session = Runner(mock_model(["Here you go.", "Bye!"]), bot, user).run()
    user.assert_goal_reached(session)
""")
    pytester.runpytest("-W", "error").assert_outcomes(passed=1)


def test_a_user_that_never_reaches_its_goal_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BOT + """
def test_order(mock_model, simulated_user):
    user = simulated_user(["A latte.", "A latte!!", "A LATTE"], persona="an impatient man",
                          goal="order a latte", max_turns=3)
    session = Runner(mock_model(["Sorry?"], repeat_last=True), bot, user).run()
    user.assert_goal_reached(session)
""")
    fails_saying(pytester, [
        "E *AssertionError: the simulated user did not reach its goal: it reached "
        "max_turns=3 without reaching its goal",
        "E *  persona: an impatient man",
        "E *  goal: order a latte",
        "E *  the run: stopped: the user quit or the run was cancelled (7 messages, "
        "3 model calls)",
        "E *The conversation (7 messages):",
        "E *  [[]0] assistant: 'Hi! What can I get you?'",
        "E *  [[]1] user: 'A latte.'",
        "E *  [[]2] assistant: 'Sorry?'",
        "*",
        "E *  [[]6] assistant: 'Sorry?'",
    ])


def test_unused_replies_of_a_scripted_user_model_fail_the_test(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BOT + """
def test_order(mock_model, simulated_user):
    user = simulated_user(["[DONE]", "never said"], persona="p", goal="g")
    Runner(mock_model([]), bot, user).run()
""")
    fails_saying(pytester, [
        "*simulated_user #1: 1 of 2 scripted replies were not used (the model was called "
        "1 times)",
        "*UNUSED reply 2: 'never said'",
    ])
