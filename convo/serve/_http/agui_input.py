"""AG-UI's ``RunAgentInput`` (API.md §24), read from a request body and checked: a body that
is not one is refused with 400 naming the field (``messages[2].id``), before anything runs.

Plain dicts in, frozen values out; no AG-UI package is imported, so serving needs none (the
tests check what this accepts against ``ag_ui.core``'s own models). ``context`` is read and
ignored, and so is ``forwardedProps`` but for its ``while_busy`` (API.md §26;
docs/serving.md).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from .bodies import HTTPProblem, while_busy

ROLES: Final = ("developer", "system", "assistant", "user", "tool", "activity", "reasoning")


@attrs.frozen(slots=True)
class InputMessage:
    """A message of the input: its id, role, text and (a tool message's) call id; ``parts``:
    a user message's content parts as convo's part JSON (API.md §16), when it has some that
    are not text."""

    id: str
    role: str
    text: str = ""
    tool_call_id: str | None = None
    parts: tuple[dict[str, Any], ...] | None = attrs.field(default=None, hash=False)
    content: Any = attrs.field(default=None, hash=False)  # the parts read (``agui.py``)


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
    #: ``forwardedProps.while_busy``: what the run asks for if a turn runs (API.md §26).
    while_busy: str = "reject"


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


KINDS: Final = {"image": "image", "audio": "audio", "document": "document"}


def _binary(part: dict[str, Any], where: str) -> dict[str, Any]:
    """An AG-UI 1.0 ``image``/``audio``/``document`` part (its ``source`` ``data`` or
    ``url``), or a ``binary`` one (``mimeType`` with ``data`` or ``url``), as convo's part
    JSON (API.md §16)."""
    kind = part["type"]
    if kind == "binary":
        media = _string(part, "mimeType", f"{where}.mimeType")
        found = {"type": "image" if media.startswith("image/") else "audio"
                 if media.startswith("audio/") else "document", "media_type": media}
        for key, theirs in (("data", "data"), ("url", "url"), ("filename", "filename")):
            if part.get(theirs) is not None:
                found[key] = _string(part, theirs, f"{where}.{theirs}")
        if ("data" in found) == ("url" in found):
            raise HTTPProblem(400, f'"{where}" must carry exactly one of "data" (base64) or '
                                   '"url" (a binary part given only by "id" cannot be read)')
        return found
    if kind not in KINDS:
        raise HTTPProblem(400, f'"{where}.type" must be one of text, image, audio, document, '
                               f"binary, got {kind!r} (convo keeps no {kind} part)")
    source = part.get("source")
    if not isinstance(source, dict) or source.get("type") not in ("data", "url"):
        found_type = source.get("type") if isinstance(source, dict) else None
        raise HTTPProblem(400, f'"{where}.source.type" must be "data" or "url", got '
                               f"{found_type!r} (a file held by a provider cannot be read)")
    value = _string(source, "value", f"{where}.source.value")
    shown: dict[str, Any] = {"type": KINDS[kind], source["type"]: value}
    media = _string(source, "mimeType", f"{where}.source.mimeType",
                    optional=source["type"] == "url")
    if media:
        shown["media_type"] = media
    return shown


def _parts(content: Any, where: str) -> tuple[dict[str, Any], ...] | None:
    """A user message's parts as convo's part JSON, or ``None`` when it has only text."""
    if not isinstance(content, list) or all(
            isinstance(p, dict) and p.get("type") == "text" for p in content):
        return None
    parts = []
    for index, part in enumerate(content):
        at = f"{where}[{index}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _bad(f"{at}.type", "a string", part.get("type") if isinstance(
                part, dict) else part)
        parts.append({"type": "text", "text": part.get("text")} if part["type"] == "text"
                     else _binary(part, at))
    return tuple(parts)


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
    parts = _parts(item["content"], f"{where}.content") if role == "user" else None
    return InputMessage(message_id, role, text, call_id, parts)


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
    forwarded = body.get("forwardedProps")
    mode = while_busy(forwarded, "reject", "forwardedProps.while_busy") \
        if isinstance(forwarded, dict) else "reject"
    return RunInput(thread_id, run_id, messages, state, tools, resume, parent, mode)
