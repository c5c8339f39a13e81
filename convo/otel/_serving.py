"""A served turn's span (API.md §18): each request that runs the template is one
``invoke_agent convo`` span, the child of an incoming ``traceparent``; the run's model and
tool spans go under it. Used by ``convo.serve`` only while instrumented."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import context, propagate, trace

from ._telemetry import Telemetry
from ._turns import CURRENT, Deferred, Turn

Answer = tuple[int, dict[str, Any]]


async def traced(telemetry: Telemetry, headers: Mapping[str, str], conversation_id: str | None,
                 run: Any, call: Callable[[], Awaitable[Answer]], *, user: str | None = None,
                 refused: Callable[[BaseException], bool] = lambda exc: False) -> Answer:
    """Run one served turn (``call``) inside its span. ``run``: the conversation's run, or
    ``None`` for a create (the run it starts claims the turn); ``user``: who is signed in
    (``user.id``); ``refused``: whether an exception is a refusal said before any template
    ran (a 4xx), which makes no span (``turns.py``), or at least no failed one."""
    parent = propagate.extract(headers)
    attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent",
                                  "gen_ai.agent.name": "convo"}
    if conversation_id is not None:
        attributes["gen_ai.conversation.id"] = conversation_id
    if user is not None:
        attributes["user.id"] = user
    turn = Turn(telemetry.tracer, parent, attributes, run, conversation_id)
    token = context.attach(trace.set_span_in_context(Deferred(turn), parent))
    current = CURRENT.set(turn)
    try:
        code, body = await call()
        turn.finish(code, body)
        return code, body
    except BaseException as exc:
        if not refused(exc):
            turn.fail(type(exc).__name__)
        raise
    finally:
        CURRENT.reset(current)
        context.detach(token)
        turn.close()
