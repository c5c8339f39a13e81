"""A bot for the chat-page browser tests, served by ``convo serve`` on the model below.

The model's reply depends on the last user message:

- ``stream NAME``: streams a first part, then waits until the file ``$CHAT_PAGE_GATES/NAME``
  exists (the test creates it once it has seen the first part on the page), then the rest;
- ``fail…``: the first call for each such text fails like an unreachable model, the retry
  answers;
- ``evil``: a reply full of HTML and a ``javascript:`` link, which the page must show as text;
- ``markdown``: a reply using the Markdown the page renders;
- ``weather``: calls the ``weather`` tool, then answers with the last tool result;
- ``delete``: calls ``delete_file`` (which needs the user's approval) for ``notes.txt``;
  ``delete two``: for ``notes.txt`` and ``todo.txt`` at once;
- ``bye``: the conversation ends with a farewell (an ``EndTemplate``, not the model);
- ``crash``: the template itself fails (a bug, not a model failure): the conversation ends
  with outcome ``error``;
- ``leave``: the model ends the conversation with the ``end_conversation`` tool;
- anything else: echoed with the number of user messages so far.

``$CHAT_PAGE_MODEL_CALLS``, when set, limits the model calls of a conversation.
"""

import asyncio
import os
import pathlib
import time
from collections.abc import Sequence

from convo import Message, Session, ToolCall
from convo._errors import ModelError
from convo.templates import (
    EndTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    ToolingTemplate,
    UserTemplate,
)
from convo.tools import EndConversationTool, tool

EVIL = (
    "Look: <script>window.pwned = 1</script> and "
    "<img src=x onerror=\"window.pwned = 2\"> and "
    "[click me](javascript:window.pwned=3) and <b>not bold</b>"
)
MARKDOWN = (
    "Here is **bold**, *italic* and `code`.\n\n"
    "- one\n- two\n\n"
    "1. first\n2. second\n\n"
    "```\nprint('<hi>')\n```\n\n"
    "See [the docs](https://example.org/docs?a=1&b=2)."
)


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 °C"


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (asks the user first)."""
    return f"Deleted {path}"


def calls(users: int, name: str, *arguments: dict[str, str]) -> Message:
    return Message("assistant", "", tool_calls=[
        ToolCall(f"call_{users}_{i}", name, a) for i, a in enumerate(arguments)])


class PageModel:
    """The scripted model described above; sync and async, streaming through ``on_delta``."""

    def __init__(self) -> None:
        self.failed: set[str] = set()

    def _gate_open(self, name: str) -> bool:
        return (pathlib.Path(os.environ.get("CHAT_PAGE_GATES", "/nonexistent")) / name).exists()

    def _plan(self, messages: Sequence[Message]) -> tuple[list[str], str] | Message:
        last = messages[-1]
        users = sum(m.role == "user" for m in messages)
        if last.role == "tool":
            return [f"The tool said: {last.content}"], ""
        text = last.content
        if text.startswith("fail") and text not in self.failed:
            self.failed.add(text)
            raise ModelError("the model is unreachable (connection refused)")
        if text.startswith("stream "):  # "" = wait for the gate named after the word
            return ["Streaming the first part. ", "", "And the rest."], text[7:]
        if text == "evil":
            return [EVIL], ""
        if text == "markdown":
            return [MARKDOWN], ""
        if text == "weather":
            return Message("assistant", "Let me look.",
                           tool_calls=[ToolCall(f"call_{users}", "weather", {"city": "Paris"})])
        if text == "leave":
            return calls(users, "end_conversation", {"message": "Bye from the model!"})
        if text == "delete":
            return calls(users, "delete_file", {"path": "notes.txt"})
        if text == "delete two":
            return calls(users, "delete_file", {"path": "notes.txt"}, {"path": "todo.txt"})
        return [f"You said {text!r} (message {users})"], ""

    def _said(self, messages, on_delta):
        """The reply, streamed part by part: None while it waits at a gate (the caller
        sleeps a moment, in its own way), then the message."""
        plan = self._plan(messages)
        if isinstance(plan, Message):
            yield plan
            return
        parts, gate = plan
        for part in parts:
            while not part and not self._gate_open(gate):
                yield None
            if part and on_delta is not None:
                on_delta(part)
        yield Message("assistant", "".join(parts))

    def complete(self, messages, tools=(), *, on_delta=None):
        for said in self._said(messages, on_delta):
            if said is not None:
                return said
            time.sleep(0.02)

    async def acomplete(self, messages, tools=(), *, on_delta=None):
        for said in self._said(messages, on_delta):
            if said is not None:
                return said
            await asyncio.sleep(0.02)


def said_bye(session: Session) -> bool:
    if session.messages[-1].content == "crash":
        raise RuntimeError("the template broke")
    return session.messages[-1].content == "bye"


template = LinearTemplate([
    SystemTemplate("You are a test bot."),
    LoopTemplate([
        UserTemplate(),
        IfTemplate(said_bye, EndTemplate("Goodbye!")),
        ToolingTemplate([weather, delete_file, EndConversationTool()]),
    ]),
])
mock_model = PageModel()
limits = ({"model_calls": int(os.environ["CHAT_PAGE_MODEL_CALLS"])}
          if os.environ.get("CHAT_PAGE_MODEL_CALLS") else None)
