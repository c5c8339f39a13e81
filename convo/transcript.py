"""Transcripts: a conversation written as JSON lines while it happens, and read back.

A transcript loses nothing: every line is written and flushed when its message arrives, so a
crash, Ctrl-C or a killed process leaves everything up to that moment. Lines::

    {"type": "header", "format": "convo.transcript", "version": 1, "convo": "0.1.0",
     "source": "examples/chat.py:template", "started": "2025-01-01T12:00:00+00:00", "state": {}}
    {"type": "message", "index": 0, "message": {"role": "system", "content": "..."}}
    {"type": "state", "state": {...}}          # session.state, whenever it changed
    {"type": "turn", "turn": {...}}            # a TurnResult, when an agent turn ends
    {"type": "approval", "call_id": "...", "approved": false, "reason": "..."}
    {"type": "resumed", "messages": 4, "turns": 0, ...}   # a later run continues from here
    {"type": "outcome", "outcome": {...}}      # the run's Outcome, when it ended

``load_transcript(path)`` gives the ``Session`` back. A last line cut off mid-write (a killed
process) is skipped; a bad line anywhere else is an error naming the line.

``convo.resume.resume(template, saved)`` continues a saved conversation.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import IO, Any, Final

import attrs

from .approval import Approval
from .errors import TranscriptError
from .events import ApprovalDecided, CaughtUp, Event, MessageAdded, RunEnded, TurnEnded
from .messages import Message
from .session import Outcome, Session, TurnResult

FORMAT: Final = "convo.transcript"
FORMAT_VERSION: Final = 1


# --- reading ---------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Transcript:
    """A transcript as read: its header, the session, and whether the last line was cut."""

    header: dict[str, Any]
    session: Session
    cut_off: bool = False


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {str(path)!r}: {exc.strerror}") from exc
    lines = text.split("\n")
    # A file written to the end finishes with "\n"; anything after the last one is a line the
    # writer was killed in the middle of.
    cut_off = lines[-1] != ""
    if not cut_off:
        lines.pop()
    records = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if number == len(lines) and cut_off and number > 1:
                break
            if number == 1:
                break  # said below: not a transcript
            raise TranscriptError(f"{path}, line {number}: not a transcript line ({exc})") from None
        else:
            if number == len(lines):
                cut_off = False  # complete JSON, only the newline is missing
        records.append(record)
    if not records or records[0].get("type") != "header" or records[0].get("format") != FORMAT:
        raise TranscriptError(f"{path} is not a convo transcript: its first line should be a "
                              f'header with "format": "{FORMAT}"')
    header = records[0]
    version = header.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise TranscriptError(f"{path}: transcript version {version!r} is newer than this convo "
                              f"reads (up to {FORMAT_VERSION}); upgrade convo")
    try:
        session = _replay_records(records)
    except (KeyError, TypeError, ValueError) as exc:
        raise TranscriptError(f"{path}: a line is malformed: {exc!r}") from None
    return Transcript(header, session, cut_off)


def load_transcript(path: str | os.PathLike[str]) -> Session:
    """The ``Session`` a transcript file records: messages, state, turns and outcome."""
    return read_transcript(path).session


def _replay_records(records: list[dict[str, Any]]) -> Session:
    session = Session(state=dict(records[0].get("state") or {}))
    for record in records[1:]:
        kind = record.get("type")
        if kind == "message":
            index = record.get("index")
            if isinstance(index, int) and index < len(session.messages):
                del session.messages[index:]  # they were dropped (/undo, /retry, /clear)
            session.messages.append(Message.from_dict(record["message"]))
        elif kind == "state":
            session.state = dict(record["state"])
        elif kind == "turn":
            session.turns.append(TurnResult.from_dict(record["turn"]))
        elif kind == "approval":
            session.approvals[record["call_id"]] = Approval.from_dict(record)
        elif kind == "outcome":
            session.outcome = Outcome.from_dict(record["outcome"])
        elif kind == "resumed":
            del session.messages[record["messages"]:]
            del session.turns[record["turns"]:]
            session.outcome = None
        # Unknown kinds are skipped: a later minor version may add informative lines.
    return session


# --- writing ---------------------------------------------------------------------------------


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class TranscriptWriter:
    """An ``on_event`` handler that appends the conversation to a JSON-lines file.

    ``TranscriptWriter.create(path, session)`` starts a new file (it refuses to overwrite one);
    ``TranscriptWriter.append(path, session, saved)`` continues the file ``saved`` was loaded
    from, in a resumed run: the replayed part is not written again.
    """

    def __init__(self, file: IO[str], session: Session, *, replaying: bool = False) -> None:
        self.file = file
        self.session = session
        self._replaying = replaying
        self._state = json.dumps(session.state, sort_keys=True, default=repr)

    @classmethod
    def create(cls, path: str | os.PathLike[str], session: Session, *,
               source: str | None = None) -> TranscriptWriter:
        from . import __version__

        file = open(path, "x", encoding="utf-8")
        writer = cls(file, session)
        writer._write({"type": "header", "format": FORMAT, "version": FORMAT_VERSION,
                       "convo": __version__, "source": source, "started": _now(),
                       "state": session.state})
        return writer

    @classmethod
    def append(cls, path: str | os.PathLike[str], session: Session, saved: Session
               ) -> TranscriptWriter:
        path = Path(path)
        _drop_cut_off_line(path)
        file = open(path, "a", encoding="utf-8")
        writer = cls(file, session, replaying=True)
        writer._state = json.dumps(saved.state, sort_keys=True, default=repr)
        return writer

    def _write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
        self.file.flush()

    def _write_state(self) -> None:
        state = json.dumps(self.session.state, sort_keys=True, default=repr)
        if state != self._state:
            self._state = state
            self._write({"type": "state", "state": self.session.state})

    def _go_live(self, event: CaughtUp | None) -> None:
        self._replaying = False
        record: dict[str, Any] = {"type": "resumed", "messages": len(self.session.messages),
                                  "turns": len(self.session.turns), "at": _now()}
        if event is not None:
            record["saved"] = event.saved
        self._write(record)

    def __call__(self, event: Event) -> None:
        if isinstance(event, CaughtUp):
            if self._replaying:
                self._go_live(event)
            return
        if self._replaying and not isinstance(event, RunEnded):
            return
        if isinstance(event, RunEnded) and self._replaying:
            self._go_live(None)
        # Any event is a moment to notice that a tool or a condition changed the state.
        self._write_state()
        if isinstance(event, MessageAdded):
            self._write({"type": "message", "index": event.index,
                         "message": event.message.to_dict()})
        elif isinstance(event, TurnEnded):
            self._write({"type": "turn", "turn": event.result.to_dict()})
        elif isinstance(event, ApprovalDecided):
            self._write({"type": "approval", "call_id": event.call.id,
                         **event.approval.to_dict()})
        elif isinstance(event, RunEnded):
            self._write({"type": "outcome", "outcome": event.outcome.to_dict()})

    def close(self) -> None:
        self.file.close()


def _drop_cut_off_line(path: Path) -> None:
    """Remove a last line that a killed writer left unfinished, so that appending is safe."""
    with open(path, "rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)
