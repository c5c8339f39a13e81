"""A template as a tool, a tool run from code, and hooks around templates.

- ``ExecuteToolTemplate`` looks the customer's order up before the model sees the
  conversation (no model involved) and keeps it in ``session.state["order"]``.
- ``SubroutineTool`` offers a whole template to the model as one tool: the agent calls
  ``ask_shipping(input="…")``, a shipping specialist with its own tool runs on a session of
  its own, and its last reply is the tool's result. Its messages never reach the main
  conversation; they are on ``session.subroutines`` (and in a transcript, replayed on resume).
- ``before=`` / ``after=`` hooks normalise the user's text and count the turns, without a
  template class of their own.

Run it: ``python examples/order_desk.py`` (uses OpenAI when OPENAI_API_KEY is set).
"""

from convo import (
    ExecuteToolTemplate,
    LinearTemplate,
    LoopTemplate,
    MockModel,
    Session,
    SubroutineTool,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)

ORDERS = {"A1": {"item": "blue mug", "status": "shipped", "carrier": "PostNL",
                 "tracking": "3S123"}}


@tool
def find_order(order_id: str) -> dict[str, str]:
    """Find an order by its id.

    Args:
        order_id: The order id, such as A1.
    """
    return ORDERS.get(order_id.upper(), {"status": "unknown order"})


@tool
def track_parcel(carrier: str, tracking: str) -> str:
    """Ask a carrier where a parcel is.

    Args:
        carrier: The carrier's name.
        tracking: The tracking number.
    """
    return f"{carrier} {tracking}: at the local depot, delivery expected tomorrow"


# The child session starts with the call's system_message (if the agent gave one) and its
# input as a user message; then the template runs: here one agent turn with its own tool.
shipping = SubroutineTool(
    ToolingTemplate([track_parcel]),
    name="ask_shipping", description="Ask the shipping desk where a parcel is.",
    inherit="none", keep="last")


def tidy(session: Session) -> None:
    """Hook: the customer's last words, stripped (kept for the log)."""
    last = session.messages[-1].content if session.messages else ""
    session.state["last_question"] = " ".join(last.split())


def count_turn(session: Session) -> None:
    """Hook: one more turn of the chat."""
    session.state["turns"] = session.state.get("turns", 0) + 1


template = LinearTemplate([
    ExecuteToolTemplate(find_order, arguments=lambda s: {"order_id": s.state["order_id"]},
                        store_as="order"),
    SystemTemplate("You help a customer with order {{ order_id }}: {{ order | tojson }}. "
                   "Ask the shipping desk about deliveries."),
    LoopTemplate([LinearTemplate([UserTemplate(after=tidy), ToolingTemplate([shipping])],
                                 after=count_turn)]),
])

state = {"order_id": "A1"}

mock_model = MockModel([
    "{ask_shipping(input='Where is parcel 3S123 from PostNL?', "
    "system_message='You are the shipping desk. Answer in one sentence.')}",
    # the shipping desk, on its own session
    "{track_parcel(carrier='PostNL', tracking='3S123')}",
    "It is at the local depot and should arrive tomorrow.",
    # the main conversation again
    "Your blue mug is at the local depot and should arrive tomorrow.",
    "You're welcome!",
])

demo_input = ["Where   is my mug?", "Thanks!"]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
