"""The OpenAI face's requests (API.md §25), read and checked before anything runs: a Chat
Completions or Responses body becomes an ``Ask`` — the client's history before its trailing
user messages, those messages, the conversation it names, how it wants its answer — or a 400
naming the field (OpenAI's ``param``). No HTTP here but the header a request may carry.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs
from starlette.requests import Request

from ..._messages import Message
from ..._parts import Content
from .bodies import HTTPProblem, content_of
from .openai_wire import HEADER, read_response_id

_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
_ROLES: Final = ("system", "developer", "user", "assistant")


class Problem(HTTPProblem):
    """A refused request, with the body field it is about (OpenAI's ``param``)."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(status, message)
        self.param = param


@attrs.frozen
class Ask:
    """What a request asks, read and checked: the client's history before its trailing user
    messages (``history``, with each message's index in the request: ``places``), those
    messages (``said``), the conversation it names and how it wants its answer."""

    history: list[Message]
    places: list[int]
    said: list[Content]
    conversation: str | None
    stream: bool
    include_usage: bool = False
    creates: bool = True  # an unknown named conversation is started (Chat Completions)
    digest: str = ""
    field: str = "messages"  # the request's field the messages came from


def conversation_id(value: Any, where: str) -> str:
    """A client-chosen conversation id: 1-128 characters of ``[A-Za-z0-9_-]``, else 400."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise Problem(400, f"{where} must be a conversation id: 1-128 characters of "
                           f"A-Z, a-z, 0-9, _ and -; got {value!r}", where)
    return value


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or a list of text parts (joined)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for position, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind not in ("text", "input_text", "output_text") \
                    or not isinstance(part.get("text"), str):
                raise Problem(400, f"{where}[{position}] must be a text part "
                                   '({"type": "text", "text": "..."}); this bot takes text',
                              where)
            texts.append(part["text"])
        return "".join(texts)
    raise Problem(400, f"{where} must be a string or a list of text parts, got "
                       f"{type(content).__name__}", where)


def _split(items: list[tuple[int, str, str]], field: str, max_bytes: int
           ) -> tuple[list[Message], list[int], list[Content]]:
    """The client's messages (index, role, text) as the history before the trailing user
    messages, and those messages (each checked as a native message is); system messages are
    the client's own and left out (the bot has its own)."""
    if not items or items[-1][1] != "user":
        raise Problem(400, f"{field} must end with a user message", field)
    kept = [(i, role, text) for i, role, text in items if role in ("user", "assistant")]
    last = max((n for n, (_, role, _) in enumerate(kept) if role == "assistant"), default=-1)
    said = [content_of({"content": text}, max_bytes) for _, _, text in kept[last + 1:]]
    history = [Message(role, text) for _, role, text in kept[:last + 1]]  # type: ignore[arg-type]
    return history, [i for i, _, _ in kept[:last + 1]], said


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def _flag(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise Problem(400, f'"{name}" must be true or false, got {value!r}', name)
    return value


def _no_tools(body: Mapping[str, Any]) -> None:
    if body.get("tools"):
        raise Problem(400, "tools are not taken: the bot's tools are its own", "tools")


def chat_ask(request: Request, body: Mapping[str, Any], max_bytes: int) -> Ask:
    """A Chat Completions request, checked (400 naming the field)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise Problem(400, '"messages" must be a list of messages', "messages")
    items = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in _ROLES:
            raise Problem(400, f"messages[{i}].role must be one of {', '.join(_ROLES)}, got "
                               f"{role!r}", f"messages[{i}].role")
        assert isinstance(message, Mapping)
        items.append((i, str(role), _text(message.get("content"), f"messages[{i}].content")))
    if body.get("n", 1) not in (1, None):
        raise Problem(400, f'"n" must be 1: the bot gives one reply, got {body.get("n")!r}',
                      "n")
    _no_tools(body)
    stream = _flag(body, "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise Problem(400, '"stream_options" must be an object', "stream_options")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise Problem(400, '"metadata" must be an object', "metadata")
    named = request.headers.get(HEADER)
    conversation = None
    if named is not None:
        conversation = conversation_id(named, HEADER)
    elif metadata.get("conversation_id") is not None:
        conversation = conversation_id(metadata["conversation_id"],
                                       "metadata.conversation_id")
    history, places, said = _split(items, "messages", max_bytes)
    return Ask(history, places, said, conversation, stream,
               include_usage=options.get("include_usage") is True,
               digest=digest(messages))


def _input_items(value: Any) -> list[tuple[int, str, str]]:
    if isinstance(value, str):
        return [(0, "user", value)]
    if not isinstance(value, list):
        raise Problem(400, '"input" must be a string or a list of messages', "input")
    items = []
    for i, item in enumerate(value):
        kind = item.get("type", "message") if isinstance(item, Mapping) else None
        role = item.get("role") if isinstance(item, Mapping) else None
        if kind != "message" or role not in _ROLES:
            raise Problem(400, f"input[{i}] must be a message with a role among "
                               f"{', '.join(_ROLES)} (this bot's tools are its own)",
                          f"input[{i}]")
        assert isinstance(item, Mapping)
        items.append((i, str(role), _text(item.get("content"), f"input[{i}].content")))
    return items


def responses_ask(body: Mapping[str, Any], max_bytes: int) -> tuple[Ask, tuple[str, int] | None]:
    """A Responses request, checked, and the response it follows (its conversation and the
    index of the user message it answered), if it names one."""
    _no_tools(body)
    previous = body.get("previous_response_id")
    named = body.get("conversation")
    if isinstance(named, Mapping):
        named = named.get("id")
    if previous is not None and named is not None:
        raise Problem(400, "give previous_response_id or conversation, not both",
                      "conversation")
    follows = None
    conversation = None
    if previous is not None:
        follows = read_response_id(previous) if isinstance(previous, str) else None
        if follows is None:
            raise Problem(404, f"no response {previous!r}", "previous_response_id")
        conversation = follows[0]
    elif named is not None:
        conversation = conversation_id(named, "conversation")
    history, places, said = _split(_input_items(body.get("input")), "input", max_bytes)
    if conversation is not None and history:
        history, places = [], []  # a named conversation holds its history: only the new ones
    return Ask(history, places, said, conversation, _flag(body, "stream"), creates=False,
               digest=digest(body.get("input")), field="input"), follows


