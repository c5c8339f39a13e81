"""A support bot in three states: triage, then billing or returns, each with its own tools.

``StateMachineTemplate`` starts in ``triage``. The model moves by calling a ``Transition``
tool (``go_to_billing``, ``go_to_returns``, ``go_to_triage``); a move ends the current state
at once and starts the next one, whose first template adds that state's instructions as a
system message. ``end_conversation`` ends the whole conversation from any state.

Draw the states: ``convo graph examples/support_bot.py``. Run it: ``python
examples/support_bot.py`` (uses OpenAI when OPENAI_API_KEY is set; ``--demo`` plays
``demo_input``).
"""

from convo import (
    AssistantTemplate,
    EndConversationTool,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    StateMachineTemplate,
    SystemTemplate,
    Tool,
    ToolingTemplate,
    Transition,
    UserTemplate,
    tool,
)


@tool
def lookup_invoice(order: str) -> dict[str, object]:
    """Look up the charges of an order.

    Args:
        order: The order number.
    """
    return {"order": order, "charges": [30.0, 30.0], "currency": "USD"}


@tool
def refund(order: str, amount: float) -> str:
    """Refund an amount on an order.

    Args:
        order: The order number.
        amount: How much to give back.
    """
    return f"Refunded {amount:.2f} USD on order {order}."


@tool
def start_return(order: str, item: str) -> str:
    """Open a return and get a shipping label.

    Args:
        order: The order number.
        item: What is sent back.
    """
    return f"Return label RL-{order}-{item.upper()} created."


to_billing = Transition("billing", "The customer has a question about a charge or a refund.")
to_returns = Transition("returns", "The customer wants to send something back.")
to_triage = Transition("triage", "The customer needs something this desk does not handle.")
end = EndConversationTool()


def desk(instructions: str, *tools: Tool) -> LinearTemplate:
    """A state: its instructions once on entry, then the agent answers and the user replies."""
    return LinearTemplate([
        SystemTemplate(instructions),
        LoopTemplate([ToolingTemplate([*tools, end]), UserTemplate()]),
    ])


template = LinearTemplate([
    SystemTemplate("You are the support assistant of Mugs & Co."),
    AssistantTemplate("Hello! How can I help you today?"),
    UserTemplate(),
    StateMachineTemplate({
        "triage": desk("Find out what the customer needs and move to the right desk.",
                        to_billing, to_returns),
        "billing": desk("You are at the billing desk: check charges, refund mistakes.",
                         lookup_invoice, refund, to_returns, to_triage),
        "returns": desk("You are at the returns desk: open returns and send labels.",
                         start_return, to_billing, to_triage),
    }, start="triage"),
])

mock_model = MockModel([
    "{go_to_billing(reason='a double charge')}",                            # triage
    "{lookup_invoice(order='1042')}",                                       # billing
    "{refund(order='1042', amount=30.0)}",
    "You were charged twice; I refunded 30.00 USD on order 1042.",
    "{go_to_returns(reason='return the mug')}",
    "{start_return(order='1042', item='mug')}",                             # returns
    "Your return label is RL-1042-MUG: print it and drop the parcel at any post office.",
    "{end_conversation(message='Glad I could help. Goodbye!')}",
])

demo_input = [
    "I was charged twice for order 1042.",
    "Thanks! I would also like to return the mug from that order.",
    "That's all, thank you!",
]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
