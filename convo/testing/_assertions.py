"""Assertion helpers for conversation tests, with failures that show what happened instead.

Each helper raises ``AssertionError`` with the expectation, what was found, and the
conversation (the last messages), so a failing test explains itself::

    assert_outcome(session, "ended", farewell="Bye!")
    assert_model_calls(model, 2)
    assert_tool_called(session, "add", a=2, b=3)
    assert_transcript(session, [("user", "hi"), ("assistant", "Hello!")])

``expect(reply, after=...)`` is a ``MockModel`` reply that first checks what it answers, so a
conversation that goes off script fails at the step that differed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .._errors import ScriptError
from .._messages import Message, ToolCall
from .._session import RunStatus, Session
from ..models._script import format_conversation

__all__ = [
    "assert_model_calls",
    "assert_outcome",
    "assert_tool_called",
    "assert_tool_not_called",
    "assert_transcript",
    "expect",
    "tool_calls",
]

_UNSET: Final[Any] = object()


def _conversation(messages: Sequence[Message]) -> str:
    return f"The conversation ({len(messages)} messages):\n{format_conversation(messages)}"


def _status(status: str | RunStatus) -> RunStatus:
    try:
        return RunStatus(status)
    except ValueError:
        allowed = ", ".join(repr(s.value) for s in RunStatus)
        raise ValueError(f"unknown run status {status!r}; one of {allowed}") from None


def assert_outcome(
    session: Session,
    status: str | RunStatus | None = None,
    *,
    farewell: str | None = _UNSET,
    error: str | None = _UNSET,
) -> None:
    """The run ended with ``status`` (and ``farewell``, and an error containing ``error``)."""
    __tracebackhide__ = True
    outcome = session.outcome
    if outcome is None:
        raise AssertionError(
            "the session has no outcome: it was not run by a Runner (or the run is still "
            f"going).\n{_conversation(session.messages)}"
        )
    wanted: list[str] = []
    wrong = False
    if status is not None:
        wanted.append(f"status {_status(status).value!r}")
        wrong |= outcome.status != _status(status)
    if farewell is not _UNSET:
        wanted.append(f"farewell {farewell!r}")
        wrong |= outcome.farewell != farewell
    if error is not _UNSET:
        if error is None:
            wanted.append("no error")
            wrong |= outcome.error is not None
        else:
            wanted.append(f"an error containing {error!r}")
            wrong |= error not in (outcome.error or "")
    if wrong:
        found = f"status {outcome.status.value!r}, farewell {outcome.farewell!r}"
        if outcome.error:
            found += f", error {outcome.error!r}"
        raise AssertionError(
            f"expected the run to end with {', '.join(wanted)}; it ended with {found}\n"
            f"  ({outcome.describe()})\n{_conversation(session.messages)}"
        )


def assert_model_calls(model: Any, n: int) -> None:
    """The model was called exactly ``n`` times (MockModel, FunctionModel, replay models)."""
    __tracebackhide__ = True
    calls = model.calls
    count = calls if isinstance(calls, int) else len(calls)
    if count == n:
        return
    lines = [f"expected {n} model call{'s' * (n != 1)}; {model!r} was called {count} times"]
    replies = getattr(model, "replies", None)
    if isinstance(replies, list):
        lines.append(f"  ({len(replies)} replies scripted)")
    if not isinstance(calls, int) and calls:
        seen = getattr(calls[-1], "messages", None)
        if seen is not None:
            lines.append(f"The last call saw:\n{format_conversation(seen)}")
    raise AssertionError("\n".join(lines))


def tool_calls(session: Session | Iterable[Message]) -> list[tuple[int, ToolCall]]:
    """Every tool call the assistant made, with the index of its message, in order."""
    messages = session.messages if isinstance(session, Session) else list(session)
    return [(i, c) for i, m in enumerate(messages) for c in m.tool_calls]


def _show_call(index: int, call: ToolCall) -> str:
    return f"  [{index}] {call.name}({call.arguments_json()})"


def _matches(call: ToolCall, name: str, arguments: dict[str, Any]) -> bool:
    if call.name != name:
        return False
    return all(k in call.arguments and call.arguments[k] == v for k, v in arguments.items())


def assert_tool_called(session: Session, name: str, /, **arguments: Any) -> ToolCall:
    """The model called tool ``name``, at least once with these arguments (others may differ).

    Returns the first matching call.
    """
    __tracebackhide__ = True
    calls = tool_calls(session)
    for _, call in calls:
        if _matches(call, name, arguments):
            return call
    wanted = f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    made = "\n".join(_show_call(i, c) for i, c in calls) or "  (no tool calls)"
    raise AssertionError(
        f"expected a call of {wanted}; the model made these tool calls:\n{made}\n"
        f"{_conversation(session.messages)}"
    )


def assert_tool_not_called(session: Session, name: str) -> None:
    """The model never called tool ``name``."""
    __tracebackhide__ = True
    found = [(i, c) for i, c in tool_calls(session) if c.name == name]
    if found:
        made = "\n".join(_show_call(i, c) for i, c in found)
        raise AssertionError(
            f"expected no call of {name!r}; found {len(found)}:\n{made}\n"
            f"{_conversation(session.messages)}"
        )


def _line(message: Message | tuple[str, str]) -> str:
    if isinstance(message, Message):
        calls = "".join(f" {{{c.name}({c.arguments_json()})}}" for c in message.tool_calls)
        return f"{message.role}: {message.content!r}{calls}"
    role, content = message
    return f"{role}: {content!r}"


def assert_transcript(
    session: Session, expected: Sequence[Message | tuple[str, str]]
) -> None:
    """The session's messages are exactly ``expected``, given as ``(role, content)`` pairs
    (tool calls are not compared) or as ``Message``s (compared whole, metadata aside).

    The failure is a diff: ``-`` expected, ``+`` what the conversation has.
    """
    __tracebackhide__ = True
    got = session.messages
    same = len(got) == len(expected) and all(
        (m.role, m.content) == e if isinstance(e, tuple) else _same_message(m, e)
        for m, e in zip(got, expected, strict=True)
    )
    if same:
        return
    want_lines = [_line(e) for e in expected]
    got_lines = [
        _line((m.role, m.text)) if i < len(expected) and isinstance(expected[i], tuple)
        else _line(m)
        for i, m in enumerate(got)
    ]
    diff = "\n".join(
        difflib.unified_diff(want_lines, got_lines, "expected", "conversation", lineterm="")
    )
    raise AssertionError(f"the conversation differs from the expected transcript:\n{diff}")


def _same_message(a: Message, b: Message) -> bool:
    return a.to_dict() | {"metadata": None} == b.to_dict() | {"metadata": None}


class expect:  # lower-case: in a script it reads as a call, like the inline tool syntax
    """A scripted reply that checks the conversation it answers before it is given.

    ``after`` is what the last message must be: its content (a string), a ``(role,
    content)`` pair, or a predicate on the messages. Otherwise the model call fails with
    ``ScriptError`` naming the step, what it expected, what it got, and the conversation::

        mock_model([expect("Hello!", after="hi"), expect("Bye!", after=("user", "bye"))])
    """

    __slots__ = ("after", "reply")

    def __init__(self, reply: str | Message, *, after: Any = None) -> None:
        self.reply = reply
        self.after = after

    def __call__(self, messages: Sequence[Message]) -> str | Message:
        wanted = self.after
        last = messages[-1] if messages else None
        if wanted is None:
            return self.reply
        if callable(wanted):
            ok, what = bool(wanted(messages)), f"the conversation to satisfy {wanted!r}"
        elif isinstance(wanted, tuple):
            ok = last is not None and (last.role, last.content) == wanted
            what = f"the last message to be {wanted[0]}: {wanted[1]!r}"
        else:
            ok = last is not None and last.content == wanted
            what = f"the last message to be {wanted!r}"
        if ok:
            return self.reply
        got = "no message" if last is None else f"{last.role}: {last.content!r}"
        raise ScriptError(
            f"the conversation went off script at {self!r}: it expected {what}, got {got}.\n"
            f"{_conversation(messages)}"
        )

    def __repr__(self) -> str:
        after = "" if self.after is None else f", after={self.after!r}"
        return f"expect({self.reply!r}{after})"
