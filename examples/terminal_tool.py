"""A terminal tool: its output is the answer, verbatim, with no further model call.

``formatResult`` has ``terminal=True``: when the model calls it successfully, the tool's
output becomes the assistant's reply exactly as the code wrote it, and the turn ends. Useful
when the form of the answer must be exact. If it fails, the model is told and may try again.

Run it: ``python examples/terminal_tool.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import LinearTemplate, MockModel, SystemTemplate, ToolingTemplate, UserTemplate, tool


@tool
def search_fruit(color: str) -> list[str]:
    """Find fruits of a color.

    Args:
        color: A color, such as "red" or "yellow".
    """
    fruits = {"red": ["Apple", "Cherry"], "yellow": ["Banana", "Lemon"]}
    return fruits.get(color.lower(), [])


@tool(terminal=True)
def formatResult(items: list[str]) -> str:
    """Format items into the final response, as a numbered list.

    Args:
        items: The items, in order.
    """
    if not items:
        raise ValueError("give at least one item")
    return "\n".join(f"{n + 1}. {item}" for n, item in enumerate(items))


template = LinearTemplate([
    SystemTemplate("Answer with formatResult; never write the list yourself."),
    UserTemplate("Name one red and one yellow fruit."),
    ToolingTemplate([search_fruit, formatResult]),
])

mock_model = MockModel([
    "{search_fruit(color='red')} {search_fruit(color='yellow')}",
    "{formatResult(items=[])}",                      # fails: an error result, try again
    "{formatResult(items=['Apple', 'Banana'])}",     # the answer: "1. Apple\n2. Banana"
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
