"""A chat for the command-line tests: a model that answers at once, slowly, or not at all.

The reply to a user message depends on its text: ``slow`` blocks until Ctrl-C (the call is
cancelled), ``stubborn`` ignores the first Ctrl-C too, ``boom`` raises; anything else is
echoed with the number of user messages so far (so a resumed chat shows what it remembers).
"""

import threading

from convo.models import FunctionModel
from convo.templates import (
    AssistantTemplate,
    EndTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    UserTemplate,
)

template = LinearTemplate([
    SystemTemplate("You are a {{ subject }} tutor."),
    LoopTemplate([
        UserTemplate(),
        IfTemplate(lambda s: s.messages[-1].content == "bye", EndTemplate("Goodbye!")),
        AssistantTemplate(),
    ]),
])
state = {"subject": "math"}
demo_input = ["2+2?", "bye"]
other = LinearTemplate([UserTemplate("hi")])
not_a_template = 42


def _reply(messages, tools):
    text = messages[-1].content
    if text in ("slow", "stubborn"):
        try:
            print("(the model is thinking)", flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            if text == "slow":
                raise
            print("(the model ignores Ctrl-C)", flush=True)
            threading.Event().wait()
    if text == "boom":
        raise RuntimeError("the model broke")
    users = sum(m.role == "user" for m in messages)
    return f"You said {text!r} (message {users})"


mock_model = FunctionModel(_reply)
