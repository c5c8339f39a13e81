"""The two tool formats of ``OpenAIModel`` (API.md §12), as pure functions over messages.

``"native"``: tools go in the request's ``tools``; a reply that leaked a call into its text
is read as calls (``recover_tool_calls``) and says so in ``metadata["recovered_tool_calls"]``.

``"text"``: no native tools are sent. The conversation convo keeps is the same as with native
tools (assistant messages with ``tool_calls``, tool messages), so transcripts, resume and the
termination tools work unchanged; only what goes on the wire differs:

- the tools are described in the system message (``tools_prompt``);
- an assistant message's calls are written back as ``<tool_call>`` blocks in its text;
- tool results go as user messages of ``<tool_response>`` blocks (consecutive results in one);
- a malformed call (``metadata["tool_call_errors"]``) is answered with its problem and the
  expected format, whatever the tool message in the conversation says.

While a text-format reply streams, ``CallHider`` holds back the calls: the text before a call
streams, the call itself never shows as text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ..._messages import Message
from ..._parts import Part, Text, binaries, shown
from .._text_tools import CLOSE, OPEN, could_be_call, parse_text_calls, recover_tool_calls
from .wire import tool_to_wire

TOOL_FORMATS: Final = ("native", "text")
ERRORS_KEY: Final = "tool_call_errors"
RECOVERED_KEY: Final = "recovered_tool_calls"

_PLACEHOLDERS: Final[Mapping[str, Any]] = {
    "string": "...", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {},
}


def _function(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    function = tool_to_wire(schema).get("function")
    return function if isinstance(function, Mapping) else {"name": str(schema.get("name"))}


def example_call(tools: Sequence[Mapping[str, Any]]) -> str:
    """One call of the first tool, with a placeholder for each required argument."""
    function = _function(tools[0]) if tools else {"name": "tool_name"}
    parameters = function.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        parameters = {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    wanted = parameters.get("required") or list(properties)[:1]
    arguments = {k: _PLACEHOLDERS.get(str((properties.get(k) or {}).get("type")), "...")
                 for k in wanted}
    call = {"name": function.get("name"), "arguments": arguments}
    return f"{OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{CLOSE}"


def tools_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The system-message text that describes the tools and the exact way to call them."""
    lines = ["You can call these tools:", ""]
    for schema in tools:
        function = _function(schema)
        description = str(function.get("description") or "").strip()
        lines.append(f"- {function.get('name')}: {description}".rstrip(": "))
        parameters = json.dumps(function.get("parameters") or {"type": "object"},
                                ensure_ascii=False)
        lines.append(f"  arguments (JSON schema): {parameters}")
    lines += [
        "",
        "To call a tool, write a <tool_call> block holding one JSON object with the tool's "
        '"name" and its "arguments", exactly like this:',
        example_call(tools),
        "Write one block per call (several blocks call several tools), and nothing after "
        "them: each result comes back in a <tool_response> block. When no tool is needed, "
        "answer in plain text.",
    ]
    return "\n".join(lines)


def format_error(problem: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """What a malformed call is answered with: what was wrong, and the format again."""
    return (f"Error: your tool call could not be read: {problem}. Write each call as a "
            f'JSON object with "name" and "arguments" inside <tool_call> tags, exactly like '
            f"this:\n{example_call(tools)}")


def _with_calls(message: Message) -> Message:
    errors = message.metadata.get(ERRORS_KEY) or {}
    blocks = [f"{OPEN}\n" + ((call.raw_arguments or "") if call.id in errors
                             else json.dumps({"name": call.name, "arguments": call.arguments},
                                             ensure_ascii=False)) + f"\n{CLOSE}"
              for call in message.tool_calls]
    text = "\n".join([message.text, *blocks] if message.text else blocks)
    reasoning = message.metadata.get("reasoning")  # still sent back, on the Responses API
    return Message("assistant", text, metadata={"reasoning": reasoning} if reasoning else None)


def messages_for_text(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]
                      ) -> list[Message]:
    """The conversation as a model without native tools reads it (see the module doc)."""
    out: list[Message] = []
    errors: dict[str, str] = {}
    responses: list[str] = []  # consecutive tool results, sent as one user message
    attached: list[Part] = []  # and the images or files they returned, after their text

    def flush() -> None:
        if responses:
            out.append(Message("user", [Text("\n".join(responses)), *attached]))
            responses.clear()
            attached.clear()

    for message in messages:
        if message.role == "tool":
            problem = errors.get(message.tool_call_id or "")
            text = format_error(problem, tools) if problem else shown(message.content)
            attached.extend(binaries(message.content))
            name = f' name="{message.name}"' if message.name else ""
            responses.append(f"<tool_response{name}>\n{text}\n</tool_response>")
            continue
        flush()
        if message.role == "assistant" and message.tool_calls:
            errors.update(message.metadata.get(ERRORS_KEY) or {})
            out.append(_with_calls(message))
        else:
            out.append(message)
    flush()
    if tools:
        prompt = tools_prompt(tools)
        if out and out[0].role == "system":
            out[0] = Message("system", f"{out[0].text}\n\n{prompt}")
        else:
            out.insert(0, Message("system", prompt))
    return out


def read_reply(message: Message, tools: Sequence[Mapping[str, Any]], *, tool_format: str,
               recover: bool = True) -> Message:
    """A reply with the calls its text holds: all ``<tool_call>`` blocks in the text format,
    a leaked call (when ``recover``) in either."""
    content = message.text
    if not tools or message.tool_calls or not content:
        return message
    if tool_format == "text":
        reply = parse_text_calls(content)
        if reply.calls:
            metadata = message.metadata
            if reply.errors:
                metadata = {**metadata, ERRORS_KEY: dict(reply.errors)}
            return Message("assistant", reply.content, tool_calls=reply.calls,
                           metadata=metadata, name=message.name)
    if not recover or not could_be_call(content):
        return message
    found = recover_tool_calls(content, {str(_function(t).get("name")) for t in tools})
    if found is None:
        return message
    calls, form = found
    return Message("assistant", "", tool_calls=calls, name=message.name,
                   metadata={**message.metadata, RECOVERED_KEY: form})


class CallHider:
    """Filters streamed text so that ``<tool_call>`` blocks never show: ``feed(delta)``
    returns what may be shown now (a possible start of a tag is held back until it is
    decided), ``flush()`` what was held back when the stream ends."""

    __slots__ = ("_held", "_inside")

    def __init__(self) -> None:
        self._held = ""
        self._inside = False

    def feed(self, text: str) -> str:
        held = self._held + text
        shown: list[str] = []
        while True:
            tag = CLOSE if self._inside else OPEN
            at = held.find(tag)
            if at != -1:
                if not self._inside:
                    shown.append(held[:at])
                held, self._inside = held[at + len(tag):], not self._inside
                continue
            keep = _partial_tag(held, tag)
            if not self._inside:
                shown.append(held[:len(held) - keep])
            self._held = held[len(held) - keep:]
            return "".join(shown)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return "" if self._inside else held


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that begins ``tag``."""
    start = text.rfind("<", max(0, len(text) - len(tag) + 1))
    if start == -1 or not tag.startswith(text[start:]):
        return 0
    return len(text) - start


def hide_calls(on_delta: Callable[[str], None] | None
               ) -> tuple[Callable[[str], None] | None, Callable[[], None]]:
    """``on_delta`` behind a ``CallHider``, and the function to call when the stream ends."""
    if on_delta is None:
        return None, lambda: None
    hider = CallHider()
    deliver = on_delta

    def feed(text: str) -> None:
        shown = hider.feed(text)
        if shown:
            deliver(shown)

    def flush() -> None:
        rest = hider.flush()
        if rest:
            deliver(rest)

    return feed, flush
