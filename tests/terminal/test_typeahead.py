"""Keys typed while the model answers are not echoed (they would garble the live region) and
the terminal gets its echo back: checked on a real pseudo-terminal's settings."""

from __future__ import annotations

import io
import os
import termios
from collections.abc import Iterator

import pytest

from convo import Message, MockModel, Runner
from convo._terminal.printer import ConsolePrinter
from convo._terminal.typeahead import TypeAhead, release_all
from convo.events import MessageAdded, ModelCallStarted
from convo.templates import AssistantTemplate, LinearTemplate, UserTemplate


@pytest.fixture
def tty() -> Iterator[io.TextIOWrapper]:
    main, secondary = os.openpty()
    stream = os.fdopen(secondary, "r")
    try:
        yield stream
    finally:
        stream.close()
        os.close(main)


def echo(stream: io.TextIOWrapper) -> bool:
    return bool(termios.tcgetattr(stream.fileno())[3] & termios.ECHO)


def test_hold_turns_echo_off_and_release_back_on(tty: io.TextIOWrapper) -> None:
    typeahead = TypeAhead(tty)
    assert echo(tty)
    typeahead.hold()
    typeahead.hold()  # twice is once
    assert (echo(tty), typeahead.held) == (False, True)
    typeahead.release()
    assert (echo(tty), typeahead.held) == (True, False)
    typeahead.hold()
    release_all()  # what the process does on its way out, even after a double Ctrl-C
    assert echo(tty)


def test_not_a_terminal_is_left_alone() -> None:
    typeahead = TypeAhead(io.StringIO())
    typeahead.hold()
    assert not typeahead.held


def _printer(tty: io.TextIOWrapper, *, quiet_until_prompt: bool) -> ConsolePrinter:
    printer = ConsolePrinter(io.StringIO(), fancy=True, markdown=False)
    printer.typeahead = TypeAhead(tty)
    printer.quiet_until_prompt = quiet_until_prompt
    return printer


def test_the_printer_gives_echo_back_once_the_reply_is_shown(tty: io.TextIOWrapper) -> None:
    printer = _printer(tty, quiet_until_prompt=False)
    seen: list[bool] = []

    def on_event(event: object) -> None:
        printer(event)  # type: ignore[arg-type]
        if isinstance(event, ModelCallStarted):
            seen.append(echo(tty))

    template = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
    Runner(MockModel(["hello"]), template, on_event=on_event).run()
    printer.spinner.stop()
    assert seen == [False]  # off while the model answered
    assert echo(tty)  # on again after the reply


def test_with_the_line_editor_echo_stays_off_until_the_run_ends(tty: io.TextIOWrapper) -> None:
    printer = _printer(tty, quiet_until_prompt=True)
    after_reply: list[bool] = []

    def on_event(event: object) -> None:
        printer(event)  # type: ignore[arg-type]
        if isinstance(event, MessageAdded) and event.message == Message("assistant", "hello"):
            after_reply.append(echo(tty))

    template = LinearTemplate([UserTemplate("hi"), AssistantTemplate()])
    Runner(MockModel(["hello"]), template, on_event=on_event).run()
    printer.spinner.stop()
    assert after_reply == [False]
    assert echo(tty)  # RunEnded gave it back


def test_a_streamed_reply_inside_a_subroutine_ends_with_its_call() -> None:
    """A subroutine's messages come as no MessageAdded: its streamed reply must end at
    ModelCallEnded, or the live region would go on redrawing under the next prompt."""
    from convo._session import NO_USAGE
    from convo.events import ModelCallEnded, SubroutineStarted, TextDelta

    for markdown in (False, True):
        out = io.StringIO()
        printer = ConsolePrinter(out, fancy=False, markdown=markdown)
        reply = Message("assistant", "Partial", metadata={"cancelled": True})
        for event in (SubroutineStarted("confirm"), ModelCallStarted(1, 1, 0),
                      TextDelta("Partial"), ModelCallEnded(1, reply, NO_USAGE, 0.1)):
            printer(event)
        if markdown:
            assert not printer.view.streaming
            assert out.getvalue().rstrip().endswith("Partial")
        else:
            assert out.getvalue() == "Assistant: Partial\n"
