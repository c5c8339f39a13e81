"""The loop guard: a model stuck in a loop is stopped, without wasting more calls.

``LoopGuard`` watches each reply of a turn: the same reply or the same tool calls repeated
``max_repeats`` times in a row, a run of empty or trivial replies, or a reply that only
echoes the last tool result end the turn with a status that says so. Here the model keeps
asking for the same search; the third identical batch is not run, and the turn ends with
``implicit_completion`` after three model calls instead of ``max_iterations`` (20).

Run it: ``python examples/loop_guard.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import (
    FinishTool,
    LinearTemplate,
    LoopGuard,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def search(query: str) -> str:
    """Search the knowledge base.

    Args:
        query: What to look for.
    """
    return f"No results for {query!r}."


template = LinearTemplate([
    SystemTemplate("Answer from the knowledge base; call finish when you are done."),
    UserTemplate("What is the office wifi password?"),
    ToolingTemplate(
        [search, FinishTool()],
        max_iterations=20,
        loop_guard=LoopGuard(max_repeats=3, max_empty=3),
    ),
])

mock_model = MockModel(["{search(query='wifi password')}"] * 3)


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
