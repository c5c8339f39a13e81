"""Ending the conversation from a tool: the model decides when to say goodbye.

``EndConversationTool`` lets the model end the whole conversation with a farewell. The tool
call gets its tool message, the farewell is appended once as an assistant message, and the
run ends with outcome ``ended``, wherever the ``ToolingTemplate`` sits in the tree.

Run it: ``python examples/end_conversation.py`` (uses OpenAI when OPENAI_API_KEY is set);
type "bye" to leave.
"""

from convo import (
    EndConversationTool,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)

template = LinearTemplate([
    SystemTemplate("You are a helpful assistant. When the user wants to end the "
                   "conversation, use the end_conversation tool with a polite farewell."),
    LoopTemplate([
        UserTemplate(),
        ToolingTemplate([EndConversationTool()]),
    ]),
])

demo_input = ["Hi! What's a good name for a cat?", "Thanks, that's all. Bye!"]

mock_model = MockModel([
    "How about Miso? Short, friendly and easy to call.",
    "Happy to help. {end_conversation(message='Goodbye, and say hi to Miso!')}",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
