"""A chat with a real model over the OpenAI API, with a tool and streamed replies.

The model may call ``celsius_to_fahrenheit`` (over the wire, as a Chat Completions tool call)
and ``end_conversation`` when the user says goodbye. Run it:

- ``OPENAI_API_KEY=sk-... python examples/openai_chat.py`` talks to OpenAI (``gpt-4o-mini``,
  or ``CONVO_MODEL``), streaming the replies as they are written;
- ``OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=ollama CONVO_MODEL=llama3.1
  python examples/openai_chat.py`` talks to a local Ollama (any OpenAI-compatible server);
- with no key it runs on the scripted ``mock_model`` below. The test suite runs it with
  ``demo_input`` as a ``ScriptedInterface``.
"""

from __future__ import annotations

import os

from convo import (
    CommandLineRunner,
    EndConversationTool,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    Model,
    Session,
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


def make_model() -> Model:
    """The real model when a key or a server is configured, else the mock."""
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        from convo import OpenAIModel

        return OpenAIModel(os.environ.get("CONVO_MODEL", "gpt-4o-mini"), stream=True)
    print("OPENAI_API_KEY is not set: using the example's mock model.")
    return mock_model


if __name__ == "__main__":
    session = CommandLineRunner(make_model(), template).run(Session())
    assert session.outcome is not None
    print(session.outcome.describe())
