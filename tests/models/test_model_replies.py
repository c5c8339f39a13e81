"""What a model's reply says beyond its text: a reply cut off at the
token limit is visible (an event, a note in the terminal) and can be made an error; a call
that reports no usage is counted as unknown, not as zero tokens."""

from __future__ import annotations

import io
from typing import Any

import pytest

from convo import Message, Runner, RunStatus, Session
from convo._session import Usage
from convo._terminal.printer import ConsolePrinter
from convo.events import Event, ModelCallEnded, ReplyTruncated
from convo.models import FunctionModel
from convo.templates import AssistantTemplate, LinearTemplate, UserTemplate


def _model(*replies: Message) -> FunctionModel:
    left = list(replies)

    def reply(messages: Any, tools: Any) -> Message:
        return left.pop(0)

    return FunctionModel(reply)


CUT = Message("assistant", "The answer is a long", metadata={"finish_reason": "length"})
FULL = Message("assistant", "Done.", metadata={"finish_reason": "stop",
                                               "usage": {"prompt_tokens": 3,
                                                         "completion_tokens": 1,
                                                         "total_tokens": 4}})
CHAT = LinearTemplate([UserTemplate("Tell me."), AssistantTemplate(), UserTemplate("More."),
                       AssistantTemplate()])


def test_a_cut_off_reply_is_kept_and_said() -> None:
    events: list[Event] = []
    session = Runner(_model(CUT, FULL), CHAT, on_event=events.append).run()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    assert [m.content for m in session.messages] == ["Tell me.", "The answer is a long",
                                                     "More.", "Done."]
    assert [e for e in events if isinstance(e, ReplyTruncated)] == [ReplyTruncated(1, CUT)]


def test_a_bot_can_make_a_cut_off_reply_an_error() -> None:
    runner = Runner(_model(CUT, FULL), CHAT, truncated_is_error=True, raise_errors=False)
    session = runner.run()
    assert session.outcome is not None and session.outcome.status == RunStatus.ERROR
    assert session.outcome.error == (
        "ModelError: model call 1 was cut off at the model's token limit (finish_reason "
        "'length') after 20 characters: raise max_tokens, or shorten what the model is asked "
        "for")
    assert [m.content for m in session.messages] == ["Tell me."]


def test_the_terminal_notes_a_cut_off_reply_after_it() -> None:
    out = io.StringIO()
    Runner(_model(CUT, FULL), CHAT, on_event=ConsolePrinter(out, fancy=False)).run()
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        "You: Tell me.",
        "Assistant: The answer is a long",
        "--- the reply was cut off at the model's token limit (max_tokens) ---",
    ]
    assert lines[3:5] == ["You: More.", "Assistant: Done."]


def test_unreported_usage_is_unknown_not_zero() -> None:
    plain = Message("assistant", "No usage here.")
    events: list[Event] = []
    session = Runner(_model(plain, FULL), CHAT, on_event=events.append).run()
    usages = [e.usage for e in events if isinstance(e, ModelCallEnded)]
    assert usages == [Usage(unreported=1), Usage(3, 1, 4)]
    assert not usages[0].known and usages[1].known
    assert session.outcome is not None
    assert session.outcome.usage == Usage(3, 1, 4, unreported=1)
    assert not session.outcome.usage.known
    assert Session.from_json(session.to_json()).outcome == session.outcome


def test_a_lone_surrogate_reaches_the_terminal_escaped() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    reply = Message("assistant", "r\udce9sum\udce9.txt")
    Runner(_model(reply), LinearTemplate([AssistantTemplate()]),
           on_event=ConsolePrinter(stream, fancy=False)).run()
    assert raw.getvalue().decode().splitlines()[0] == "Assistant: r\\udce9sum\\udce9.txt"


@pytest.mark.parametrize("value", [False, True])
def test_the_runner_option_defaults_to_keeping(value: bool) -> None:
    runner = Runner(None, CHAT, truncated_is_error=value)
    assert runner.truncated_is_error is value
    assert Runner(None, CHAT).truncated_is_error is False


def test_the_turn_says_a_reply_was_cut_off() -> None:
    from convo import ToolingTemplate

    agent = LinearTemplate([UserTemplate("Tell me."), ToolingTemplate([])])
    cut = Runner(_model(CUT), agent).run()
    full = Runner(_model(FULL), agent).run()
    assert [t.truncated for t in cut.turns + full.turns] == [True, False]
    assert Session.from_json(cut.to_json()).turns == cut.turns
