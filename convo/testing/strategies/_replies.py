"""Hypothesis strategies for scripted model replies (``MockModel`` / ``FunctionModel``), in the
inline ``{tool(arg=...)}`` syntax or as ``Message`` objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from ..._messages import Message
from ._values import texts, tool_names

#: Termination-family calls in the inline syntax (see API.md §3).
FINISH_CALLS: tuple[str, ...] = (
    "{finish()}",
    "{finish(note='done')}",
    "{finish_response()}",
    "{finish_response(summary='all set')}",
    "{finish_task(summary='did it', status='done')}",
    "{finish_task(status='partial')}",
    "{finish_task(status='blocked')}",
    "{finish_task(status='nonsense')}",
    "{finish_task('plain summary')}",
    "{end_conversation(message='Bye!')}",
    "{end_conversation()}",
)

#: The deprecated alias of ``finish_task``: calling it warns (``DeprecationWarning``), which
#: fails a test suite run with warnings as errors, so scripts leave it out unless asked.
DEPRECATED_CALLS: tuple[str, ...] = ("{task_completed(summary='old name')}",)



def _literal(value: Any) -> str:
    return repr(value)


def _valid_call(tools: Sequence[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda name, args: "{%s(%s)}" % (name, ", ".join(f"{k}={_literal(v)}"  # noqa: UP031
                                                         for k, v in args.items())),
        st.sampled_from(tuple(tools)),
        st.dictionaries(st.sampled_from(["text", "n", "value"]),
                        st.integers(-5, 5) | texts(max_size=8), max_size=2),
    )


def _broken_call(tools: Sequence[str]) -> st.SearchStrategy[str]:
    known = st.sampled_from(tuple(tools)) if tools else tool_names()
    return st.one_of(
        tool_names().map(lambda n: "{no_such_%s()}" % n),  # noqa: UP031  unknown tool
        known.map(lambda n: "{%s('not json')}" % n),  # noqa: UP031  arguments not an object
        known.map(lambda n: "{%s(unexpected=[1, 2])}" % n),  # noqa: UP031  wrong arguments
    )


@st.composite
def reply_strings(
    draw: st.DrawFn, tools: Sequence[str] = (), *, finish: bool = True,
    deprecated: bool = False,
) -> str:
    """One scripted reply in the inline syntax.

    Plain text, an empty reply, or text with one to three tool calls: valid calls of
    ``tools`` (their argument names are guesses, so a strict tool may reject them), broken
    calls (unknown tool, non-object arguments, unexpected arguments) and, with
    ``finish=True``, the termination family (``FINISH_CALLS``, and ``DEPRECATED_CALLS``
    with ``deprecated=True``).
    """
    kind = draw(st.sampled_from(["text", "empty", "calls"]))
    if kind == "empty":
        return ""
    text = draw(texts(min_size=1))
    if kind == "text":
        return text
    options = [_broken_call(tools)]
    if tools:
        options.append(_valid_call(tools))
    if finish:
        options.append(st.sampled_from(FINISH_CALLS + DEPRECATED_CALLS * deprecated))
    calls = draw(st.lists(st.one_of(options), min_size=1, max_size=3))
    return " ".join([draw(st.sampled_from(["", text])), *calls]).strip()


def reply_messages(tools: Sequence[str] = (), *, finish: bool = True, deprecated: bool = False,
                   id_prefix: str = "msg_") -> st.SearchStrategy[Message]:
    """A scripted reply as an assistant ``Message`` (tool-call ids ``<id_prefix>N``)."""
    from ...models._script import CallIds, parse_reply

    def to_message(text: str, first: int) -> Message:
        message = parse_reply(text, CallIds())
        calls = tuple(attrs.evolve(c, id=f"{id_prefix}{first + i}")
                      for i, c in enumerate(message.tool_calls))
        return attrs.evolve(message, tool_calls=calls)

    return st.builds(to_message, reply_strings(tools, finish=finish, deprecated=deprecated),
                     st.integers(0, 10**6))


def replies(
    tools: Sequence[str] = (), *, finish: bool = True, deprecated: bool = False,
) -> st.SearchStrategy[str | Message]:
    """A scripted reply: a string in the inline syntax or a ``Message``."""
    return (reply_strings(tools, finish=finish, deprecated=deprecated)
            | reply_messages(tools, finish=finish, deprecated=deprecated))


@st.composite
def scripts(
    draw: st.DrawFn, tools: Sequence[str] = (), *, finish: bool = True,
    deprecated: bool = False, min_size: int = 1, max_size: int = 8,
) -> list[str | Message]:
    """A MockModel script: replies as strings and Messages, tool-call ids unique in it."""
    out: list[str | Message] = []
    for n in range(draw(st.integers(min_size, max_size))):
        reply = draw(replies(tools, finish=finish, deprecated=deprecated))
        if isinstance(reply, Message):
            reply = attrs.evolve(reply, tool_calls=tuple(
                attrs.evolve(c, id=f"msg_{n}_{i}") for i, c in enumerate(reply.tool_calls)
            ))
        out.append(reply)
    return out
