"""Transcripts: written as the conversation goes, read back exactly, resumed faithfully."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from weather_tools import chat, chat_loop

from convo import Message, Runner, RunStatus, ScriptedInterface, Session
from convo._errors import TranscriptError
from convo._resume import resume
from convo._transcript import TranscriptWriter, load_transcript, read_transcript
from convo.events import CaughtUp, Event
from convo.models import MockModel
from convo.templates import LinearTemplate, ToolingTemplate, UserTemplate
from convo.tools import EndConversationTool, FinishResponseTool, tool

CHAT = chat("You teach {{ subject }}.")


def run_saved(path: Path, template: object, model: MockModel, replies: list[str],
              session: Session | None = None) -> Session:
    session = Session(state={"subject": "math"}) if session is None else session
    writer = TranscriptWriter.create(path, session, source="test")
    try:
        return Runner(model, template, ScriptedInterface(replies),  # type: ignore[arg-type]
                      on_event=writer).run(session)
    finally:
        writer.close()


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_transcript_loads_back_as_the_same_session(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    session = run_saved(path, CHAT, MockModel(["Hello!", "4."]), ["hi", "2+2?"])
    assert load_transcript(path) == session
    records = lines(path)
    assert records[0]["type"] == "header"
    assert records[0]["format"] == "convo.transcript" and records[0]["version"] == 2
    assert records[0]["state"] == {"subject": "math"}
    assert [r["type"] for r in records[1:]] == ["message"] * 5 + ["outcome"]
    assert records[2] == {"type": "message", "index": 1,
                          "message": {"role": "user", "content": "hi"}}
    assert records[-1]["outcome"]["status"] == "stopped"  # type: ignore[index]


def test_each_line_is_on_disk_as_soon_as_its_message_is_added(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    seen: list[int] = []

    def reply(messages: list[Message]) -> str:
        seen.append(len(lines(path)))  # what a crash at this moment would leave
        return "ok"

    run_saved(path, CHAT, MockModel([reply, reply]), ["a", "b"])
    assert seen == [3, 5]  # header + system + user; then + assistant + user


def test_state_changes_and_turns_are_recorded(tmp_path: Path) -> None:
    @tool
    def remember(fact: str) -> str:
        """Remember a fact.

        Args:
            fact: what to remember.
        """
        return "remembered"

    def note(session: Session) -> bool:
        session.state["seen"] = len(session.messages)
        return False

    from convo import IfTemplate

    template = LinearTemplate([
        UserTemplate(),
        IfTemplate(note, UserTemplate("never")),
        ToolingTemplate([remember, FinishResponseTool()]),
    ])
    path = tmp_path / "t.jsonl"
    model = MockModel(["{remember(fact='x')}", "Done. {finish_response(summary='s')}"])
    session = run_saved(path, template, model, ["hello"])
    assert session.outcome is not None and session.outcome.status is RunStatus.COMPLETED
    loaded = load_transcript(path)
    assert loaded == session
    assert loaded.state == {"subject": "math", "seen": 1}
    assert [r["type"] for r in lines(path)[1:]] == [
        "message", "state", "message", "message", "message", "message", "turn", "outcome"]


def test_a_line_cut_off_by_a_killed_process_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    session = run_saved(path, CHAT, MockModel(["Hello!"]), ["hi"])
    text = path.read_text()
    path.write_text(text[: text.rindex('{"type": "outcome"') + 25])
    transcript = read_transcript(path)
    assert transcript.cut_off
    assert transcript.session.messages == session.messages
    assert transcript.session.outcome is None


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    session = run_saved(path, CHAT, MockModel(["Hello!"]), ["hi"])
    path.write_text(path.read_text().rstrip("\n"))
    transcript = read_transcript(path)
    assert not transcript.cut_off
    assert transcript.session == session


@pytest.mark.parametrize(("text", "error"), [
    ("", "is not a convo transcript"),
    ('{"type": "message"}\n', "is not a convo transcript"),
    ('{"type": "header", "format": "convo.transcript", "version": 99}\n',
     "transcript version 99 is newer than this convo reads (up to 2); upgrade convo"),
    ('{"type": "header", "format": "convo.transcript", "version": 1}\nnot json\n{}\n',
     "line 2: not a transcript line"),
    ('{"type": "header", "format": "convo.transcript", "version": 1}\n'
     '{"type": "message", "message": {"role": "robot"}}\n',
     "line 2: a malformed 'message' line (ValueError: Message role must be one of"),
])
def test_unreadable_transcripts_say_why(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(TranscriptError, match=re.escape(error)):
        load_transcript(path)


def test_a_missing_transcript_is_a_transcript_error(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read transcript"):
        load_transcript(tmp_path / "nope.jsonl")


def test_the_writer_never_overwrites_a_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("precious\n")
    with pytest.raises(FileExistsError):
        TranscriptWriter.create(path, Session())
    assert path.read_text() == "precious\n"


def resume_saved(path: Path, template: object, model: MockModel, replies: list[str],
                 events: list[Event]) -> Session:
    saved = load_transcript(path)
    resumed, session = resume(template, saved)  # type: ignore[arg-type]
    writer = TranscriptWriter.append(path, session, saved)

    def on_event(event: Event) -> None:
        events.append(event)
        writer(event)

    try:
        return Runner(model, resumed, ScriptedInterface(replies), on_event=on_event).run(session)
    finally:
        writer.close()


def test_resume_replays_the_saved_messages_then_goes_live(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    run_saved(path, CHAT, MockModel(["Hello!"]), ["hi"])
    model = MockModel(["Four."])
    events: list[Event] = []
    session = resume_saved(path, CHAT, model, ["2+2?"], events)
    assert session.messages == [
        Message("system", "You teach math."), Message("user", "hi"),
        Message("assistant", "Hello!"), Message("user", "2+2?"), Message("assistant", "Four."),
    ]
    assert len(model.calls) == 1  # the saved reply was not asked for again
    assert model.calls[0].messages == tuple(session.messages[:4])
    assert [e for e in events if isinstance(e, CaughtUp)] == [CaughtUp(3, 3)]
    assert load_transcript(path) == session
    types = [r["type"] for r in lines(path)]
    assert types == ["header"] + ["message"] * 3 + ["outcome", "resumed"] + ["message"] * 2 + [
        "outcome"]


def test_resume_does_not_run_tools_again_but_rebuilds_the_turns(tmp_path: Path) -> None:
    runs: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: the first.
            b: the second.
        """
        runs.append(a + b)
        return a + b

    template = chat_loop(add, FinishResponseTool(), system="Use tools.")
    path = tmp_path / "tools.jsonl"
    first = run_saved(path, template, MockModel([
        "{add(a=2, b=2)}", "It is 4. {finish_response()}"]), ["2+2?"])
    assert runs == [4]
    model = MockModel(["Hi again. {finish_response()}"])
    session = resume_saved(path, template, model, ["hello"], [])
    assert runs == [4]
    assert len(model.calls) == 1
    assert session.messages[:len(first.messages)] == first.messages
    assert session.turns[0] == first.turns[0]
    assert len(session.turns) == 2
    assert load_transcript(path) == session


def test_resuming_an_ended_conversation_ends_it_again_without_a_model(tmp_path: Path) -> None:
    template = LinearTemplate([UserTemplate(), ToolingTemplate([EndConversationTool()])])
    path = tmp_path / "ended.jsonl"
    first = run_saved(path, template, MockModel(["{end_conversation(message='Bye')}"]), ["bye"])
    assert first.outcome is not None and first.outcome.status is RunStatus.ENDED
    session = resume_saved(path, template, MockModel([]), [], [])
    assert session.outcome is not None and session.outcome.status is RunStatus.ENDED
    assert session.messages == first.messages


def test_a_template_that_takes_another_path_drops_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    run_saved(path, CHAT, MockModel(["Hello!"]), ["hi"])
    changed = chat("You teach {{ subject }}.", greeting="Welcome!")
    events: list[Event] = []
    session = resume_saved(path, changed, MockModel(["Sure."]), ["go"], events)
    assert [e for e in events if isinstance(e, CaughtUp)] == [CaughtUp(1, 3)]
    assert session.messages == [
        Message("system", "You teach math."), Message("assistant", "Welcome!"),
        Message("user", "go"), Message("assistant", "Sure."),
    ]
    assert load_transcript(path) == session


def test_appending_after_a_cut_off_line_keeps_the_file_readable(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    run_saved(path, CHAT, MockModel(["Hello!"]), ["hi"])
    with path.open("a") as file:
        file.write('{"type": "message", "index": 3, "mess')
    session = resume_saved(path, CHAT, MockModel(["Bye."]), ["bye"], [])
    transcript = read_transcript(path)
    assert not transcript.cut_off
    assert transcript.session == session
