"""A chat with a real model over the OpenAI API, with a tool and streamed replies.

The model may call ``celsius_to_fahrenheit`` (over the wire, as a Chat Completions tool call)
and ``end_conversation`` when the user says goodbye. Run it:

- ``OPENAI_API_KEY=sk-... convo run examples/openai_chat.py`` talks to OpenAI
  (``gpt-4o-mini``; ``--model`` picks another), streaming the replies as they are written;
- ``convo run examples/openai_chat.py --base-url http://localhost:11434/v1 --model llama3.1``
  talks to a local Ollama (any OpenAI-compatible server);
- with no key it runs on the scripted ``mock_model`` below. The test suite runs it with
  ``demo_input`` as a ``ScriptedInterface``. ``python examples/openai_chat.py`` does the same
  as ``convo run``.
"""

from __future__ import annotations

from convo import (
    EndConversationTool,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 2)


template = LinearTemplate([
    SystemTemplate(
        "You are a concise assistant. Use celsius_to_fahrenheit for conversions; call "
        "end_conversation with a short farewell when the user says goodbye."
    ),
    LoopTemplate([
        UserTemplate(description="You (/exit to quit)"),
        ToolingTemplate([celsius_to_fahrenheit, EndConversationTool()]),
    ]),
])

demo_input = ["What is 21 °C in Fahrenheit?", "Thanks, bye!"]
mock_model = MockModel([
    "{celsius_to_fahrenheit(celsius=21)}",
    "21 °C is 69.8 °F.",
    "{end_conversation(message='Goodbye, stay warm!')}",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
