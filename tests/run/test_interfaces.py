"""User interfaces (API.md §6): the protocol, scripted, echo, the terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from convo import (
    CLIInterface,
    CommandLineRunner,
    EchoMockInterface,
    Message,
    Runner,
    RunStatus,
    ScriptedInterface,
    Session,
    UserInterface,
)
from convo._botfile import load_file
from convo._terminal.printer import ConsolePrinter
from convo.models import MockModel
from convo.templates import AssistantTemplate, LinearTemplate, UserTemplate

TUTOR = Path(__file__).resolve().parents[1] / "cli_fixtures" / "chat.py"


def test_scripted_interface_answers_in_order_and_records_the_prompts() -> None:
    ui = ScriptedInterface(["a", "b"])
    session = Session()
    assert ui.ask(session, "first?", None) == "a"
    assert ui.ask(session, None, "d") == "b"
    assert ui.asked == ["first?", None]
    assert ui.remaining == 0
    ui.assert_complete()


def test_scripted_interface_running_out_is_end_of_input() -> None:
    ui = ScriptedInterface(["a"])
    ui.ask(Session(), None, None)
    with pytest.raises(EOFError) as info:
        ui.ask(Session(), None, None)
    assert str(info.value) == "ScriptedInterface ran out of replies (1 scripted)"


def test_scripted_interface_assert_complete() -> None:
    ui = ScriptedInterface(["a", "b", "c"])
    ui.ask(Session(), None, None)
    with pytest.raises(AssertionError) as info:
        ui.assert_complete()
    assert str(info.value) == (
        "ScriptedInterface: 2 of 3 replies were not used; next unused: 'b'"
    )


def test_echo_mock_interface_answers_with_the_last_message() -> None:
    ui = EchoMockInterface()
    assert ui.ask(Session([Message("assistant", "Say something")]), None, None) == "Say something"
    assert ui.ask(Session(), None, "fallback") == "fallback"
    assert ui.ask(Session(), None, None) == ""
    template = LinearTemplate([AssistantTemplate("Repeat after me: hello"), UserTemplate()])
    session = Runner(None, template, ui).run()
    assert session.messages[-1] == Message("user", "Repeat after me: hello")


@pytest.mark.parametrize("ui", [ScriptedInterface(), EchoMockInterface(), CLIInterface()])
def test_interfaces_implement_the_protocol(ui: object) -> None:
    assert isinstance(ui, UserInterface)


def test_cli_interface_reads_lines_from_piped_input(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\nworld\n"))
    ui = CLIInterface()
    assert ui.ask(Session(), "Your question?", None) == "hello"
    assert ui.ask(Session(), None, None) == "world"
    assert capsys.readouterr().out == "Your question?\n"
    with pytest.raises(EOFError):
        ui.ask(Session(), None, None)


@pytest.mark.parametrize("typed", ["/exit", "/quit", "  /exit  ", ""])
def test_cli_exit_commands_and_end_of_input_stop_the_run(monkeypatch: pytest.MonkeyPatch,
                                                         typed: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{typed}\n" if typed else ""))
    session = Runner(None, LinearTemplate([UserTemplate("hi"), UserTemplate()]),
                     CLIInterface()).run()
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    assert session.messages == [Message("user", "hi")]


def test_command_line_runner_shows_the_conversation() -> None:
    out = io.StringIO()
    tutor = load_file(str(TUTOR)).template  # a math tutor that says goodbye to "bye"
    runner = CommandLineRunner(MockModel(["Hello!"]), tutor, ScriptedInterface(["hi", "bye"]),
                               printer=ConsolePrinter(out))
    session = runner.run(Session(state={"subject": "math"}))
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    assert out.getvalue() == (
        "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"
        "System: You are a math tutor.\n"
        "You: hi\n"
        "Assistant: Hello!\n"
        "You: bye\n"
        "Assistant: Goodbye!\n"
        "--- conversation ended: the conversation was ended ('Goodbye!') "
        "(5 messages, 1 model call) ---\n"
    )


def test_command_line_runner_defaults_to_the_terminal() -> None:
    runner = CommandLineRunner(MockModel([]), UserTemplate())
    assert isinstance(runner.user_interface, CLIInterface)
    assert isinstance(runner, Runner)
