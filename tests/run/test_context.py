"""ContextWindow's choice of what to send, on its own: properties over random histories, the
estimate against real token counts, and the context-length hint."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convo import ContextLengthError, ContextWindow, DefinitionError, Message, Session, ToolCall
from convo._context import Index, context_length_hint, estimate_message, estimate_text
from convo._requests import CallModel
from convo._summary import CONTEXT_KEY, SUMMARY_HEADER, fit
from convo.events import ContextTrimmed, Event

DATA = Path(__file__).resolve().parents[1] / "data" / "context"
TOOLS = ({"type": "function", "function": {"name": "look", "description": "Look it up.",
                                           "parameters": {"type": "object"}}},)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Conversations with system messages anywhere, tool calls (parallel ones too), texts of
    very different lengths; every call answered by one result per call, in order."""
    text = st.text("abc xyz,.é中", max_size=300)
    out: list[Message] = []
    ids = iter(range(10**6))
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["system", "user", "user", "assistant", "calls"]))
        if kind != "calls":
            out.append(Message(kind, draw(text)))
            continue
        calls = tuple(ToolCall(f"c{next(ids)}", "look", {"q": draw(text)})
                      for _ in range(draw(st.integers(1, 3))))
        out.append(Message("assistant", draw(text), tool_calls=calls))
        for call in calls:
            if draw(st.integers(0, 5)) == 0:
                out.append(Message("system", draw(text)))
            out.append(Message("tool", draw(text), tool_call_id=call.id, name="look"))
    return out


def send(window: ContextWindow, messages: list[Message], tools: Sequence[Any] = (),
         summary: str = "S") -> tuple[Sequence[Message], list[Event], int]:
    """What ``fit`` sends for one call (summary calls answered with ``summary``)."""
    session = Session(messages)
    events: list[Event] = []
    flow = fit(window, session, CallModel(tools=tools), None, events.append)
    summaries = 0
    request = next(flow)
    while request.purpose == "summary":
        summaries += 1
        request = flow.send(Message("assistant", summary))
    return (session.messages if request.messages is None else request.messages), events, \
        summaries


def _tokens(messages: Sequence[Message], tools: Sequence[Any] = ()) -> int:
    tool_tokens = estimate_text(json.dumps(list(tools), ensure_ascii=False)) if tools else 0
    return sum(estimate_message(m) for m in messages) + tool_tokens


def check_sent(history: list[Message], sent: Sequence[Message], budget: int,
               tools: Sequence[Any] = (), summarized: bool = False) -> None:
    assert sent[-1] is history[-1]
    # The documented shape: the system messages of the part left out, in order; the summary;
    # the newest user message if the tail starts after it; the tail (a suffix of the history).
    tail = 0
    while tail < len(sent) and tail < len(history) and \
            sent[len(sent) - 1 - tail] is history[len(history) - 1 - tail]:
        tail += 1
    cut = len(history) - tail
    head = list(sent[:len(sent) - tail])
    systems = [m for m in history[:cut] if m.role == "system"]
    assert head[:len(systems)] == systems and all(
        a is b for a, b in zip(head, systems, strict=False))
    rest = head[len(systems):]
    if summarized:
        assert rest[0].role == "system" and rest[0].content.startswith("Summary of")
        rest = rest[1:]
    users = [i for i, m in enumerate(history) if m.role == "user"]
    if users and users[-1] < cut:
        assert len(rest) == 1 and rest[0] is history[users[-1]]
    else:
        assert rest == []
    body = [m for m in sent if not (summarized and m is sent[len(systems)])]
    # Never a result without its call, never a call without all its results.
    sent_calls = {c.id for m in body for c in m.tool_calls}
    sent_results = {m.tool_call_id for m in body if m.role == "tool"}
    all_results = {m.tool_call_id for m in history if m.role == "tool"}
    assert sent_results <= sent_calls
    assert sent_calls & all_results <= sent_results
    assert _tokens(sent, tools) <= budget


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(10, 2000), st.booleans(), st.none() | st.integers(1, 8))
def test_what_is_sent_keeps_the_rules(history: list[Message], budget: int, tools: bool,
                                      keep_last: int | None) -> None:
    schemas = TOOLS if tools else ()
    before = list(history)
    window = ContextWindow(budget, keep_last=keep_last)
    try:
        sent, events, _ = send(window, history, schemas)
    except ContextLengthError as exc:
        assert f"ContextWindow(max_tokens={budget})" in str(exc)
        assert "the newest messages alone need about" in str(exc)
        assert history == before
        return
    assert history == before  # the session's history is never changed
    check_sent(history, sent, budget, schemas)
    if _tokens(history, schemas) <= budget and keep_last is None:
        assert sent is history or list(sent) == history
        assert events == []
    if events:
        [event] = events
        assert isinstance(event, ContextTrimmed)
        assert (event.kept, event.dropped, event.summarized) == \
            (len(sent), len(history) - len(sent), False)


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(60, 2000))
def test_with_a_summary_too(history: list[Message], budget: int) -> None:
    window = ContextWindow(budget, summarize=True)
    before = list(history)
    try:
        sent, _, summaries = send(window, history)
    except ContextLengthError:
        return
    assert history == before
    summarized = any(m.content.startswith(SUMMARY_HEADER[:10]) for m in sent)
    check_sent(history, sent, budget, summarized=summarized)
    # One call per cut; more only when the part left out is longer than the window itself.
    assert (summaries >= 1) if summarized else summaries == 0


@settings(max_examples=100, deadline=None)
@given(histories(), st.lists(st.integers(1, 5), max_size=6))
def test_the_index_grows_as_if_built_at_once(history: list[Message], steps: list[int]) -> None:
    grown, at = Index(), 0
    for step in steps:
        at = min(len(history), at + step)
        grown.extend(history[:at])
    grown.extend(history)
    whole = Index()
    whole.extend(history)
    fields = ("pre", "count", "span", "systems", "system_tokens", "user", "user_tokens", "n")
    assert [getattr(grown, f) for f in fields] == [getattr(whole, f) for f in fields]


def test_the_window_follows_a_growing_list_and_notices_a_new_one() -> None:
    window = ContextWindow(1000)
    messages = [Message("user", "a" * 40)]
    index = window.index(messages)
    messages.append(Message("assistant", "b" * 40))
    assert window.index(messages) is index and index.n == 2
    messages[1] = Message("assistant", "c")  # replaced, not appended: rebuilt
    assert window.index(messages) is not index


def test_parallel_results_stay_with_their_call() -> None:
    calls = (ToolCall("1", "look", {}), ToolCall("2", "look", {}))
    history = [Message("system", "Be brief."), Message("user", "x" * 400),
               Message("assistant", "y" * 400),
               Message("user", "now look"), Message("assistant", "", tool_calls=calls),
               Message("tool", "r" * 200, tool_call_id="1"),
               Message("tool", "s" * 200, tool_call_id="2")]
    sent, events, _ = send(ContextWindow(200), history)
    assert [m.role for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[1].content == "now look"
    assert events == [ContextTrimmed(dropped=2, kept=5, summarized=False)]


def test_the_newest_user_message_is_kept_ahead_of_a_long_tool_loop() -> None:
    history = [Message("system", "S"), Message("user", "Find the file.")]
    for n in range(10):
        call = ToolCall(f"c{n}", "look", {})
        history += [Message("assistant", "", tool_calls=(call,)),
                    Message("tool", "z" * 100, tool_call_id=f"c{n}")]
    sent, _, _ = send(ContextWindow(200), history)
    assert [m.role for m in sent[:2]] == ["system", "user"]
    assert sent[1].content == "Find the file."
    assert sent[-1] is history[-1] and sent[-2] is history[-2]


def test_keep_last_bounds_the_count() -> None:
    history = [Message("system", "S")] + [Message("user" if i % 2 else "assistant", str(i))
                                          for i in range(1, 21)]
    sent, _, _ = send(ContextWindow(10_000, keep_last=4), history)
    assert [m.content for m in sent] == ["S", "17", "18", "19", "20"]


def test_too_long_names_both_sizes() -> None:
    history = [Message("system", "s" * 400), Message("user", "u" * 4000)]
    with pytest.raises(ContextLengthError) as caught:
        send(ContextWindow(500), history)
    assert str(caught.value) == (
        "the conversation does not fit in ContextWindow(max_tokens=500): the newest messages "
        "alone need about 1108 tokens (estimated, with 104 of system messages and tool "
        "schemas) but at most 500 may be sent. Raise max_tokens, or send shorter messages")


def test_a_summary_is_kept_in_state_and_reused() -> None:
    history = [Message("system", "S")] + [Message("user" if i % 2 else "assistant", "w" * 80)
                                          for i in range(1, 91)]
    window = ContextWindow(2000, summarize=True)
    session = Session(history)
    flow = fit(window, session, CallModel(), None, lambda e: None)
    ask = next(flow)
    assert ask.purpose == "summary" and ask.model is None and ask.tools == ()
    assert ask.messages[0].content.startswith("You summarise the earlier part")
    request = flow.send(Message("assistant", "They talked about w.",
                                metadata={"usage": {"prompt_tokens": 7, "total_tokens": 9}}))
    record = session.internal[CONTEXT_KEY]
    assert session.state == {}  # convo's record is not the conversation's variables
    assert record["summary"] == "They talked about w."
    assert record["calls"] == 1 and record["usage"]["prompt_tokens"] == 7
    assert request.messages[1].content.startswith("Summary of the earlier conversation (")
    # The next call, two messages later, reuses it: no summary call.
    session.messages += [Message("user", "more"), Message("assistant", "ok")]
    again = next(fit(window, session, CallModel(), None, lambda e: None))
    assert again.purpose == "reply"
    assert again.messages[1] == request.messages[1]


def test_a_summary_made_for_another_history_is_not_used() -> None:
    history = [Message("user" if i % 2 else "assistant", "w" * 80) for i in range(1, 41)]
    session = Session(history, internal={CONTEXT_KEY: {"summary": "old", "upto": 10,
                                                       "check": "x"}})
    flow = fit(ContextWindow(400, summarize=True), session, CallModel(), None, lambda e: None)
    assert next(flow).purpose == "summary"


def test_the_ratio_reported_by_the_model_corrects_the_estimate() -> None:
    window = ContextWindow(1000)
    reply = Message("assistant", "ok", metadata={"usage": {"prompt_tokens": 500}})
    window.observe(None, 250, reply)
    assert window.ratio(None) == 2.0
    assert window.estimate([Message("user", "a" * 400)]) == 208  # (100 + 4) * 2
    window.observe(None, 250, Message("assistant", "no usage"))
    assert window.ratio(None) == 2.0


def test_definition_errors() -> None:
    with pytest.raises(DefinitionError, match=r"ContextWindow\(max_tokens=...\) must be a "
                                              r"whole number >= 1, got 0"):
        ContextWindow(0)
    with pytest.raises(DefinitionError, match="keep_last"):
        ContextWindow(10, keep_last=0)
    with pytest.raises(DefinitionError, match=r"ContextWindow\(summary_model=...\) must be a "
                                              r"Model \(complete/acomplete\) or None, got str"):
        ContextWindow(10, summary_model="gpt-4o-mini")  # type: ignore[arg-type]


# --- the estimate against real token counts ----------------------------------------------------

def test_the_estimate_on_real_texts_is_within_the_documented_error() -> None:
    counts = json.loads((DATA / "tokens.json").read_text(encoding="utf-8"))["counts"]
    errors = {}
    for name, real in counts.items():
        estimate = estimate_text((DATA / name).read_text(encoding="utf-8"))
        errors[name] = {enc: round(100 * (estimate - n) / n) for enc, n in real.items()}
    # The table in docs/context.md.
    assert errors == {
        "chinese.txt": {"o200k_base": 1, "cl100k_base": -38},
        "code.txt": {"o200k_base": 13, "cl100k_base": 13},
        "english.txt": {"o200k_base": 14, "cl100k_base": 14},
        "german.txt": {"o200k_base": 20, "cl100k_base": -8},
        "russian.txt": {"o200k_base": 82, "cl100k_base": -4},
        "tool_result.json": {"o200k_base": 9, "cl100k_base": 8},
    }


# --- a server's context-length error ----------------------------------------------------------

@pytest.mark.parametrize("message", [
    "This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 130412 tokens. Please reduce the length of the messages.",          # OpenAI
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(4900 in the messages, 100 in the completion).",                       # vLLM
    "the request exceeds the available context size, try increasing it",   # llama.cpp
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096.",  # TGI
    "Trying to keep the first 5000 tokens when context the overflows. However, the model is "
    "loaded with context length of only 4096 tokens",                       # LM Studio
])
def test_context_length_wordings_are_recognised(message: str) -> None:
    hint = context_length_hint(message)
    assert hint is not None and "ContextWindow" in hint


@pytest.mark.parametrize("message", ["Invalid API key", "model 'x' not found",
                                     "Rate limit reached"])
def test_other_errors_get_no_context_hint(message: str) -> None:
    assert context_length_hint(message) is None
