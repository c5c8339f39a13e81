"""The standard conversation every benchmark runs, for convo and for the raw SDK alike.

system + user -> the model calls ``get_weather`` -> the tool answers -> the model's final text:
two model calls and one tool call.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Final

from convo import (
    LinearTemplate,
    Message,
    MockModel,
    Session,
    SystemTemplate,
    ToolCall,
    ToolingTemplate,
    UserTemplate,
    tool,
)

MODEL: Final = "bench-model"
SYSTEM: Final = "You are a helpful assistant. Use the tools you have."
USER: Final = "What is the weather in Oslo?"
FINAL: Final = "It is sunny in Oslo, 21 degrees."
# The same two replies, as a MockModel script (the inline tool-call syntax users write).
SCRIPT: Final = ("{get_weather(city='Oslo')}", FINAL)


def weather(city: str) -> str:
    return f"Sunny in {city}, 21 degrees."


@tool
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: The city's name.
    """
    return weather(city)


TEMPLATE: Final = LinearTemplate(
    [SystemTemplate(SYSTEM), UserTemplate(USER), ToolingTemplate([get_weather])]
)
TOOLS: Final = [get_weather.schema()]


def mock_model() -> MockModel:
    return MockModel(list(SCRIPT))


def check(session: Session) -> None:
    """Fail loudly if a run did not have the standard conversation."""
    outcome = session.outcome
    roles = [m.role for m in session.messages]
    if (outcome is None or outcome.status != "completed" or outcome.model_calls != 2
            or roles != ["system", "user", "assistant", "tool", "assistant"]
            or session.messages[-1].content != FINAL):
        raise AssertionError(f"unexpected conversation: {outcome!r}, {roles}")


# -- the fake server's side: the reply follows from the request, so conversations may interleave

_ids = itertools.count(1)


def server_reply(body: dict[str, Any]) -> Message:
    """A tool call when the conversation has no tool result yet, else the final text (a Chat
    Completions request's ``messages``, or a Responses API request's ``input``)."""
    messages = body.get("messages") or body.get("input") or ()
    if messages and (messages[-1].get("role") == "tool"
                     or messages[-1].get("type") == "function_call_output"):
        return Message("assistant", FINAL)
    call = ToolCall(f"call_{next(_ids)}", "get_weather", {"city": "Oslo"})
    return Message("assistant", "", tool_calls=(call,))


# -- the floor: the raw openai SDK doing the same two calls ---------------------------------

def _start() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]


def _answer_tools(messages: list[dict[str, Any]], reply: Any) -> None:
    calls = reply.tool_calls or []
    messages.append({
        "role": "assistant", "content": reply.content,
        "tool_calls": [{"id": c.id, "type": "function",
                        "function": {"name": c.function.name,
                                     "arguments": c.function.arguments}} for c in calls],
    })
    for c in calls:
        result = weather(**json.loads(c.function.arguments))
        messages.append({"role": "tool", "tool_call_id": c.id, "content": result})


def raw_sync(client: Any) -> str:
    messages = _start()
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    _answer_tools(messages, first.choices[0].message)
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    text: str = second.choices[0].message.content
    return text


async def raw_async(client: Any) -> str:
    messages = _start()
    first = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    _answer_tools(messages, first.choices[0].message)
    second = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    text: str = second.choices[0].message.content
    return text


# -- the same two calls on the Responses API ------------------------------------------------

RESPONSES_TOOLS: Final = [{"type": "function", "name": t["function"]["name"],
                           "description": t["function"]["description"],
                           "parameters": t["function"]["parameters"]} for t in TOOLS]


def _answer_function_calls(items: list[dict[str, Any]], response: Any) -> None:
    for item in response.output:
        if item.type == "function_call":
            items.append({"type": "function_call", "call_id": item.call_id,
                          "name": item.name, "arguments": item.arguments})
            result = weather(**json.loads(item.arguments))
            items.append({"type": "function_call_output", "call_id": item.call_id,
                          "output": result})


def raw_sync_responses(client: Any) -> str:
    items = _start()
    first = client.responses.create(model=MODEL, input=items, tools=RESPONSES_TOOLS,
                                    store=False)
    _answer_function_calls(items, first)
    second = client.responses.create(model=MODEL, input=items, tools=RESPONSES_TOOLS,
                                     store=False)
    text: str = second.output_text
    return text


async def raw_async_responses(client: Any) -> str:
    items = _start()
    first = await client.responses.create(model=MODEL, input=items, tools=RESPONSES_TOOLS,
                                          store=False)
    _answer_function_calls(items, first)
    second = await client.responses.create(model=MODEL, input=items, tools=RESPONSES_TOOLS,
                                           store=False)
    text: str = second.output_text
    return text
