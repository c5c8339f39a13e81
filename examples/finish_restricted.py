"""Restricted output: the model must finish through a tool (the `finish` tool).

With ``restrict_output=True`` a reply without a tool call is not accepted: a system message
reminds the model to call a tool, at most ``restriction_max_injections`` times per turn. Here
the scripted model answers directly twice, is reminded twice, and then calls ``finish``.

Run it: ``python examples/finish_restricted.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import (
    FinishTool,
    LinearTemplate,
    MockModel,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)


@tool
def convert(amount: float, rate: float) -> float:
    """Convert an amount of money with an exchange rate.

    Args:
        amount: The amount to convert.
        rate: Units of the target currency per unit of the source currency.
    """
    return round(amount * rate, 2)


template = LinearTemplate([
    SystemTemplate("You convert currencies. Use the convert tool for arithmetic, then call "
                   "finish with your answer as the note."),
    UserTemplate("How much is 120 euros in dollars, at 1.08 dollars per euro?"),
    ToolingTemplate(
        [convert, FinishTool()],
        restrict_output=True,
        restriction_max_injections=2,
    ),
])

mock_model = MockModel([
    "That is about 130 dollars.",                       # no tool: reminded (1 of 2)
    "{convert(amount=120, rate=1.08)}",                 # a tool call: no reminder needed
    "120 euros are 129.60 dollars.",                    # no tool again: reminded (2 of 2)
    "{finish(note='120 EUR = 129.60 USD at 1.08')}",    # ends the turn
])


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
