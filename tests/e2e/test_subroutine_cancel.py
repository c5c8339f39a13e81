"""Ctrl-C inside a subroutine, then `convo run --resume`: nothing recorded is done again.

The real command in a pseudo-terminal (tests/terminal_harness.py); the bot file
(cli_fixtures/subroutine.py) logs every model call and tool run to a file, so the counts are
exact. A resumed run replays what the transcript holds and goes on from where the first run
stopped, exactly as the uninterrupted run would have.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from terminal_harness import Spawn, Terminal, env, terminal

from convo import Message, RunStatus
from convo._transcript import load_transcript

__all__ = ["env", "terminal"]  # fixtures

FIXTURES = Path(__file__).resolve().parents[1] / "cli_fixtures"
BOT = str(FIXTURES / "subroutine.py")
STREAM = str(FIXTURES / "stream.py")
CANCELLED = "Cancelled by the user (Ctrl-C)"
LABEL = "SubroutineTemplate(template_id='research')"


@pytest.fixture
def log(env: dict[str, str], tmp_path: Path) -> Path:
    env["SUB_LOG"] = str(tmp_path / "log")
    return tmp_path / "log"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def cancel_the_wait(t: Terminal) -> None:
    t.say("research", "(the tool is waiting)")
    t.child.sendintr()  # the child's turn ends (stopped); the child goes on


def resume_and_chat(terminal: Spawn, path: Path, *, confirm: bool) -> Terminal:
    t = terminal("run", BOT, "--resume", str(path), "--save", str(path))
    if confirm:
        t.expect("Confirm?")
        t.say("yes", "You said: yes")
    t.say("again", "You said: again")
    assert t.exit() == 0
    return t


RESEARCHED = ["model user: research", "tool note one", "model tool: noted one", "tool wait"]


def test_a_tool_cancelled_in_a_subroutine_is_not_run_or_answered_again_on_resume(
        terminal: Spawn, tmp_path: Path, log: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", BOT, "--save", str(path))
    cancel_the_wait(t)
    t.expect("Confirm?")
    t.say("yes", "Assistant: You said: yes")  # the child's last reply, kept by the parent
    t.say("hello", "You said: hello")
    assert t.exit() == 0
    first = load_transcript(path)
    assert lines(log) == [*RESEARCHED, "model user: yes", "model user: hello"]
    [run] = first.subroutines
    assert [(m.role, m.content) for m in run.messages] == [
        ("user", "research"), ("assistant", ""), ("tool", "noted one"), ("assistant", ""),
        ("tool", CANCELLED), ("user", "yes"), ("assistant", "You said: yes")]

    resume_and_chat(terminal, path, confirm=False)
    assert lines(log) == [*RESEARCHED, "model user: yes", "model user: hello",
                          "model user: again"]
    session = load_transcript(path)
    assert session.subroutines == first.subroutines
    assert session.messages == [*first.messages, Message("user", "again"),
                                Message("assistant", "You said: again")]


@pytest.mark.parametrize("cancel", ["tool", "model"])
def test_a_run_quit_inside_a_subroutine_goes_on_inside_it_on_resume(
        terminal: Spawn, tmp_path: Path, log: Path, cancel: str) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", BOT, "--save", str(path))
    if cancel == "tool":
        cancel_the_wait(t)
        done = RESEARCHED
    else:
        t.say("hang", "Partial")
        t.child.sendintr()  # the partial reply is kept on the child's session
        done = ["model user: hang"]
    t.expect("Confirm?")
    t.end_of_input()  # the user leaves while the child waits for them
    assert t.finish() == 0
    first = load_transcript(path)
    assert first.messages == []  # the parent got nothing yet
    [run] = first.subroutines  # the child's record is in the transcript all the same
    assert run.label == LABEL
    assert first.outcome is not None and first.outcome.status is RunStatus.STOPPED

    t = resume_and_chat(terminal, path, confirm=True)
    assert "resuming" in t.seen
    assert lines(log) == [*done, "model user: yes", "model user: again"]
    session = load_transcript(path)
    [run] = session.subroutines
    assert [m.content for m in run.messages][-2:] == ["yes", "You said: yes"]
    assert [m.content for m in session.messages] == ["You said: yes", "again",
                                                     "You said: again"]


def test_a_cancelled_tool_at_the_top_level_is_not_answered_again_on_resume(
        terminal: Spawn, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", STREAM, "--save", str(path))
    t.type("tool")
    t.interrupt("(the tool is waiting)", f"↳ wait: {CANCELLED}")
    assert t.exit() == 0
    first = load_transcript(path)
    t = terminal("run", STREAM, "--resume", str(path), "--save", str(path))
    t.say("hello", "You said: hello")
    assert t.exit() == 0
    assert "the template took another path" not in t.seen
    assert "The tool said" not in t.seen
    session = load_transcript(path)
    assert session.messages == [*first.messages, Message("user", "hello"), Message(
        "assistant", "You said: hello", metadata=session.messages[-1].metadata)]
    assert [turn.status for turn in session.turns] == [RunStatus.STOPPED, RunStatus.COMPLETED]
    assert session.turns[0] == first.turns[0]

