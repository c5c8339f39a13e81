"""What the branch and nested-subroutine tests share (in process and served): the tools that
note each run in ``RAN`` (stamp, add_to_cart, charge), a model that answers "stamp …" with a
call and counts its calls, a template that writes which turn it is, and a served app rebuilt
from its store every request, told things with ``say``.

A test clears ``RAN`` (and ``CALLS``/``SENT``) before it runs, with ``clear()``: the lists are
shared by every test module that imports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from starlette.testclient import TestClient

from convo import Message, Session
from convo._requests import Flow
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import Template
from convo.tools import ToolContext, tool

RAN: list[str] = []  # what the tools ran, in order
CALLS: list[int] = [0]  # how many times stamp_reply was called
SENT: list[list[str]] = []  # what each stamp_reply call was sent (its messages' texts)


def clear() -> None:
    RAN.clear()
    CALLS[0] = 0
    SENT.clear()


@attrs.define(slots=True, eq=False)
class Turns(Template):
    """Which turn it is, in ``state["turn"]`` (the same when replayed); with ``again``, from the
    second turn on also ``state["again"]``: a key no earlier turn wrote."""

    again: bool = attrs.field(default=False, kw_only=True)

    def render(self, session: Session) -> Flow:
        turn = 1 + sum(m.role == "user" for m in session.messages)
        session.state["turn"] = turn
        if self.again and turn > 1:
            session.state["again"] = True
        yield from ()
        return session


@tool
def stamp(context: ToolContext, mark: str) -> str:
    """Stamp a mark."""
    RAN.append(mark)
    context.state.setdefault("marks", []).append(mark)
    return f"stamped {mark}"


@tool
def add_to_cart(context: ToolContext, item: str) -> str:
    """Put an item in the cart."""
    RAN.append(f"add {item}")
    context.state.setdefault("cart", []).append(item)
    return f"added {item}"


@tool
def charge(amount: int) -> str:
    """Charge the customer."""
    RAN.append(f"charge {amount}")
    if amount < 0:
        raise ValueError("a negative amount")
    return f"charged {amount}"


def stamp_reply(messages: Sequence[Message], tools: Any) -> str:
    """"stamp X" -> a ``stamp`` call; a tool's result -> "done: …"; else "re: …"."""
    CALLS[0] += 1
    SENT.append([str(m.content) for m in messages])
    last = messages[-1]
    if last.role == "user" and str(last.content).startswith("stamp "):
        return f"{{stamp(mark='{str(last.content)[6:]}')}}"
    if last.role == "tool":
        return f"done: {last.content}"
    return f"re: {last.content}"


def say(client: TestClient, cid: str, text: str) -> dict[str, Any]:
    """``text`` said in conversation ``cid``; the answer's body (200 asserted)."""
    response = client.post(f"/api/conversations/{cid}/messages", json={"content": text})
    assert response.status_code == 200, response.text
    return dict(response.json())


def served(template: Template, reply: Any, store_url: str, **options: Any) -> TestClient:
    """A client of ``template`` served on ``store_url`` with a fresh ``RAN``/``CALLS``, the
    conversation rebuilt from the store for every request (cache_size=0); ``options`` go to
    ``create_app``."""
    clear()
    return TestClient(create_app(template, FunctionModel(reply), store=store_url,
                                 cache_size=0, **options))
