"""Hypothesis strategies for values: chat text, JSON, tool calls, messages, valid
conversations and whole sessions."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from ..._messages import ROLES, Message, ToolCall
from ..._parts import Audio, Content, Document, Image, Part, Text
from ..._session import Outcome, RunStatus, Session, TurnResult, Usage

# No braces: keeps text free of Jinja markup and of the inline tool-call syntax.
_ALPHABET = string.ascii_letters + string.digits + " .,!?'-\n" + "éß中😀&<>"
_NAME_ALPHABET = string.ascii_lowercase + "_"

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


_MEDIA: dict[type[Any], tuple[str, ...]] = {
    Image: ("image/png", "image/jpeg"), Audio: ("audio/wav", "audio/mpeg"),
    Document: ("application/pdf", "text/plain"),
}


@st.composite
def parts(draw: st.DrawFn) -> Part:
    """One content part: text, or an image, a sound or a document (small inline bytes, or
    sometimes an https URL for images and documents)."""
    kind = draw(st.sampled_from((Text, Image, Audio, Document)))
    if kind is Text:
        return Text(draw(texts(min_size=1)))
    media_type = draw(st.sampled_from(_MEDIA[kind]))
    filename = draw(st.none() | tool_names().map(lambda n: f"{n}.bin"))
    if kind is not Audio and draw(st.integers(0, 4)) == 0:
        url = f"https://example.com/{draw(tool_names())}"
        return kind(url=url, media_type=media_type, filename=filename)  # type: ignore[no-any-return]
    data = draw(st.binary(min_size=1, max_size=64))
    return kind(data, media_type=media_type, filename=filename)  # type: ignore[no-any-return]


def contents() -> st.SearchStrategy[Content]:
    """A message's content: mostly text; sometimes text with images, sounds or documents."""
    with_parts = st.lists(parts(), min_size=1, max_size=3).filter(
        lambda ps: any(not isinstance(p, Text) for p in ps)).map(tuple)
    return st.one_of(texts(), texts(), texts(), with_parts)


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
    content = contents() if role == "user" else texts()
    return st.builds(Message, st.just(role), content, metadata=metadata)


@st.composite
def histories(draw: st.DrawFn, *, max_turns: int = 4) -> list[Message]:
    """A valid conversation: a system prompt maybe, then user/assistant turns where every
    assistant tool call is answered by exactly one tool message, in call order."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message("system", draw(texts(min_size=1))))
    ids = iter(range(10**9))
    for _ in range(draw(st.integers(0, max_turns))):
        content = draw(contents())
        out.append(Message("user", content or draw(texts(min_size=1))))
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
