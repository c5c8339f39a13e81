"""The bot of the staff-approval and handoff tests (API.md §19): a ``refund`` an operator
approves, a ``note`` its user approves (both noted in ``ran``), and a handoff to a person; its
model answers by the last message ("refund ID", "note TEXT", "both X", "a person please") and
keeps what each call was sent in ``seen``. ``staff_app`` serves it to ann (a user) and olga
(an operator), whose headers are ``ANN`` and ``OLGA``, with ``ran`` and ``seen`` cleared."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weather_tools import chat_loop

from convo import FunctionModel, HandoffTool, Message, tool
from convo.serve import TokenTable, create_app

ran: list[str] = []
seen: list[list[str]] = []  # what each model call was sent (its messages' texts)


@tool(needs_approval=True, approver="operator")
def refund(order: str) -> str:
    """Refund an order."""
    ran.append(order)
    return f"refunded {order}"


@tool(needs_approval=True)
def note(text: str) -> str:
    """Keep a note."""
    ran.append(f"note {text}")
    return "noted"


def reply(messages: Sequence[Message], tools: Any) -> str:
    seen.append([m.text for m in messages])
    last = messages[-1]
    if last.role == "tool":
        return f"Done: {last.content}"
    if last.content.startswith("refund "):
        return f"{{refund(order='{last.content[7:]}')}}"
    if last.content.startswith("note "):
        return f"{{note(text='{last.content[5:]}')}}"
    if last.content.startswith("both "):
        return f"{{note(text='{last.content[5:]}')}} {{refund(order='{last.content[5:]}')}}"
    if last.content == "a person please":
        return "{handoff(reason='asked for a person')}"
    return f"You said {last.content!r}"


TEMPLATE = chat_loop(refund, note, HandoffTool())

USERS = TokenTable({"t-ann": {"user": "ann"}, "t-olga": {"user": "olga", "role": "operator"}})
ANN = {"Authorization": "Bearer t-ann"}
OLGA = {"Authorization": "Bearer t-olga"}


def staff_app(store: str, **options: Any) -> Any:
    """The bot served on ``store`` to ``USERS``, ``ran`` and ``seen`` cleared; ``options``
    go to ``create_app``."""
    ran.clear()
    seen.clear()
    return create_app(TEMPLATE, FunctionModel(reply), store=store, auth=USERS, **options)
