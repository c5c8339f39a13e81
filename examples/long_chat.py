"""A long-running shop assistant: the conversation grows, what is sent to the model does not.

The file defines ``context``, a ``ContextWindow`` that ``convo run`` and ``convo serve`` apply
to every model call (as ``Runner(..., context=context)`` does): each call is sent the system
prompt, a summary of what was left out, the user's newest question and the newest messages
that fit in 700 tokens — never a tool result without its call. The summary is made once per
cut (not per call) and kept in ``session.internal["context"]``, so ``--save`` writes it to
the transcript and ``--resume`` reuses it. The terminal shows a dim note when history is left out.

The offline model below answers from the messages it is *sent*: watch it forget the early
questions, except through the summary.

Run it: ``convo run examples/long_chat.py`` (add ``--save chat.jsonl`` to keep a transcript,
then ``--resume chat.jsonl`` to go on).
"""

from __future__ import annotations

from collections.abc import Sequence

from convo import (
    ContextWindow,
    FunctionModel,
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)

PRICES = {"tea": 4.5, "coffee": 6.0, "cocoa": 5.25, "honey": 8.0, "jam": 3.75}


@tool
def price(item: str) -> str:
    """The price of an item in the shop.

    Args:
        item: The item's name, e.g. "tea".
    """
    found = PRICES.get(item.strip().lower())
    return f"{item}: {found:.2f} EUR" if found is not None else f"{item}: not sold here"


def shopkeeper(messages: Sequence[Message], tools: object) -> str:
    """An offline stand-in for a model: it sees only what the window sends."""
    if messages[0].content.startswith("You summarise"):  # a summary call
        asked = messages[-1].content.count("user:")
        return f"The customer asked about prices, {asked} more questions; all were answered."
    last = messages[-1]
    if last.role == "tool":
        return f"{last.content}. Anything else?"
    words = [w.strip("?.,!").lower() for w in last.content.split()]
    item = words[words.index("does") + 1] if "does" in words[:-1] else "tea"
    remembered = sum(m.role == "user" for m in messages)
    return f"{{price(item='{item}')}}I can see {remembered} of your messages."


template = LinearTemplate([
    SystemTemplate("You are the assistant of a small grocery. Look prices up with the price "
                   "tool; never guess them."),
    LoopTemplate([
        UserTemplate(),
        ToolingTemplate([price]),
    ]),
])
context = ContextWindow(700, summarize=True)
mock_model = FunctionModel(shopkeeper)
demo_input = [f"What does {item} cost? I am asking for a friend who likes it a lot."
              for item in [*PRICES, "bread", *PRICES]]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
