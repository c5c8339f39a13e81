"""The hops of one approved tool call (issue "Open seams", "One batch, one ending"), and of a
user's message over HTTP ("Serve in rooms"):

    python benchmarks/hops.py            # this checkout (PYTHONPATH=... for another)
    python benchmarks/hops.py --http     # a user's message over HTTP (its hand-offs)
    python benchmarks/hops.py --http --all   # ... every call on the way

From the model's reply carrying the call (sent into the template), through its approval, to
its tool message and the turn's ending (``TurnEnded``): every call from a function defined in
``convo/`` directly to another (its immediate caller; a comprehension is part of the function
it is written in; what attrs-generated code calls, a value's converters and validators, is
the value's own). Prints each caller -> callee once with how often it was taken, then the
number of distinct hops, functions and files. The call: a tool that needs approval, approved
by a ``ScriptedInterface``, whose ``TerminateResponse`` ends the turn.

``--http``: the path of a user's message over HTTP: a served conversation's second message
(``POST /api/conversations/{id}/messages``; the first one warmed it up), a chat bot whose
model answers in plain text, the memory store, through ``httpx.ASGITransport``. A hop here is
a hand-off of the message: a call from a function of ``convo/`` to another that is given the
message in one of the shapes it takes on its way (the ASGI request it arrives in, the
Starlette ``Request``, the parsed body, its text, the user's ``Message``, the messages or the
``Session`` holding it; as an argument, or one level inside one: a list, a tuple, a dict),
from the ASGI app's call to its response (which shows the message again). That is what the
issue "Open seams" counts ("the modules and hand-offs along the message's path"); a call that
is not given the message (who the caller is, the lease, the store's bookkeeping, the events
of the turn) is work done beside its path. ``--http --all`` counts every call on the way, as
the default mode does.
"""

from __future__ import annotations

import collections
import os
import sys
from typing import Any

import convo
from convo import (
    LinearTemplate,
    MockModel,
    Runner,
    ScriptedInterface,
    TerminateResponse,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo._run import answerer as answerer
from convo.events import Event, TurnEnded

ROOT = os.path.dirname(convo.__file__)
COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<genexpr>", "<setcomp>")


@tool(needs_approval=True)
def refund(order: str) -> TerminateResponse:
    """Refund an order."""
    return TerminateResponse(f"refunded {order}")


def _name(frame: Any) -> str:
    code = frame.f_code
    return f"{os.path.relpath(code.co_filename, ROOT)}:{code.co_qualname}"


def hops() -> collections.Counter[tuple[str, str]]:
    edges: collections.Counter[tuple[str, str]] = collections.Counter()
    on = [False]

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not on[0] or not code.co_filename.startswith(ROOT) \
                or code.co_name in COMPREHENSIONS:
            return
        back = frame.f_back
        while back is not None and back.f_code.co_name in COMPREHENSIONS:
            back = back.f_back
        if back is not None and back.f_code.co_filename.startswith(ROOT):
            edges[(_name(back), _name(frame))] += 1

    replied = answerer.LiveAnswerer.replied

    def start(self: Any, reply: Any, started: float) -> Any:  # the reply with the call
        answered = replied(self, reply, started)
        on[0] = bool(reply.tool_calls)
        return answered

    def stop(event: Event) -> None:
        if isinstance(event, TurnEnded):
            on[0] = False

    answerer.LiveAnswerer.replied = start  # type: ignore[method-assign]
    template = LinearTemplate([UserTemplate("Refund A1"), ToolingTemplate([refund])])
    runner = Runner(MockModel(["{refund(order='A1')}"]), template,
                    ScriptedInterface([], approvals=[True]), on_event=stop)
    sys.setprofile(profile)
    try:
        session = runner.run()
    finally:
        sys.setprofile(None)
        answerer.LiveAnswerer.replied = replied  # type: ignore[method-assign]
    assert session.messages[-1].content == "refunded A1", session.messages
    return edges


def http_hops() -> collections.Counter[tuple[str, str]]:
    import asyncio
    import threading

    import httpx

    from convo import FunctionModel, GenerateTemplate, LoopTemplate
    from convo._messages import Message
    from convo._session import Session
    from convo.serve import create_app

    edges: collections.Counter[tuple[str, str]] = collections.Counter()
    said = "Hi again"

    def carries(value: Any, depth: int = 0) -> bool:
        """Whether ``value`` is the message, in one of its shapes, or holds it."""
        kind = value.__class__
        if kind is str:
            return value == said
        if kind is Message:  # (getattr: a message's own __init__ is given it unset)
            return getattr(value, "role", None) == "user" \
                and getattr(value, "content", None) == said
        if kind is Session:
            return any(carries(m, depth) for m in value.messages[-3:])
        if depth:
            return False
        if kind.__name__ == "Request" and hasattr(value, "scope"):  # Starlette's
            return carries(value.scope)
        if isinstance(value, dict):
            if value.get("type") == "http" and value.get("method") == "POST":  # ASGI's
                return str(value.get("path", "")).endswith("/messages")
            return any(carries(v, 1) for v in value.values())
        if isinstance(value, list | tuple):
            return any(carries(v, 1) for v in value[-5:])
        return False

    def given(frame: Any) -> bool:
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) \
            + bool(code.co_flags & 8)  # *args, **kwargs
        values = frame.f_locals
        return any(carries(values.get(name)) for name in code.co_varnames[:count])

    every = "--all" in sys.argv[1:]

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(ROOT) \
                or code.co_name in COMPREHENSIONS:
            return
        back = frame.f_back
        while back is not None and back.f_code.co_name in COMPREHENSIONS:
            back = back.f_back
        if back is not None and back.f_code.co_filename.startswith(ROOT) \
                and (every or given(frame)):
            edges[(_name(back), _name(frame))] += 1

    template = LoopTemplate([UserTemplate(), GenerateTemplate()])
    app: Any = create_app(template, FunctionModel(lambda messages, tools: "Hello."))

    async def run() -> None:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with app.router.lifespan_context(app):
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            said = f"/api/conversations/{cid}/messages"
            assert (await client.post(said, json={"content": "Hi"})).status_code == 200
            threading.setprofile(profile)
            sys.setprofile(profile)
            try:
                answered = await client.post(said, json={"content": "Hi again"})
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
            assert answered.status_code == 200, answered.text
            assert answered.json()["messages"][-1]["content"] == "Hello."
        await client.aclose()

    asyncio.run(run())
    return edges


def main() -> None:
    edges = http_hops() if "--http" in sys.argv[1:] else hops()
    for (caller, callee), times in sorted(edges.items(), key=lambda kv: kv[0][::-1]):
        print(f"{times:3}  {caller}  ->  {callee}")
    functions = {callee for _, callee in edges} | {caller for caller, _ in edges}
    files = sorted({f.split(":")[0] for f in functions})
    print(f"{len(edges)} hops, {len(functions)} functions, {len(files)} files: "
          + ", ".join(files))


if __name__ == "__main__":
    main()
