"""ConsolePrinter: who speaks, compact tool lines, streamed text, colour only in a terminal."""

from __future__ import annotations

import io

import pytest

from convo import (
    FinishResponseTool,
    LinearTemplate,
    Message,
    MockModel,
    ScriptedInterface,
    ToolingTemplate,
    UserTemplate,
    tool,
)
from convo.events import TextDelta
from convo.terminal.printer import ConsolePrinter
from convo.terminal.runner import CommandLineRunner


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
        "--- conversation started (/exit or Ctrl-D to quit) ---\n"
        "You: 2+2?\n"
        "Assistant: Let me add.\n"
        '  → add({"a": 2, "b": 2})\n'
        "  ↳ add: 4\n"
        "Assistant: It is 4.\n"
        "  → finish_response({})\n"
        "  ↳ finish_response: Response complete.\n"
        "--- conversation completed: the model called 'finish_response' "
        "(5 messages, 2 model calls) ---\n"
    )


def test_streamed_text_is_shown_once() -> None:
    out = io.StringIO()
    printer = ConsolePrinter(out)
    for event in (TextDelta("Hel"), TextDelta("lo!")):
        printer(event)
    from convo.events import MessageAdded

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
    ConsolePrinter(out, fancy=True).show(Message("assistant", "Hi"))
    assert out.getvalue() == "\x1b[1;36mAssistant:\x1b[0m Hi\n"
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    ConsolePrinter(out, fancy=True).show(Message("assistant", "Hi"))
    assert out.getvalue() == "Assistant: Hi\n"


def test_not_a_terminal_means_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    printer = ConsolePrinter(io.StringIO())
    assert not printer.fancy and not printer.color
