"""The tiniest chat, offline: a model that echoes you and counts what it remembers.

Its replies come from the conversation itself, so a resumed chat (``convo run ... --resume``)
shows that the saved messages are back: the count goes on where it stopped.

Run it: ``convo run examples/echo_chat.py`` (add ``--save chat.jsonl`` to keep a transcript).
"""

from __future__ import annotations

from collections.abc import Sequence

from convo import (
    AssistantTemplate,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    UserTemplate,
)


def echo(messages: Sequence[Message], tools: object) -> str:
    """Repeat the last user message, and say how many the conversation holds."""
    said = [m.content for m in messages if m.role == "user"]
    return f"You said {said[-1]!r}. That is {len(said)} message(s) from you so far."


template = LinearTemplate([
    SystemTemplate("You are an echo."),
    LoopTemplate([UserTemplate(), AssistantTemplate()]),
])
mock_model = FunctionModel(echo)
demo_input = ["hello", "is anyone there?"]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
