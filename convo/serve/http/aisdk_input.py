"""The AI SDK's ``useChat`` body (API.md §24), read from a request body and checked: a body
that is not one is refused with 400 naming the field (``messages[2].parts[0].text``), before
anything runs.

``useChat`` (its ``DefaultChatTransport``) posts ``{"id", "messages", "trigger",
"messageId"}``: the chat id, the whole chat as UI messages (``{"id", "role", "parts"}``), and
``"submit-message"`` or ``"regenerate-message"``. Of an assistant message's parts, only tool
parts answering an approval (``state: "approval-responded"``) are read; the rest is the
client's copy of what the server sent. No AI SDK package is needed to serve.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from .agui_input import Answer
from .bodies import HTTPProblem

ROLES: Final = ("system", "user", "assistant")
TRIGGERS: Final = ("submit-message", "regenerate-message")


@attrs.frozen(slots=True)
class UIInput:
    """A UI message of the body: its id, role and (a user message's) text."""

    id: str
    role: str
    text: str = ""


@attrs.frozen(slots=True)
class ChatInput:
    """A checked ``useChat`` body; ``answers``: the approval responses its messages carry."""

    chat_id: str
    messages: tuple[UIInput, ...] = ()
    trigger: str = "submit-message"
    message_id: str | None = None
    answers: tuple[Answer, ...] = ()


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


def _message(item: Any, where: str, answers: list[Answer]) -> UIInput:
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
    return UIInput(message_id, role, "\n".join(texts))


def chat_input(body: dict[str, Any]) -> ChatInput:
    """The ``useChat`` body in ``body``, or a 400 naming the field that is wrong."""
    chat_id = _string(body, "id", "id")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _bad("messages", "a list", messages)
    answers: list[Answer] = []
    read = tuple(_message(m, f"messages[{i}]", answers) for i, m in enumerate(messages))
    trigger = body.get("trigger", "submit-message")
    if trigger not in TRIGGERS:
        raise HTTPProblem(400, f'"trigger" must be one of {", ".join(TRIGGERS)}, got '
                               f"{trigger!r}")
    message_id = _string(body, "messageId", "messageId", optional=True)
    return ChatInput(chat_id, read, trigger, message_id, tuple(answers))
