"""The AI SDK's ``useChat`` body (API.md §24), read from a request body and checked: a body
that is not one is refused with 400 naming the field (``messages[2].parts[0].text``), before
anything runs.

``useChat`` (its ``DefaultChatTransport``) posts ``{"id", "messages", "trigger",
"messageId"}``: the chat id, the whole chat as UI messages (``{"id", "role", "parts"}``), and
``"submit-message"`` or ``"regenerate-message"``; an app may add ``tools``, the frontend tools
it runs (``[{"name", "description", "inputSchema"}]``, through the transport's ``body``), and
``while_busy`` (API.md §26: what the request asks for if a turn runs). Of an
assistant message's parts, only tool parts answering an approval (``state:
"approval-responded"``) or carrying a frontend tool's output (``output-available``,
``output-error``, as ``addToolOutput`` leaves them) are read; the rest is the client's copy of
what the server sent. No AI SDK package is needed to serve.
"""

from __future__ import annotations

import json
from typing import Any, Final

import attrs

from .agui_input import Answer
from .bodies import HTTPProblem, while_busy

ROLES: Final = ("system", "user", "assistant")
TRIGGERS: Final = ("submit-message", "regenerate-message")


@attrs.frozen(slots=True)
class UIInput:
    """A UI message of the body: its id, role and (a user message's) text."""

    id: str
    role: str
    text: str = ""


@attrs.frozen(slots=True)
class Output:
    """A frontend tool's output, as ``addToolOutput`` leaves it in a tool part: the call's
    id and the result's text (an ``output-error``'s ``errorText``, said as an error)."""

    call_id: str
    text: str


@attrs.frozen(slots=True)
class ChatInput:
    """A checked ``useChat`` body; ``answers``: the approval responses its messages carry;
    ``outputs``: the frontend tools' outputs they carry; ``tools``: the frontend tools the
    body offers (``{"name", "description", "parameters"}``, from ``inputSchema``)."""

    chat_id: str
    messages: tuple[UIInput, ...] = ()
    trigger: str = "submit-message"
    message_id: str | None = None
    answers: tuple[Answer, ...] = ()
    outputs: tuple[Output, ...] = ()
    tools: tuple[dict[str, Any], ...] = ()
    #: The body's ``while_busy``: what the request asks for if a turn runs (API.md §26).
    while_busy: str = "reject"


def _bad(where: str, expected: str, value: Any) -> HTTPProblem:
    found = "null" if value is None else type(value).__name__
    return HTTPProblem(400, f'"{where}" must be {expected}, got {found} '
                            "(the body must be the AI SDK useChat body)")


def _string(item: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = item.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise _bad(where, "a non-empty string", value)
    return value


def _is_tool(kind: str) -> bool:
    return kind.startswith("tool-") or kind == "dynamic-tool"


def _answer(part: dict[str, Any], where: str) -> Answer:
    """A tool part's approval response (``approval.id`` is the call id, API.md §24)."""
    approval = part.get("approval")
    if not isinstance(approval, dict):
        raise _bad(f"{where}.approval", "an object", approval)
    approval_id = _string(approval, "id", f"{where}.approval.id")
    approved = approval.get("approved")
    if not isinstance(approved, bool):
        raise _bad(f"{where}.approval.approved", "true or false", approved)
    reason = approval.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise _bad(f"{where}.approval.reason", "a string", reason)
    return Answer(approval_id, approved, reason)


def _output(part: dict[str, Any], where: str) -> Output:
    call_id = _string(part, "toolCallId", f"{where}.toolCallId")
    if part["state"] == "output-error":
        error = part.get("errorText")
        if not isinstance(error, str):
            raise _bad(f"{where}.errorText", "a string", error)
        return Output(call_id, f"Error: {error}")
    output = part.get("output")
    return Output(call_id, output if isinstance(output, str) else json.dumps(
        output, ensure_ascii=False))


def _tools(body: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The body's frontend tools: ``[{"name", "description"?, "inputSchema"?}]``."""
    tools = body.get("tools", [])
    if not isinstance(tools, list):
        raise _bad("tools", "a list", tools)
    offered = []
    for index, item in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(item, dict):
            raise _bad(where, "an object", item)
        name = _string(item, "name", f"{where}.name")
        description = item.get("description", "")
        if not isinstance(description, str):
            raise _bad(f"{where}.description", "a string", description)
        schema = item.get("inputSchema", {"type": "object", "properties": {}})
        if not isinstance(schema, dict):
            raise _bad(f"{where}.inputSchema", "a JSON Schema object", schema)
        offered.append({"name": name, "description": description, "parameters": schema})
    return tuple(offered)


def _message(item: Any, where: str, answers: list[Answer], outputs: list[Output]
             ) -> UIInput:
    if not isinstance(item, dict):
        raise _bad(where, "an object", item)
    message_id = _string(item, "id", f"{where}.id")
    role = item.get("role")
    if role not in ROLES:
        raise HTTPProblem(400, f'"{where}.role" must be one of {", ".join(ROLES)}, got '
                               f"{role!r} (the body must be the AI SDK useChat body)")
    parts = item.get("parts")
    if not isinstance(parts, list):
        raise _bad(f"{where}.parts", "a list", parts)
    texts = []
    for index, part in enumerate(parts):
        at = f"{where}.parts[{index}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _bad(f"{at}.type", "a string", part.get("type") if isinstance(
                part, dict) else part)
        kind = part["type"]
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise _bad(f"{at}.text", "a string", text)
            texts.append(text)
        elif role == "user" and kind == "file":
            raise HTTPProblem(400, f'"{at}" is a file part: /ai-sdk/chat takes the text of a '
                                   "user message only; send the file's content as text")
        elif role == "assistant" and _is_tool(kind) and part.get("state") == (
                "approval-responded"):
            answers.append(_answer(part, at))
        elif role == "assistant" and _is_tool(kind) and part.get("state") in (
                "output-available", "output-error"):
            outputs.append(_output(part, at))
    return UIInput(message_id, role, "\n".join(texts))


def chat_input(body: dict[str, Any]) -> ChatInput:
    """The ``useChat`` body in ``body``, or a 400 naming the field that is wrong."""
    chat_id = _string(body, "id", "id")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _bad("messages", "a list", messages)
    answers: list[Answer] = []
    outputs: list[Output] = []
    read = tuple(_message(m, f"messages[{i}]", answers, outputs)
                 for i, m in enumerate(messages))
    trigger = body.get("trigger", "submit-message")
    if trigger not in TRIGGERS:
        raise HTTPProblem(400, f'"trigger" must be one of {", ".join(TRIGGERS)}, got '
                               f"{trigger!r}")
    message_id = _string(body, "messageId", "messageId", optional=True)
    return ChatInput(chat_id, read, trigger, message_id, tuple(answers), tuple(outputs),
                     _tools(body), while_busy(body, "reject"))
