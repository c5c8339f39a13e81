"""AG-UI's ``RunAgentInput`` (API.md §24), read from a request body and checked: a body that
is not one is refused with 400 naming the field (``messages[2].id``), before anything runs.

Plain dicts in, frozen values out; no AG-UI package is imported, so serving needs none (the
tests check what this accepts against ``ag_ui.core``'s own models). ``context`` and
``forwardedProps`` are read and ignored (docs/serving.md).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from .bodies import HTTPProblem

ROLES: Final = ("developer", "system", "assistant", "user", "tool", "activity", "reasoning")


@attrs.frozen(slots=True)
class InputMessage:
    """A message of the input: its id, role, text and (a tool message's) call id."""

    id: str
    role: str
    text: str = ""
    tool_call_id: str | None = None


@attrs.frozen(slots=True)
class Answer:
    """One ``resume`` entry: the interrupt it answers, approved or not, and why."""

    interrupt_id: str
    approve: bool
    reason: str | None = None


@attrs.frozen(slots=True)
class ClientTool:
    """A frontend tool the input offers: the model may call it; the client runs it."""

    name: str
    description: str
    parameters: dict[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen(slots=True)
class RunInput:
    """A checked ``RunAgentInput``."""

    thread_id: str
    run_id: str
    messages: tuple[InputMessage, ...] = ()
    state: dict[str, Any] | None = attrs.field(default=None, hash=False)
    tools: tuple[ClientTool, ...] = ()
    resume: tuple[Answer, ...] | None = None
    parent_run_id: str | None = None


def _bad(where: str, expected: str, value: Any) -> HTTPProblem:
    found = "null" if value is None else type(value).__name__
    return HTTPProblem(400, f'"{where}" must be {expected}, got {found} '
                            "(the body must be an AG-UI RunAgentInput)")


def _string(body: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = body.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not value and not optional):
        raise _bad(where, "a non-empty string", value)
    return value


def _list(body: dict[str, Any], key: str, *, optional: bool = True) -> list[Any]:
    value = body.get(key)
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise _bad(key, "a list", value)
    return value


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "\n".join(t for t in texts if isinstance(t, str))
    if content is None:
        return ""
    raise _bad(where, "a string or a list of parts", content)


def _message(item: Any, where: str) -> InputMessage:
    if not isinstance(item, dict):
        raise _bad(where, "an object", item)
    message_id = _string(item, "id", f"{where}.id")
    role = item.get("role")
    if role not in ROLES:
        raise HTTPProblem(400, f'"{where}.role" must be one of {", ".join(ROLES)}, got '
                               f"{role!r} (the body must be an AG-UI RunAgentInput)")
    call_id = None
    if role == "tool":
        call_id = _string(item, "toolCallId", f"{where}.toolCallId")
    if role == "user" and "content" not in item:
        raise _bad(f"{where}.content", "a string or a list of parts", None)
    text = _text(item.get("content"), f"{where}.content") if role in (
        "user", "tool", "assistant", "system", "developer") else ""
    return InputMessage(message_id, role, text, call_id)


def _answer(item: Any, where: str) -> Answer:
    if not isinstance(item, dict):
        raise _bad(where, "an object", item)
    interrupt_id = _string(item, "interruptId", f"{where}.interruptId")
    status = item.get("status")
    if status not in ("resolved", "cancelled"):
        raise HTTPProblem(400, f'"{where}.status" must be "resolved" or "cancelled", got '
                               f"{status!r}")
    payload = item.get("payload")
    if status == "cancelled":
        return Answer(interrupt_id, False, _reason(payload, where))
    if not isinstance(payload, dict) or not isinstance(payload.get("approve"), bool):
        raise HTTPProblem(400, f'"{where}.payload" must be {{"approve": true|false, '
                               f'"reason"?: "..."}} to answer a tool approval')
    return Answer(interrupt_id, payload["approve"], _reason(payload, where))


def _reason(payload: Any, where: str) -> str | None:
    reason = payload.get("reason") if isinstance(payload, dict) else None
    if reason is not None and not isinstance(reason, str):
        raise _bad(f"{where}.payload.reason", "a string", reason)
    return reason


def _tool(item: Any, where: str) -> ClientTool:
    if not isinstance(item, dict):
        raise _bad(where, "an object", item)
    name = _string(item, "name", f"{where}.name")
    description = item.get("description", "")
    if not isinstance(description, str):
        raise _bad(f"{where}.description", "a string", description)
    parameters = item.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise _bad(f"{where}.parameters", "a JSON schema object", parameters)
    return ClientTool(name, description, parameters)


def run_input(body: dict[str, Any]) -> RunInput:
    """The ``RunAgentInput`` in ``body``, or a 400 naming the field that is wrong."""
    thread_id = _string(body, "threadId", "threadId")
    run_id = _string(body, "runId", "runId")
    messages = tuple(_message(m, f"messages[{i}]")
                     for i, m in enumerate(_list(body, "messages", optional=False)))
    state = body.get("state")
    if state is not None and not isinstance(state, dict):
        raise _bad("state", "a JSON object", state)
    tools = tuple(_tool(t, f"tools[{i}]") for i, t in enumerate(_list(body, "tools")))
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise HTTPProblem(400, '"tools" names a tool twice')
    _list(body, "context")  # checked, and ignored (docs/serving.md)
    resume = None
    if body.get("resume") is not None:
        resume = tuple(_answer(a, f"resume[{i}]") for i, a in enumerate(_list(body, "resume")))
    parent = _string(body, "parentRunId", "parentRunId", optional=True)
    return RunInput(thread_id, run_id, messages, state, tools, resume, parent)
