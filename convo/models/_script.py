"""The script syntax shared by MockModel, FunctionModel and the fake OpenAI server.

A reply is written as text; ``{tool_name(arg='value', n=2)}`` inside it (Python call syntax,
literal values, several allowed) becomes a tool call and is removed from the text. A single
positional string, ``{finish_task('all done')}``, is kept as the call's raw arguments.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from .._errors import ScriptError, ToolCallParseError
from .._messages import Message, ToolCall

_CALL_START: Final = re.compile(r"\{([A-Za-z_][\w.\-]*)\(")


class CallIds:
    """Deterministic tool-call ids: ``call_1``, ``call_2``, ..."""

    __slots__ = ("_counter",)

    def __init__(self, start: int = 1) -> None:
        self._counter: Iterator[int] = itertools.count(start)

    @classmethod
    def after(cls, messages: Sequence[Message]) -> CallIds:
        """Ids that continue a conversation's own (unique within it, whichever process or
        model instance answers: a served conversation moves between workers)."""
        return cls(1 + sum(len(m.tool_calls) for m in messages))

    def __call__(self) -> str:
        return f"call_{next(self._counter)}"


@functools.lru_cache(maxsize=512)
def _parsed(inner: str) -> ast.Call | None:
    """The call's syntax tree, parsed once per text (a script repeats its calls; parsing is
    most of a scripted reply's cost). Its values are read anew for each call."""
    try:
        node = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Call) else None


def _parse_call(name: str, inner: str, new_id: Callable[[], str]) -> ToolCall | None:
    node = _parsed(inner)
    if node is None:
        return None
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    except ValueError as exc:
        raise ToolCallParseError(
            f"scripted tool call {{{name}({inner})}}: arguments must be literal values ({exc})"
        ) from exc
    if not args:
        return ToolCall(new_id(), name, kwargs)
    if len(args) == 1 and not kwargs and isinstance(args[0], str):
        return ToolCall(new_id(), name, {}, raw_arguments=args[0])
    if len(args) == 1 and not kwargs and isinstance(args[0], dict):
        return ToolCall(new_id(), name, args[0])
    raise ToolCallParseError(
        f"scripted tool call {{{name}({inner})}}: use keyword arguments, "
        "one string, or one dict"
    )


def parse_reply(text: str, new_id: Callable[[], str]) -> Message:
    """Turn a scripted reply into an assistant message, tool calls extracted."""
    if "{" not in text:
        return Message("assistant", text)
    calls: list[ToolCall] = []
    kept: list[str] = []
    pos = 0
    for match in _CALL_START.finditer(text):
        if match.start() < pos:
            continue
        end = text.find(")}", match.end())
        while end != -1:
            call = _parse_call(match.group(1), text[match.end():end], new_id)
            if call is not None:
                calls.append(call)
                kept.append(text[pos:match.start()])
                pos = end + 2
                break
            end = text.find(")}", end + 1)
    if not calls:
        return Message("assistant", text)
    kept.append(text[pos:])
    content = " ".join(part.strip() for part in kept if part.strip())
    return Message("assistant", content, tool_calls=tuple(calls))


def as_message(reply: Any, new_id: Callable[[], str], where: str) -> Message:
    """A scripted reply (a string or a Message) as an assistant message."""
    if isinstance(reply, Message):
        return reply
    if isinstance(reply, str):
        try:
            return parse_reply(reply, new_id)
        except ToolCallParseError as exc:  # in a script it is the test's mistake
            raise ScriptError(str(exc)) from exc
    raise ScriptError(f"{where}: a reply must be a str or a Message, got {type(reply).__name__}")


def format_conversation(messages: Sequence[Message], last: int = 10) -> str:
    """The last messages, one line each, for error reports."""
    shown = list(messages)[-last:]
    lines = [] if len(messages) <= last else [f"  ... {len(messages) - last} earlier messages"]
    start = len(messages) - len(shown)
    for i, m in enumerate(shown, start):
        text = m.text if len(m.text) <= 200 else m.text[:197] + "..."
        calls = "".join(
            f" {{{c.name}({c.arguments_json()})}}" for c in m.tool_calls
        )
        lines.append(f"  [{i}] {m.role}: {text!r}{calls}")
    return "\n".join(lines) or "  (no messages)"
