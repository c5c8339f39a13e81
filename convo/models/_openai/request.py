"""The keyword arguments ``OpenAIModel`` passes to the SDK, one function per API: what goes
into ``chat.completions.create`` and what goes into ``responses.create`` (API.md §5, §15).

Pure functions of the model's settings and the call's messages and tools; the wire shapes
themselves are in ``wire.py`` and ``wire_responses.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import FunctionType
from typing import Any, Final, Protocol

from ..._messages import Message
from .._base import ToolSchemas
from . import wire as wire
from . import wire_responses as wire_responses
from .text_protocol import messages_for_text


class OpenAIModel(Protocol):
    """The settings of ``convo.models._openai.OpenAIModel`` that a request is made from."""

    model: str
    stream: bool
    tool_format: str
    tool_choice: Any
    max_tokens: int | None
    temperature: float | None
    timeout: float | None
    store: bool
    reasoning: Any
    extra: dict[str, Any]

APIS: Final = ("chat", "responses")


def _sent(model: OpenAIModel, messages: Sequence[Message], tools: ToolSchemas
          ) -> Sequence[Message]:
    if model.tool_format == "text":  # also without tools: earlier turns' calls as text
        return messages_for_text(messages, tools)
    return messages


def chat_request(model: OpenAIModel, messages: Sequence[Message], tools: ToolSchemas
                 ) -> dict[str, Any]:
    """The keyword arguments for ``chat.completions.create``."""
    kwargs: dict[str, Any] = {"model": model.model,
                              "messages": wire.messages_to_wire(_sent(model, messages, tools))}
    if tools and model.tool_format == "native":
        kwargs["tools"] = wire.tools_to_wire(tools)
        if model.tool_choice is not None:
            kwargs["tool_choice"] = model.tool_choice
    if model.temperature is not None:
        kwargs["temperature"] = model.temperature
    if model.max_tokens is not None:
        kwargs["max_tokens"] = model.max_tokens
    if model.stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    if model.timeout is not None:  # per request too, so that injected clients obey it
        kwargs["timeout"] = model.timeout
    kwargs.update(model.extra)
    if "stream_options" in kwargs and kwargs["stream_options"] is None:
        del kwargs["stream_options"]  # for servers that do not know the option
    return kwargs


def responses_request(model: OpenAIModel, messages: Sequence[Message], tools: ToolSchemas
                      ) -> dict[str, Any]:
    """The keyword arguments for ``responses.create``: every message in ``input``, in order
    (system messages too, never ``instructions``, so that earlier input stays byte-identical
    for prompt caching), and ``store: false`` unless the model says otherwise."""
    kwargs: dict[str, Any] = {
        "model": model.model,
        "input": wire_responses.input_to_wire(_sent(model, messages, tools)),
        "store": model.store,
    }
    if tools and model.tool_format == "native":
        kwargs["tools"] = wire_responses.tools_to_wire(tools)
        if model.tool_choice is not None:
            kwargs["tool_choice"] = wire_responses.tool_choice_to_wire(model.tool_choice)
    if model.reasoning is not None:
        kwargs["reasoning"] = dict(model.reasoning)
        if not model.store:  # without storage, reasoning comes back only as encrypted items
            kwargs["include"] = [wire_responses.ENCRYPTED_REASONING]
    if model.temperature is not None:
        kwargs["temperature"] = model.temperature
    if model.max_tokens is not None:
        kwargs["max_output_tokens"] = model.max_tokens
    if model.stream:
        kwargs["stream"] = True
    if model.timeout is not None:
        kwargs["timeout"] = model.timeout
    kwargs.update(model.extra)
    return kwargs


# The SDK walks every parameter against its TypedDicts before sending (``maybe_transform``):
# for each message (each input item), once per member of the union of their types, and for each
# tool schema — CPU that grows with the conversation (0.7 ms a call with 4 messages, 3 ms with
# 21, on this project's benchmark machine) and changes nothing in what convo sends, which is
# already the wire's JSON (no Chat Completions or Responses field convo sends has an alias or a
# format). So the conversation goes in ``extra_body``, which the SDK merges into the body
# untouched.
_PASSED_AS_IS: Final = {"messages": ("messages", "tools"), "input": ("input", "tools")}


def passed_as_is(kwargs: dict[str, Any], endpoint: Any) -> dict[str, Any]:
    """``kwargs`` for ``chat.completions.create`` (or ``responses.create``) with the messages
    (the input) and the tools in ``extra_body``: the body the server gets is the same. Unless
    ``create`` is not the SDK's own: an instrumentation library's wrapper, or a client of
    another kind, sees the arguments as they were."""
    create = getattr(type(endpoint), "create", None)
    key = "messages" if "messages" in kwargs else "input" if "input" in kwargs else None
    if key is None or not isinstance(create, FunctionType) \
            or "create" in getattr(endpoint, "__dict__", {}) \
            or not type(endpoint).__module__.startswith("openai."):
        return kwargs
    moved = {name: kwargs.pop(name) for name in _PASSED_AS_IS[key] if name in kwargs}
    if key == "messages":
        kwargs["messages"] = ()  # a required argument of chat.completions.create
    kwargs["extra_body"] = {**moved, **(kwargs.get("extra_body") or {})}  # the user's win
    return kwargs
