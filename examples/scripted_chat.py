"""The smallest chat: a system prompt, then the user and the model take turns until the user
quits (``/exit``, Ctrl-D, or the end of a script), which ends the run with status ``stopped``.

Run it: ``python examples/scripted_chat.py`` (a real model when ``OPENAI_API_KEY`` is set,
otherwise the scripted ``mock_model`` below). The test suite runs it with ``demo_input`` as a
``ScriptedInterface``, the same way you would test your own chat.
"""

from __future__ import annotations

from convo import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    UserTemplate,
)

template = LinearTemplate([
    SystemTemplate("You are a helpful assistant. Answer in one or two sentences."),
    LoopTemplate([
        UserTemplate(description="Say something (/exit to quit)", default="Tell me a fun fact."),
        AssistantTemplate(),
    ]),
])

demo_input = ["Hello!", ""]  # an empty line sends the default, "Tell me a fun fact."
mock_model = MockModel(
    [
        "Hello! How can I help you today?",
        "Octopuses have three hearts.",
        "(This is the offline mock model: set OPENAI_API_KEY to talk to a real one.)",
    ],
    repeat_last=True,
)


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
