"""A math teacher: chats with a student until they say bye, then says goodbye itself.

Shows a system prompt with Jinja over ``session.state``, an endless chat loop, and an
``IfTemplate`` that ends the whole conversation with an ``EndTemplate`` farewell.

Run it: ``python examples/math_teacher.py`` (a real model when ``OPENAI_API_KEY`` is set,
otherwise the scripted ``mock_model`` below). Type ``bye`` to finish, or ``/exit``.
"""

from __future__ import annotations

import re
import sys

from convo import (
    AssistantTemplate,
    EndTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    Session,
    SystemTemplate,
    UserTemplate,
)


def said_bye(session: Session) -> bool:
    """Whether the student's last message says goodbye."""
    last = session.last_message
    return last is not None and last.role == "user" and bool(
        re.search(r"\b(bye|goodbye)\b", last.content, re.IGNORECASE)
    )


template = LinearTemplate([
    SystemTemplate(
        "You are a patient math teacher for {{ student }}, a {{ level }} student. "
        "Explain step by step, check understanding with a short question, keep answers brief."
    ),
    AssistantTemplate("Hi {{ student }}! Shall we practise fractions today? "
                      "Ask me anything, and say bye when you are done."),
    LoopTemplate([
        UserTemplate(),
        IfTemplate(said_bye, EndTemplate("Goodbye! Keep practising a little every day.")),
        AssistantTemplate(),
    ]),
])

state = {"student": "Sam", "level": "middle-school"}

# What a user would type in the demo, and the offline teacher's replies (any input works).
demo_input = ["Yes, fractions please!", "Is it 3/4?", "Thanks, bye!"]
mock_model = MockModel(
    [
        "Let's add 3/4 + 1/8. First write 3/4 in eighths: 3/4 = 6/8. Then 6/8 + 1/8 = 7/8. "
        "Your turn: what is 1/2 + 1/4?",
        "Yes! 1/2 = 2/4, and 2/4 + 1/4 = 3/4: we can only add pieces of the same size.",
        "(I am the offline demo teacher: set OPENAI_API_KEY for real answers.) "
        "Remember: same denominator first, then add the numerators.",
    ],
    repeat_last=True,
)


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
