"""Stateful tools: tools that keep their notes in ``session.state`` through ``ToolContext``.

A tool whose first parameter is a ``ToolContext`` sees the session, its ``state``, the call
id and an event emitter; the model never sees that parameter. What a tool writes to the state
is saved with the transcript (``convo run --save``) and restored by ``--resume``, without
running the saved calls again. ``ToolRetry`` asks the model to try again, and
``retries=2`` ends the turn after three failed calls in a row.

Run it: ``python examples/notes_agent.py --save notes.jsonl``, then
``python examples/notes_agent.py --resume notes.jsonl --save notes.jsonl``.
"""

from convo import (
    LinearTemplate,
    LoopTemplate,
    MockModel,
    SystemTemplate,
    ToolContext,
    ToolingTemplate,
    ToolRetry,
    UserTemplate,
    tool,
)


@tool(retries=2)
def remember(ctx: ToolContext, fact: str) -> str:
    """Write a fact in the notes.

    Args:
        fact: The fact, as a short sentence.
    """
    if not fact.strip():
        raise ToolRetry("the fact is empty; write it as a short sentence")
    ctx.state["notes"] = [*ctx.state.get("notes", []), fact]
    return f"Noted ({len(ctx.state['notes'])} notes)."


@tool
def recall(ctx: ToolContext) -> list[str]:
    """Everything in the notes."""
    return list(ctx.state.get("notes", []))


template = LinearTemplate([
    SystemTemplate("You keep the user's notes with your tools."),
    LoopTemplate([UserTemplate(), ToolingTemplate([remember, recall])]),
])

state = {"notes": []}
demo_input = ["Note: the boiler was serviced in May.", "What is in my notes?"]

mock_model = MockModel([
    "{remember(fact=' ')}",                                    # ToolRetry: try again
    "{remember(fact='The boiler was serviced in May.')}",
    "Noted.",
    "{recall()}",
    "Your notes: the boiler was serviced in May.",
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
