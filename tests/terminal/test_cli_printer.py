"""ConsolePrinter: who speaks, compact tool lines, streamed text, colour only in a terminal."""

from __future__ import annotations

import io

import pytest
from terminal_harness import plain

from convo import Message, ScriptedInterface
from convo._session import Usage
from convo._terminal.printer import ConsolePrinter
from convo._terminal.runner import CommandLineRunner
from convo.events import MessageAdded, ModelCallEnded, TextDelta
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import FinishResponseTool, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def test_tool_calls_and_results_take_one_line_each() -> None:
    out = io.StringIO()
    template = LinearTemplate([UserTemplate(), ToolingTemplate([add, FinishResponseTool()])])
    model = MockModel(["Let me add. {add(a=2, b=2)}", "It is 4. {finish_response()}"])
    CommandLineRunner(model, template, ScriptedInterface(["2+2?"]),
                      printer=ConsolePrinter(out)).run()
    assert out.getvalue() == (
        "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"
        "You: 2+2?\n"
        "Assistant: Let me add.\n"
        '  → add({"a": 2, "b": 2})\n'
        "  ↳ add: 4\n"
        "Assistant: It is 4.\n"  # the finish tool's call and result are not shown
        "--- conversation completed: the model called 'finish_response' "
        "(5 messages, 2 model calls) ---\n"
    )


def test_streamed_text_is_shown_once() -> None:
    out = io.StringIO()
    printer = ConsolePrinter(out)
    for event in (TextDelta("Hel"), TextDelta("lo!")):
        printer(event)
    printer(MessageAdded(Message("assistant", "Hello!"), 0))
    assert out.getvalue() == "Assistant: Hello!\n"


def test_long_tool_results_are_cut_to_one_line() -> None:
    out = io.StringIO()
    ConsolePrinter(out).show(Message("tool", "line one\nline two " + "x" * 300, name="read",
                                     tool_call_id="c1"))
    line = out.getvalue()
    assert line.startswith("  ↳ read: line one line two xxx")
    assert line.endswith("…\n") and len(line) == len("  ↳ read: ") + 200 + 1


def test_colour_in_a_terminal_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    ConsolePrinter(out, fancy=True, markdown=False).show(Message("assistant", "Hi"))
    assert out.getvalue() == "\x1b[1;36mAssistant:\x1b[0m Hi\n"
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    ConsolePrinter(out, fancy=True, markdown=False).show(Message("assistant", "Hi"))
    assert out.getvalue() == "Assistant: Hi\n"


def test_not_a_terminal_means_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    printer = ConsolePrinter(io.StringIO())
    assert not printer.fancy and not printer.color


def test_markdown_in_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    ConsolePrinter(out, fancy=True).show(
        Message("assistant", "Some **bold** and `code`.\n\n- one\n- two"))
    assert plain(out.getvalue()) == "Assistant: Some bold and code.\n\n • one\n • two\n"
    assert "\x1b[1mbold\x1b[0m" in out.getvalue()


@pytest.mark.parametrize(("text", "shown"), [
    pytest.param("- one\n- two", "Assistant:\n\n • one\n • two\n",
                 id="a_block_has_its_label_on_a_line_of_its_own"),
    pytest.param("2 + 2 = 4", "Assistant: 2 + 2 = 4\n", id="a_number_is_still_a_paragraph"),
])
def test_a_reply_that_opens_with(monkeypatch: pytest.MonkeyPatch, text: str, shown: str) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    ConsolePrinter(out, fancy=True).show(Message("assistant", text))
    assert plain(out.getvalue()) == shown


def test_token_usage_follows_the_reply_in_a_line() -> None:
    out = io.StringIO()
    printer = ConsolePrinter(out)
    reply = Message("assistant", "Hi")
    printer(ModelCallEnded(1, reply, Usage(12, 5, 17), 0.1))
    printer(MessageAdded(reply, 1))
    assert out.getvalue() == "Assistant: Hi\n  (12 tokens in, 5 out)\n"


def test_a_cancelled_reply_says_so() -> None:
    out = io.StringIO()
    printer = ConsolePrinter(out)
    printer(TextDelta("Half"))
    printer(MessageAdded(Message("assistant", "Half", metadata={"cancelled": True}), 1))
    printer(MessageAdded(Message("assistant", "", metadata={"cancelled": True}), 3))
    assert out.getvalue() == (
        "Assistant: Half\n  (reply cancelled with Ctrl-C; the partial reply is kept)\n"
        "  (reply cancelled with Ctrl-C)\n")
