"""Hypothesis strategies for property-testing conversations and templates.

Values:
    ``texts()``, ``json_values()``, ``tool_calls()``, ``messages()``, ``histories()`` (valid
    conversations: every tool call answered once), ``sessions()`` (with state, turns, outcome).

Scripted model replies (for ``MockModel`` / ``FunctionModel``):
    ``reply_strings(tools)`` in the inline ``{tool(arg=...)}`` syntax: plain text, valid and
    broken tool calls, finish calls, empty replies; ``reply_messages(tools)`` the same as
    ``Message`` objects; ``replies(tools)`` either; ``scripts(tools)`` a list of replies with
    unique tool-call ids.

Template trees:
    ``template_trees()`` builds random trees with ``st.recursive``. Every loop is bounded
    (``exit_loop_count``, or an ``exit_condition`` its body is sure to meet), a
    ``BreakTemplate`` only appears inside a loop, and text never contains Jinja markup. Pass
    ``extra_leaves`` to mix in your own templates (a ``ToolingTemplate``, say).

Example::

    @given(tree=template_trees(), script=scripts())
    def test_every_run_ends(tree, script):
        session = Runner(MockModel(script, repeat_last=True), tree,
                         ScriptedInterface(["hi"] * 5), max_messages=200).run()
        assert session.outcome is not None
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from ..messages import ROLES, Message, ToolCall
from ..session import Outcome, RunStatus, Session, TurnResult, Usage
from ..templates import (
    AssistantTemplate,
    BreakTemplate,
    EndTemplate,
    GenerateTemplate,
    IfTemplate,
    LinearTemplate,
    LoopTemplate,
    MessageTemplate,
    SystemTemplate,
    Template,
    UserTemplate,
)

__all__ = [
    "DEPRECATED_CALLS",
    "FINISH_CALLS",
    "Condition",
    "histories",
    "json_values",
    "messages",
    "replies",
    "reply_messages",
    "reply_strings",
    "scripts",
    "sessions",
    "template_trees",
    "texts",
    "tool_calls",
    "tool_names",
]

# No braces: keeps text free of Jinja markup and of the inline tool-call syntax.
_ALPHABET = string.ascii_letters + string.digits + " .,!?'-\n" + "éß中😀&<>"
_NAME_ALPHABET = string.ascii_lowercase + "_"

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


def texts(*, min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Chat text: letters, digits, punctuation, non-ASCII; never Jinja or tool-call syntax."""
    return st.text(_ALPHABET, min_size=min_size, max_size=max_size)


def tool_names() -> st.SearchStrategy[str]:
    """Valid tool names: lower-case identifiers."""
    return st.text(_NAME_ALPHABET, min_size=1, max_size=12).filter(lambda s: s[0] != "_")


def json_values(*, max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """JSON values (no floats NaN/inf, so they round-trip exactly)."""
    scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | texts(max_size=10) | (
        st.floats(allow_nan=False, allow_infinity=False)
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3)
        | st.dictionaries(texts(min_size=1, max_size=6), inner, max_size=3),
        max_leaves=max_leaves,
    )


def _arguments() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(tool_names(), json_values(max_leaves=3), max_size=3)


@st.composite
def tool_calls(
    draw: st.DrawFn, names: st.SearchStrategy[str] | None = None, *, id_prefix: str = "call_"
) -> ToolCall:
    """A ToolCall: an id, a name, JSON arguments (sometimes raw, non-JSON argument text)."""
    name = draw(names if names is not None else tool_names())
    call_id = f"{id_prefix}{draw(st.integers(0, 10**6))}"
    if draw(st.integers(0, 9)) == 0:
        return ToolCall(call_id, name, {}, raw_arguments=draw(texts(max_size=15)))
    return ToolCall(call_id, name, draw(_arguments()))


def messages(roles: Sequence[str] = ROLES) -> st.SearchStrategy[Message]:
    """A single message of one of ``roles`` (tool messages carry a ``tool_call_id``)."""
    return st.sampled_from(tuple(roles)).flatmap(_message_of)


def _message_of(role: str) -> st.SearchStrategy[Message]:
    metadata: st.SearchStrategy[dict[str, Any]] = st.just({}) | st.dictionaries(
        tool_names(), json_values(max_leaves=2), max_size=2)
    if role == "assistant":
        return st.builds(
            lambda content, calls, meta: Message("assistant", content, tool_calls=calls,
                                                 metadata=meta),
            texts(), st.lists(tool_calls(), max_size=2).map(tuple), metadata,
        )
    if role == "tool":
        return st.builds(
            lambda content, cid, name: Message("tool", content, tool_call_id=cid, name=name),
            texts(), st.integers(0, 10**6).map(lambda n: f"call_{n}"), st.none() | tool_names(),
        )
    return st.builds(Message, st.just(role), texts(), metadata=metadata)


@st.composite
def histories(draw: st.DrawFn, *, max_turns: int = 4) -> list[Message]:
    """A valid conversation: a system prompt maybe, then user/assistant turns where every
    assistant tool call is answered by exactly one tool message, in call order."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message("system", draw(texts(min_size=1))))
    ids = iter(range(10**9))
    for _ in range(draw(st.integers(0, max_turns))):
        out.append(Message("user", draw(texts(min_size=1))))
        for _ in range(draw(st.integers(0, 2))):
            names = draw(st.lists(tool_names(), min_size=1, max_size=3))
            calls = tuple(ToolCall(f"call_{next(ids)}", n, draw(_arguments())) for n in names)
            out.append(Message("assistant", draw(texts()), tool_calls=calls))
            out.extend(Message("tool", draw(texts()), tool_call_id=c.id) for c in calls)
        out.append(Message("assistant", draw(texts())))
    return out


def _turn_results() -> st.SearchStrategy[TurnResult]:
    maybe_text = st.none() | texts(max_size=15)
    return st.builds(
        TurnResult,
        status=st.sampled_from(list(RunStatus)),
        response=maybe_text, terminated_by=st.none() | tool_names(), note=maybe_text,
        summary=maybe_text, finish_status=st.none() | st.sampled_from(["done", "partial",
                                                                       "blocked"]),
        iterations=st.integers(0, 30), injections=st.integers(0, 5),
        restriction_exhausted=st.booleans(), done=st.booleans(),
    )


def _outcomes() -> st.SearchStrategy[Outcome]:
    maybe_text = st.none() | texts(max_size=15)
    counts = st.integers(0, 10**4)
    return st.builds(
        Outcome,
        status=st.sampled_from(list(RunStatus)), farewell=maybe_text, error=maybe_text,
        turn=st.none() | _turn_results(), messages=counts, model_calls=counts,
        usage=st.builds(Usage, counts, counts, counts),
        elapsed_s=st.floats(0, 1e4, allow_nan=False),
    )


def sessions() -> st.SearchStrategy[Session]:
    """Any finished-or-not session: messages, JSON state, turns and maybe an outcome."""
    return st.builds(
        Session,
        st.lists(messages(), max_size=6) | histories(),
        st.dictionaries(texts(min_size=1, max_size=8), json_values(), max_size=4),
        turns=st.lists(_turn_results(), max_size=3),
        outcome=st.none() | _outcomes(),
    )


# ---- scripted model replies --------------------------------------------------------------

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
    from ..models.script import CallIds, parse_reply

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


# ---- template trees ----------------------------------------------------------------------

@attrs.frozen
class Condition:
    """A named, deterministic condition on a session (readable in hypothesis' output)."""

    name: str
    fn: Callable[[Session], bool] = attrs.field(repr=False)

    def __call__(self, session: Session) -> bool:
        return self.fn(session)


def _at_least(n: int) -> Condition:
    return Condition(f"len(messages) >= {n}", lambda s: len(s.messages) >= n)


_CONDITIONS = st.one_of(
    st.integers(0, 12).map(_at_least),
    st.just(Condition("always", lambda s: True)),
    st.just(Condition("never", lambda s: False)),
    st.just(Condition("even number of messages", lambda s: len(s.messages) % 2 == 0)),
    st.just(Condition("last message from assistant",
                      lambda s: s.last_message is not None
                      and s.last_message.role == "assistant")),
)


def _leaves() -> st.SearchStrategy[Template]:
    content = texts(min_size=1, max_size=20)
    return st.one_of(
        st.builds(SystemTemplate, content),
        st.builds(MessageTemplate, content, st.sampled_from(["user", "assistant", "system"])),
        st.builds(UserTemplate, content),
        st.builds(UserTemplate, description=st.none() | content, default=st.none() | content),
        st.builds(AssistantTemplate, content),
        st.builds(AssistantTemplate),
        st.builds(GenerateTemplate),
        st.builds(EndTemplate, st.none() | content),
    )


def _loop(children: st.SearchStrategy[Template]) -> st.SearchStrategy[Template]:
    body = st.lists(
        children
        | st.just(BreakTemplate())
        | st.builds(IfTemplate, _CONDITIONS, st.just(BreakTemplate())),
        min_size=1, max_size=3,
    )
    counted = st.builds(
        LoopTemplate, body, exit_loop_count=st.integers(0, 3),
        exit_condition=st.none() | _CONDITIONS,
    )
    # Bounded by its condition alone: the body adds a message every pass.
    conditioned = st.builds(
        lambda first, rest, n: LoopTemplate([first, *rest], exit_condition=_at_least(n)),
        st.builds(MessageTemplate, texts(min_size=1, max_size=10), st.just("user")),
        body, st.integers(0, 15),
    )
    return counted | conditioned


def template_trees(
    *, extra_leaves: st.SearchStrategy[Template] | None = None, max_leaves: int = 10,
) -> st.SearchStrategy[Template]:
    """Random template trees (``st.recursive``): every loop bounded, breaks only in loops."""
    leaves = _leaves() if extra_leaves is None else _leaves() | extra_leaves
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.builds(LinearTemplate, st.lists(children, max_size=4)),
            _loop(children),
            st.builds(IfTemplate, _CONDITIONS, children, st.none() | children),
        ),
        max_leaves=max_leaves,
    )
