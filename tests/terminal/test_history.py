"""The local chat history: where it lives, and what it keeps (SQLite, one row per message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convo import Message, Session
from convo._session import Outcome
from convo._terminal.history import History, Recorder
from convo._terminal.paths import data_dir, input_history_path
from convo.events import MessageAdded, RunEnded


def test_data_dir_follows_convo_home_then_xdg(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("CONVO_HOME", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "b"))
    assert data_dir() == tmp_path / "a"
    monkeypatch.delenv("CONVO_HOME")
    assert data_dir() == tmp_path / "b" / "convo"
    monkeypatch.delenv("CONVO_HISTORY", raising=False)
    assert input_history_path() == tmp_path / "b" / "convo" / "input_history"
    monkeypatch.setenv("CONVO_HISTORY", "")
    assert input_history_path() is None


def test_a_recorder_keeps_each_message_and_what_undo_dropped(tmp_path: Path) -> None:
    history = History(tmp_path / "deep" / "history.db")
    session = Session(state={"x": 1})
    conversation = history.start("chat", None, "m")
    recorder = Recorder(history, conversation, session)
    for message in (Message("user", "a"), Message("assistant", "b"), Message("user", "c")):
        session.messages.append(message)
        recorder(MessageAdded(message, len(session.messages) - 1))
    assert history.load(conversation).messages == session.messages  # committed as it goes
    del session.messages[1:]  # /undo, twice
    recorder.sync()
    session.messages.append(Message("user", "d"))
    recorder(MessageAdded(session.messages[-1], 1))
    outcome = Outcome(status="stopped", messages=2)
    recorder(RunEnded(outcome))
    last = history.last("chat")
    assert last is not None
    assert last[0] == conversation
    assert last[1] == Session([Message("user", "a"), Message("user", "d")], {"x": 1},
                              outcome=outcome)
    assert history.last("run") is None
    history.close()
