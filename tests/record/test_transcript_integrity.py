"""Transcripts that cannot be corrupted or mixed: a cut anywhere (even
inside a character) loses only the cut line; any unreadable file is a one-line error; two
writers of one file are refused; lone surrogates are kept; state that JSON would not return
exactly is refused where it changes."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from weather_tools import chat

from convo import Message, Runner, RunStatus, ScriptedInterface, Session, ToolCall
from convo._errors import TranscriptError
from convo._resume import resume
from convo._transcript import TranscriptWriter, read_transcript
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import tool

CHAT = chat("Tu parles {{ subject }} ☃.")
SAID = ["héllo ☃", "ça va? 😀", "日本語で"]
REPLIES = ["Bonjour ☃!", "Très bien 😀.", "はい。"]
FIXTURES = Path(__file__).resolve().parents[1] / "cli_fixtures"


def save(path: Path, said: list[str] = SAID, replies: list[str] = REPLIES) -> Session:
    session = Session(state={"subject": "français"})
    writer = TranscriptWriter.create(path, session, source="test")
    try:
        return Runner(MockModel(list(replies)), CHAT, ScriptedInterface(list(said)),
                      on_event=writer).run(session)
    finally:
        writer.close()


def continue_saved(path: Path, said: list[str], replies: list[str]) -> Session:
    transcript = read_transcript(path)
    template, session = resume(CHAT, transcript.session)
    writer = TranscriptWriter.append(path, session, transcript)
    try:
        return Runner(MockModel(list(replies)), template, ScriptedInterface(list(said)),
                      on_event=writer).run(session)
    finally:
        writer.close()


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Session]:
    path = tmp_path_factory.mktemp("full") / "chat.jsonl"
    return path.read_bytes() if save(path) else b"", load_full(path)


def load_full(path: Path) -> Session:
    return read_transcript(path).session


def _parsed(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


# --- item 4: a cut anywhere, even inside a character ------------------------------------------


def test_every_cut_reads_back_everything_before_it(tmp_path: Path,
                                                  full: tuple[bytes, Session]) -> None:
    data, session = full
    header_end = data.index(b"\n") + 1
    multibyte_cuts = 0
    for cut in range(header_end, len(data)):
        path = tmp_path / "cut.jsonl"
        path.write_bytes(data[:cut])
        transcript = read_transcript(path)
        records = [_parsed(line) for line in data[:cut].split(b"\n") if line]
        kept = sum(r is not None and r["type"] == "message" for r in records)
        assert transcript.session.messages == session.messages[:kept], cut
        assert transcript.cut_off == (records[-1] is None)
        multibyte_cuts += data[cut - 1] >= 0x80 and data[cut] >= 0x80
    assert multibyte_cuts > 20  # the cuts inside characters were among them


def _resume_after(tmp: Path, data: bytes, cut: int, session: Session) -> None:
    path = tmp / f"cut{cut}.jsonl"
    path.write_bytes(data[:cut])
    before = read_transcript(path).session.messages
    users = sum(m.role == "user" for m in before)
    answers = sum(m.role == "assistant" for m in before)
    resumed = continue_saved(path, SAID[users:], REPLIES[answers:])
    assert [m.content for m in resumed.messages] == [m.content for m in session.messages]
    assert read_transcript(path).session.messages == resumed.messages, cut


def test_resuming_after_a_kill_at_each_line_end_loses_nothing(
        tmp_path: Path, full: tuple[bytes, Session]) -> None:
    data, session = full
    ends = [i for i, byte in enumerate(data) if byte == ord("\n")][:-1]
    for end in ends:  # the line complete but its newline missing; and one byte short
        _resume_after(tmp_path, data, end, session)
        if end != ends[0]:  # a header cut short is not a transcript yet: nothing to resume
            _resume_after(tmp_path, data, end - 1, session)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_resuming_after_a_kill_anywhere_loses_nothing(tmp_path_factory: pytest.TempPathFactory,
                                                     full: tuple[bytes, Session],
                                                     cut: int) -> None:
    data, session = full
    header_end = data.index(b"\n") + 1
    cut = header_end + cut % (len(data) - header_end)
    _resume_after(tmp_path_factory.mktemp("kill"), data, cut, session)


@pytest.mark.parametrize(("data", "error"), [
    (b"\xff\xfe\x00garbage\n", "is not a convo transcript"),
    (b'{"type": "header", "format": "convo.transcript", "version": 1}\n\xff\xff\n{}\n',
     "line 2: not a transcript line (UnicodeDecodeError: 'utf-8' codec can't decode byte "
     "0xff in position 0: invalid start byte)"),
    (b'{"type": "header", "format": "convo.transcript", "version": 1}\n' + b"[" * 100_000
     + b"\n{}\n", "line 2: not a transcript line (RecursionError: maximum recursion depth "),
    (b'{"type": "header", "format": "convo.transcript", "version": 1}\n'
     b'{"type": "message", "index": 0, "message": [1, 2]}\n',
     "line 2: a malformed 'message' line (TypeError: list indices must be integers"),
    (b'{"type": "header", "format": "convo.transcript", "version": 1, "state": 7}\n',
     "line 1: a malformed 'header' line (TypeError: 'int' object is not iterable)"),
    (b'{"type": "header", "format": "convo.transcript", "version": 1}\n'
     b'{"type": "resumed", "messages": "x"}\n', "line 2: a malformed 'resumed' line"),
])
def test_unreadable_transcripts_are_one_line_errors(tmp_path: Path, data: bytes,
                                                    error: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    assert error in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", [
    b'{"type": "header", "format": "convo.transcript", "version": 1}\n\xff\xff\n{}\n',
    b'{"type": "header", "format": "convo.transcript", "version": 1}\n'
    b'{"type": "message", "index": 0, "message": [1, 2]}\n',
])
@pytest.mark.parametrize("command", ["replay", "run"])
def test_replay_and_resume_of_an_unreadable_transcript_print_no_traceback(
        tmp_path: Path, data: bytes, command: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
    run = ["run", str(FIXTURES / "chat.py"), "--resume", str(path)]
    for args in [["replay", str(path)] if command == "replay" else run]:
        result = subprocess.run([sys.executable, "-m", "convo", *args], env=env, input="",
                                capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("convo: error: ") and result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr


# --- item 5: two runs on one transcript ---------------------------------------------------------


def test_a_second_writer_of_one_transcript_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    save(path, SAID[:1], REPLIES[:1])
    first, second = read_transcript(path), read_transcript(path)
    writer = TranscriptWriter.append(path, Session(), first)
    try:
        with pytest.raises(TranscriptError, match=r"is being written by another run: let "
                                                  "that run end first"):
            TranscriptWriter.append(path, Session(), second)
    finally:
        writer.close()


def test_two_resumes_of_one_transcript_one_is_refused_and_nothing_mixes(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    save(path, SAID[:1], REPLIES[:1])
    stale = read_transcript(path)
    continue_saved(path, ["first run"], ["one"])
    with pytest.raises(TranscriptError, match=r"changed since it was read \(another run wrote "
                                              r"to it\): read it again"):
        TranscriptWriter.append(path, Session(), stale)
    assert [m.content for m in read_transcript(path).session.messages][-2:] == [
        "first run", "one"]


def test_the_command_refuses_a_transcript_another_run_is_writing(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    save(path, SAID[:1], REPLIES[:1])
    writer = TranscriptWriter.append(path, Session(), read_transcript(path))
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
    try:
        result = subprocess.run(
            [sys.executable, "-m", "convo", "run", str(FIXTURES / "chat.py"), "--resume",
             str(path), "--save", str(path)], env=env, input="more\n", capture_output=True,
            text=True, timeout=30, check=False)
    finally:
        writer.close()
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"convo: error: {path} is being written by another run: let that run end first, or "
        "save this one to another file")
    assert "Traceback" not in result.stderr


def test_lines_of_two_runs_mixed_in_one_file_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    save(path, SAID[:1], REPLIES[:1])
    lines = path.read_bytes().splitlines(keepends=True)
    message = next(line for line in lines if b'"index": 2' in line)
    path.write_bytes(b"".join(lines) + message)
    with pytest.raises(TranscriptError, match=r", line 6: message index 2, expected 3: the "
                                              r"file mixes the lines of two runs"):
        read_transcript(path)


# --- item 6: lone surrogates --------------------------------------------------------------------


def test_lone_surrogates_are_kept_and_the_run_survives(tmp_path: Path) -> None:
    name = os.fsdecode(b"r\xe9sum\xe9.txt")  # a Latin-1 file name, as os.listdir gives it

    @tool
    def listdir() -> str:
        """Lists the files."""
        return name

    template = LinearTemplate([UserTemplate(), ToolingTemplate([listdir])])
    model = MockModel([Message("assistant", "", tool_calls=(ToolCall("c1", "listdir", {}),)),
                       f"I see {name}."])
    path = tmp_path / "t.jsonl"
    session = Session()
    writer = TranscriptWriter.create(path, session)
    typed = "caf\udce9"  # a non-UTF-8 byte on piped stdin
    try:
        Runner(model, template, ScriptedInterface([typed]), on_event=writer).run(session)
    finally:
        writer.close()
    assert session.outcome is not None and session.outcome.status == RunStatus.COMPLETED
    saved = read_transcript(path).session
    assert saved == session
    assert [m.content for m in saved.messages][:1] == [typed]
    assert any(m.content == name for m in saved.messages)


# --- item 7: state that JSON would not return exactly ------------------------------------------


@pytest.mark.parametrize(("value", "said"), [
    (datetime.date(2025, 1, 2), "session.state['when'] is a datetime.date "
                                "(datetime.date(2025, 1, 2)), not a JSON value"),
    ({"a", "b"} and {"a"}, "session.state['when'] is a set ({'a'}), not a JSON value"),
    ({1: "one", "two": 2}, "session.state['when'] has the key 1 (int): JSON keys are strings"),
    ([(1, 2)], "session.state['when'][0] is a tuple ((1, 2)), not a JSON value"),
])
def test_state_that_json_would_change_is_refused_where_it_changes(tmp_path: Path, value: Any,
                                                                 said: str) -> None:
    @tool
    def remember() -> str:
        """Remembers a value."""
        session.state["when"] = value
        return "noted"

    template = LinearTemplate([UserTemplate("go"), ToolingTemplate([remember])])
    model = MockModel([Message("assistant", "", tool_calls=(ToolCall("c1", "remember", {}),)),
                       "Done."])
    path = tmp_path / "t.jsonl"
    session = Session(state={"ok": [1, {"x": None}]})
    writer = TranscriptWriter.create(path, session)
    try:
        Runner(model, template, on_event=writer, raise_errors=False).run(session)
    finally:
        writer.close()
    assert session.outcome is not None and session.outcome.status == RunStatus.ERROR
    assert (session.outcome.error or "").startswith(f"TypeError: {said}")
    saved = read_transcript(path).session
    assert saved.messages == session.messages  # the event's own line was still written
    assert saved.state == {"ok": [1, {"x": None}]}
    assert saved.outcome is not None and saved.outcome.status == RunStatus.ERROR


def test_json_state_round_trips_exactly(tmp_path: Path) -> None:
    state = {"n": 1, "f": 1.5, "s": "é", "l": [1, [2, {"k": None}]], "b": True}
    path = tmp_path / "t.jsonl"
    session = Session(state=state)
    writer = TranscriptWriter.create(path, session)
    writer.close()
    assert read_transcript(path).session.state == state


def test_a_new_transcript_refuses_state_that_is_not_json(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"session.state\['s'\] is a set"):
        TranscriptWriter.create(tmp_path / "t.jsonl", Session(state={"s": {1}}))
    assert not (tmp_path / "t.jsonl").exists()


def test_a_non_utf8_byte_on_piped_stdin_under_a_c_locale_is_saved(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG")}
    env.update(LC_ALL="C", NO_COLOR="1")
    result = subprocess.run(
        [sys.executable, "-m", "convo", "run", str(FIXTURES / "chat.py"), "--save", str(path)],
        env=env, input=b"caf\xe9\n", capture_output=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    saved = read_transcript(path).session
    assert [m.content for m in saved.messages][1:] == ["caf\udce9",
                                                      "You said 'caf\\udce9' (message 1)"]
    assert saved.outcome is not None and saved.outcome.status == RunStatus.STOPPED
