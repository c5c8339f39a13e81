"""A support bot that asks a person before it refunds an order, on a budget.

``refund`` is declared with ``needs_approval=True``: before each call runs, the user
interface is asked — in the terminal a ``y`` / ``n`` / reason prompt, in a served conversation
an Approve / Reject button, in a test ``ScriptedInterface(approvals=[...])``. A rejection is
the tool message the model sees (``Rejected by the user: <reason>``), and the model goes on.
``limits`` bounds the whole conversation: reaching one ends it with status ``usage_limit``;
with ``tell_model=True`` each model call is also sent what is left of it, in a system note at
the end of the messages (``Budget: 39 of 40 model calls left; 20 of 20 tool calls left.``) that
is never stored in the conversation.

Run it: ``convo run examples/refund_bot.py`` (offline on the mock model below), serve it:
``convo serve examples/refund_bot.py``, or evaluate it against the scenarios of
``refund_bot.eval.yaml``: ``convo eval examples/refund_bot.py examples/refund_bot.eval.yaml``
(offline, ``user_model`` plays the simulated customer and ``judge_model`` grades the rubrics).
"""

import re
from collections.abc import Sequence
from typing import Any

from convo import (
    EndConversationTool,
    FinishTool,
    FunctionModel,
    Limits,
    LinearTemplate,
    LoopTemplate,
    Message,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
    tool,
)

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


@tool(needs_approval=True)
def refund(order: str, reason: str) -> str:
    """Refund an order in full. A person approves every refund before it is made.

    Args:
        order: the order number
        reason: why the customer wants the refund
    """
    item, price = ORDERS[order]
    return f"Refunded {price:.2f} EUR for {item} (order {order})."


template = LinearTemplate([
    SystemTemplate("You are the support assistant of a small shop. Look orders up before you "
                   "answer; refund only when asked to. When the customer says goodbye, end "
                   "the conversation."),
    LoopTemplate([
        UserTemplate(),
        ToolingTemplate([look_up_order, refund, FinishTool(), EndConversationTool()]),
    ]),
])

limits = Limits(model_calls=40, tool_calls=20, tell_model=True)


def _reply(messages: Sequence[Message], tools: Any) -> str:
    """A scripted shop assistant: enough to try the bot, and to test it, without a key."""
    last = [m for m in messages if m.role != "system"][-1]  # the budget note comes last
    if last.role == "tool":
        return f"{last.content} Anything else? {{finish()}}"
    text = last.content.lower()
    order = re.search(r"\b([a-z]\d)\b", text)
    if "bye" in text:
        return "{end_conversation(message='Goodbye, and thank you for shopping with us!')}"
    if order and "refund" in text:
        return f"{{refund(order='{order.group(1).upper()}', reason='asked by the customer')}}"
    if order:
        return f"{{look_up_order(order='{order.group(1).upper()}')}}"
    return "I can look up an order or refund it: tell me its number (A1 or B2). {finish()}"


def _customer(messages: Sequence[Message], tools: Any) -> str:
    """Offline, the model that plays a simulated customer (``convo test``, ``convo eval``):
    it asks after the order its goal names, then says goodbye."""
    order = re.search(r"\b([A-Z]\d)\b", messages[0].content)  # the goal is in the prompt
    if not any(m.role == "assistant" for m in messages):  # its own earlier messages
        return f"Hi, where is my order {order.group(1)}?" if order else "Hi!"
    return "Thanks, bye! [DONE]"


def _judge(messages: Sequence[Message], tools: Any) -> str:
    """Offline, the judge of ``convo eval``: a stand-in for a real model reading the rubric,
    which passes when the customer was told the amount of a refund."""
    if re.search(r"^assistant: Refunded \d+\.\d\d EUR", messages[-1].content, re.MULTILINE):
        return '{"pass": true, "reason": "the customer was told the amount refunded"}'
    return '{"pass": false, "reason": "nobody told the customer how much was refunded"}'


mock_model = FunctionModel(_reply)
user_model = FunctionModel(_customer)
judge_model = FunctionModel(_judge)
demo_input = ["Where is my order A1?", "Please refund order A1", "and refund B2", "bye"]
demo_approvals = ["y", "no, that one was a gift"]


if __name__ == "__main__":
    # The same as `convo run <this file>`: a real model when OPENAI_API_KEY (or a base URL)
    # is set, else mock_model above.
    import sys

    from convo.cli import main

    raise SystemExit(main(["run", __file__, *sys.argv[1:]]))
