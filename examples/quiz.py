"""A three-question quiz: a counted loop, a ``BreakTemplate`` to give up early, and
``GenerateTemplate`` for the model's questions.

The quiz runs ``exit_loop_count=3`` rounds; typing ``give up`` leaves the loop (only the
loop: the closing message still comes), and the run ends with status ``completed``.

Run it: ``python examples/quiz.py`` (a real model when ``OPENAI_API_KEY`` is set, otherwise
the scripted ``mock_model`` below).
"""

from __future__ import annotations

from convo import (
    AssistantTemplate,
    BreakTemplate,
    GenerateTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    Session,
    SystemTemplate,
    UserTemplate,
)


def gave_up(session: Session) -> bool:
    last = session.last_message
    return last is not None and last.content.strip().lower() == "give up"


template = LinearTemplate([
    SystemTemplate(
        "You are a quiz master for {{ player }}, asking about {{ topic }}. When it is your turn "
        "after the player answered, judge the answer in one short sentence. When it is your turn "
        "otherwise, ask one new short question."
    ),
    AssistantTemplate("Welcome, {{ player }}! Three questions about {{ topic }}. "
                      "Type 'give up' to stop early."),
    LoopTemplate([
        GenerateTemplate(),  # the model asks a question
        UserTemplate(description="Your answer", default="I don't know"),
        IfTemplate(gave_up, BreakTemplate()),
        AssistantTemplate(),  # the model judges the answer
    ], exit_loop_count=3),
    AssistantTemplate("Thanks for playing, {{ player }}!"),
])

state = {"player": "Ada", "topic": "capital cities"}

demo_input = ["Paris", "Tokyo", "Sydney"]
mock_model = MockModel(
    [
        "What is the capital of France?",
        "Correct: Paris!",
        "What is the capital of Japan?",
        "Right, Tokyo.",
        "What is the capital of Australia?",
        "Not quite: it is Canberra.",
    ],
    repeat_last=True,
)


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
