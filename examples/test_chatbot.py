"""Testing a chatbot with convo's pytest fixtures: copy this file next to your own bot.

Run it with ``pytest examples/test_chatbot.py``. The fixtures ``mock_model``,
``scripted_user``, ``simulated_user`` and ``conversation_snapshot`` come with convo (no
conftest needed); each test fails if a scripted reply is left unused, so the script pins the
whole conversation down. The first run of a copy needs ``pytest --convo-update-snapshots``,
which writes the snapshot file (``tests/snapshots/test_chatbot/test_orders_a_coffee.txt``)
that later runs compare with.
"""

from convo import (
    AssistantTemplate,
    EndTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    Runner,
    SystemTemplate,
    UserTemplate,
)
from convo.testing import SmokeModel, assert_model_calls, assert_outcome


def said_bye(session):
    return session.last_message is not None and "bye" in session.last_message.content.lower()


# The bot under test: greets, chats until the user says bye, then says goodbye itself.
chatbot = LinearTemplate([
    SystemTemplate("You are a friendly barista."),
    AssistantTemplate("Hi! What can I get you?"),
    LoopTemplate([
        UserTemplate(),
        IfTemplate(said_bye, EndTemplate("See you soon!")),
        AssistantTemplate(),
    ], exit_loop_count=5),
])


def test_orders_a_coffee(mock_model, scripted_user, conversation_snapshot):
    model = mock_model(["One latte coming up.", "That's 3 euros."])
    user = scripted_user(["A latte, please.", "How much?", "Thanks, bye!"])

    session = Runner(model, chatbot, user).run()

    assert_outcome(session, "ended", farewell="See you soon!")
    assert_model_calls(model, 2)
    conversation_snapshot(session)  # the whole conversation, as the snapshot file has it


def test_user_leaves_without_a_word(mock_model, scripted_user):
    # Running out of user replies is how a scripted user quits: status "stopped".
    session = Runner(mock_model([]), chatbot, scripted_user([])).run()

    assert_outcome(session, "stopped")
    assert session.messages[-1].content == "Hi! What can I get you?"


def test_the_model_sees_the_system_prompt(mock_model, scripted_user):
    model = mock_model(["Sure."])
    Runner(model, chatbot, scripted_user(["Tea?", "bye"])).run()

    first_call = model.calls[0]
    assert first_call.messages[0].content == "You are a friendly barista."
    assert first_call.messages[-1].content == "Tea?"


def test_a_simulated_regular_orders(mock_model, simulated_user):
    # The user's lines come from a model playing "a regular" (a script here; pass
    # OpenAIModel() instead of the list for a live run). "[DONE]" means its goal is reached.
    user = simulated_user(["The usual, please.", "Perfect. [DONE]"], persona="a regular",
                          goal="get the usual")
    session = Runner(mock_model(["One flat white.", "Enjoy!"]), chatbot, user).run()

    user.assert_goal_reached(session)
    assert session.messages[-1].content == "Enjoy!"


def test_smoke(scripted_user):
    # No script at all: SmokeModel answers every model call (and calls every tool, if any).
    session = Runner(SmokeModel(), chatbot, scripted_user(["Hello", "bye"])).run()
    assert_outcome(session, "ended")
