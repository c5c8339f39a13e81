"""A support bot with staff behind it: an operator approves each refund, and the bot hands the
conversation to a person when it cannot help.

``refund`` is declared with ``needs_approval=True, approver="operator"``: served, the
conversation waits with ``waiting_for: {"type": "approval", "approver": "operator", …}``
until an operator decides (the customer deciding gets 403); in the terminal the person at it
decides, as for any approval. ``HandoffTool()`` is the ``handoff`` tool: the model calls it
and the conversation waits for a person (``waiting_for: {"type": "operator", "reason"}``);
served, the customer's messages are stored and answered by no model, operators answer with
``POST …/operator_messages`` and give the conversation back with ``POST …/handback``; the
bot then goes on with everything said in its history. In the terminal, the person at it
answers as the operator until ``/handback``.

Serve it with a customer and an operator (docs/serving.md, "Handing a conversation to a
person")::

    echo '{"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}}' > users.json
    convo serve examples/staffed_support_bot.py --users users.json

then open http://127.0.0.1:8000/ as the customer (token t-ann) and
http://127.0.0.1:8000/operator as staff (token t-olga); or chat with it: ``convo run
examples/staffed_support_bot.py`` (offline on the mock model below: say "refund A1", or "a
person, please").
"""

import re
from collections.abc import Sequence
from typing import Any

from convo import (
    FunctionModel,
    HandoffTool,
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)

# The bot's name on its pages (the chat page's header and tab, /operator); with no greeting,
# the chat page shows its first prompt ("Ask me anything.", or the file's first_prompt).
title = "Mugs & Co. support"

ORDERS = {"A1": ("a kettle", 25.0), "B2": ("a bicycle", 140.0)}


@tool
def look_up_order(order: str) -> str:
    """Look up an order.

    Args:
        order: the order number, such as A1
    """
    if order not in ORDERS:
        return f"There is no order {order}."
    item, price = ORDERS[order]
    return f"Order {order}: {item}, {price:.2f} EUR, delivered."


@tool(needs_approval=True, approver="operator")
def refund(order: str) -> str:
    """Refund an order in full. A member of staff approves every refund before it is made.

    Args:
        order: the order number
    """
    item, price = ORDERS.get(order, ("nothing", 0.0))
    return f"Refunded {price:.2f} EUR for {item} (order {order})."


template = LinearTemplate([
    SystemTemplate("You are the support assistant of a small shop. Look orders up, refund "
                   "them when asked (staff approve each refund), and hand the conversation to "
                   "a person when the customer asks for one or you cannot help."),
    LoopTemplate([
        UserTemplate(),
        ToolingTemplate([look_up_order, refund, HandoffTool()]),
    ]),
])


def _reply(messages: Sequence[Message], tools: Any) -> str:
    """A scripted shop assistant: enough to try the bot, and to test it, without a key."""
    last = messages[-1]
    if last.role == "tool":
        return last.content if not last.content.startswith("Rejected") else \
            f"Sorry, staff did not approve that refund ({last.content})."
    staff = [m for m in messages if m.role == "assistant" and "author" in m.metadata]
    text = last.text.lower()
    order = re.search(r"\b([a-z]\d)\b", text)
    if "person" in text or "human" in text:
        return "{handoff(reason='the customer asked for a person')}"
    if order and "refund" in text:
        return f"{{refund(order='{order.group(1).upper()}')}}"
    if order:
        return f"{{look_up_order(order='{order.group(1).upper()}')}}"
    if staff:  # back from a handoff: the model sees what staff said
        return f"I'm back. {staff[-1].metadata['author']} told you: {staff[-1].text!r}"
    return "I can look up or refund an order (A1 or B2), or find you a person."


mock_model = FunctionModel(_reply)
demo_input = ["Where is my order A1?", "Please refund order A1", "a person, please"]
demo_approvals = ["y"]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
