"""Transcripts: a conversation written as JSON lines while it happens, and read back.

A transcript loses nothing: every line is written and flushed when its message arrives, so a
crash, Ctrl-C or a killed process leaves everything up to that moment. Lines::

    {"type": "header", "format": "convo.transcript", "version": 2, "convo": "0.1.0",
     "source": "examples/chat.py:template", "started": "2025-01-01T12:00:00+00:00", "state": {},
     "internal": {}}                            # (+ "parent": {"id", "before"} for a branch)
    {"type": "message", "index": 0, "message": {"role": "system", "content": "..."}}
    {"type": "state", "state": {...}}          # session.state, whenever it changed
    {"type": "internal", "internal": {...}}    # session.internal (convo's own), when it changed
    {"type": "turn", "turn": {...}}            # a TurnResult, when an agent turn ends
    {"type": "subroutine", "subroutine": {...}}  # a SubroutineTemplate's child session
    {"type": "approval", "call_id": "...", "approved": false, "reason": "..."}
    {"type": "dropped", "messages": 6}         # messages from index 6 on were removed (/undo)
    {"type": "resumed", "messages": 4, "turns": 0, ...}   # a later run continues from here
                                               # (with "internal": convo's records then)
    {"type": "outcome", "outcome": {...}}      # the run's Outcome, when it ended
    {"type": "saved", "at": "...", "messages": 5}  # a copy made while the run went on (/save)

``load_transcript(path)`` gives the ``Session`` back. A last line cut off mid-write (a killed
process, maybe inside a character) is skipped; a bad line anywhere else, or message lines
whose ``index`` does not follow on (two runs writing at once), is a ``TranscriptError`` naming
the line. Writers lock the file, so two runs never write one file at once.

Version 2 keeps convo's own records (``convo.internal``) in ``internal`` lines; a version-1
file (and a chat history from before) kept them in the state, and they are moved out as it is
read. A malformed one is dropped with a warning naming the line (a summary is made again).

A ``TranscriptWriter`` is the ``Recorder`` (``convo._record.recorder``) with a file for its
sink: the records are the lines. ``Runner.resume(path)`` continues a saved conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Final

import attrs

from .._appending import drop_cut_off_line, locked
from .._approval import Approval
from .._errors import TranscriptError
from .._internal import STATE_UNDO, checked, from_legacy_state
from .._jsonvalues import state_problem
from .._messages import Message
from .._session import Outcome, Session, SubroutineRun, TurnResult, read_parent
from .recorder import Record, Recorder, now

FORMAT: Final = "convo.transcript"
FORMAT_VERSION: Final = 2


# --- reading ---------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Transcript:
    """A transcript as read: its header, the session, whether the last line was cut, the
    file's size when read (a writer continuing it refuses a file that changed since), and,
    for a copy made while the conversation went on (the chat's ``/save``) that nothing was
    added to since, when it was made."""

    header: dict[str, Any]
    session: Session
    cut_off: bool = False
    size: int | None = None
    saved_at: str | None = None


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file (see the module docstring); any unreadable file or line is a
    ``TranscriptError`` of one line naming the file (and the line)."""
    # Why longer than 40 lines: reading, the cut-off last line and the header checks are one pass.
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {str(path)!r}: {exc.strerror}") from exc
    lines = data.split(b"\n")
    # A file written to the end finishes with "\n"; anything after the last one is a line the
    # writer was killed in the middle of (maybe inside a character).
    cut_off = lines[-1] != b""
    if not cut_off:
        lines.pop()
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line.decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as exc:
            if number == len(lines) and cut_off and number > 1:
                break
            if number == 1:
                break  # said below: not a transcript
            raise TranscriptError(f"{path}, line {number}: not a transcript line "
                                  f"({_shorter(exc)})") from None
        else:
            if number == len(lines):
                cut_off = False  # complete JSON, only the newline is missing
        records.append((number, record))
    header = records[0][1] if records else {}
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise TranscriptError(f"{path} is not a convo transcript: its first line should be a "
                              f'header with "format": "{FORMAT}"')
    version = header.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise TranscriptError(f"{path}: transcript version {version!r} is newer than this convo "
                              f"reads (up to {FORMAT_VERSION}); upgrade convo")
    last = records[-1][1]
    saved_at = str(last.get("at")) if last.get("type") == "saved" else None
    return Transcript(header, records_session(records, str(path)), cut_off, len(data),
                      saved_at=saved_at)


def load_transcript(path: str | os.PathLike[str]) -> Session:
    """The ``Session`` a transcript file records: messages, state, turns and outcome."""
    return read_transcript(path).session


def _shorter(exc: BaseException, limit: int = 120) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def records_session(records: Iterable[tuple[int, Record]], where: str = "records",
                    what: str = "line") -> Session:
    """The ``Session`` that records (numbered) make, whatever kept them: a transcript file,
    the chat history. A bad one is a ``TranscriptError`` naming ``where`` and its number."""
    session = Session()
    legacy = [True]  # convo's own records are in the state (until a header or line says not)
    for number, record in records:
        try:
            _replay(session, record, legacy, f"{where}, {what} {number}")
        except TranscriptError as exc:
            raise TranscriptError(f"{where}, {what} {number}: {exc}") from None
        except Exception as exc:  # a record of the wrong shape, whatever it holds
            raise TranscriptError(f"{where}, {what} {number}: a malformed "
                                  f"{str(record.get('type'))[:20]!r} {what} ({_shorter(exc)})"
                                  ) from None
    return session


def _replay(session: Session, record: dict[str, Any], legacy: list[bool], where: str) -> None:
    kind = record.get("type")
    if kind == "header":
        version = record.get("version", 1)
        legacy[0] = not isinstance(version, int) or version < 2
        _read_state(session, record.get("state") or {}, legacy[0], where)
        if not legacy[0]:
            session.internal = checked(record.get("internal") or {}, where)
        session.parent = read_parent(record.get("parent"), where)
    elif kind == "message":
        index = record.get("index", len(session.messages))
        if index != len(session.messages):
            raise TranscriptError(
                f"message index {index!r}, expected {len(session.messages)}: the file mixes "
                "the lines of two runs (two runs wrote it at once)")
        session.messages.append(Message.from_dict(record["message"]))
        session.internal.pop(STATE_UNDO, None)  # the message carries the changes before it
    elif kind == "state":
        _read_state(session, record["state"], legacy[0], where)
        undo = record.get(STATE_UNDO)  # the changes since the last message (``Recorder``)
        if undo is not None:
            session.internal[STATE_UNDO] = undo
        else:
            session.internal.pop(STATE_UNDO, None)
    elif kind == "internal":
        legacy[0] = False  # a version-1 file continued by a later convo
        _read_internal(session, record["internal"], where)
    elif kind == "turn":
        session.turns.append(TurnResult.from_dict(record["turn"]))
    elif kind == "subroutine":
        session.subroutines.append(SubroutineRun.from_dict(record["subroutine"]))
    elif kind == "approval":
        session.approvals[record["call_id"]] = Approval.from_dict(record)
    elif kind == "outcome":
        session.outcome = Outcome.from_dict(record["outcome"])
    elif kind == "dropped":  # the chat's /undo, /retry, /clear
        del session.messages[record["messages"]:]
    elif kind == "resumed":
        del session.messages[record["messages"]:]
        del session.turns[record["turns"]:]
        del session.subroutines[record.get("subroutines", len(session.subroutines)):]
        session.outcome = None
        if "internal" in record:  # written by a convo that keeps them apart: read as such
            legacy[0] = False
            _read_internal(session, record["internal"], where)
    # Unknown kinds are skipped: a later minor version may add informative lines.


def _read_internal(session: Session, internal: Any, where: str) -> None:
    # The changes since the last message are on the state records, not in these.
    undo = session.internal.get(STATE_UNDO)
    session.internal = checked(internal, where)
    if undo is not None:
        session.internal.setdefault(STATE_UNDO, undo)


def _read_state(session: Session, state: dict[str, Any], legacy: bool, where: str) -> None:
    if legacy:  # an earlier convo's state: its own records move to session.internal
        session.state, session.internal = from_legacy_state(state, where)
    else:
        session.state = dict(state)


# --- writing ---------------------------------------------------------------------------------


class TranscriptWriter(Recorder):
    """An ``on_event`` handler that appends the conversation to a JSON-lines file.

    ``TranscriptWriter.create(path, session)`` starts a new file (it refuses to overwrite one);
    ``TranscriptWriter.append(path, session, saved)`` continues the file ``saved`` was read
    from (a ``Transcript``, or its ``Session``), in a resumed run: the replayed part is not
    written again. A writer holds an exclusive lock on its file (``flock``) until ``close()``:
    a second writer is refused, and so is continuing a ``Transcript`` whose file changed since
    it was read. ``session.state`` must hold values JSON returns exactly; a change to one that
    does not is refused (a ``TypeError`` naming the value), the lines of the event still
    written.
    """

    def __init__(self, file: IO[str], session: Session, *, replaying: bool = False,
                 state: dict[str, Any] | None = None,
                 internal: dict[str, Any] | None = None) -> None:
        super().__init__(session, self._write, replaying=replaying, state=state,
                         internal=internal, undo_on_state=True)
        self.file = file

    @classmethod
    def create(cls, path: str | os.PathLike[str], session: Session, *,
               source: str | None = None) -> TranscriptWriter:
        from .._version import __version__

        problem = state_problem(session.state)
        if problem is not None:
            raise TypeError(problem)
        file = locked(open(path, "x", encoding="utf-8"), path)
        writer = cls(file, session)
        writer._write({"type": "header", "format": FORMAT, "version": FORMAT_VERSION,
                       "convo": __version__, "source": source, "started": now(),
                       "state": session.state, "internal": session.internal}
                      | ({"parent": session.parent} if session.parent is not None else {}))
        return writer

    @classmethod
    def append(cls, path: str | os.PathLike[str], session: Session,
               saved: Session | Transcript) -> TranscriptWriter:
        path = Path(path)
        file = locked(open(path, "a", encoding="utf-8"), path)
        try:
            if isinstance(saved, Transcript):
                if saved.size is not None and os.fstat(file.fileno()).st_size != saved.size:
                    raise TranscriptError(
                        f"{path} changed since it was read (another run wrote to it): read it "
                        "again to continue it, or save this run to another file")
                saved = saved.session
            drop_cut_off_line(path)
        except BaseException:
            file.close()
            raise
        return cls(file, session, replaying=True, state=saved.state, internal=saved.internal)

    def _write(self, record: Record) -> None:
        try:
            self.file.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
        except UnicodeEncodeError:  # a lone surrogate (odd bytes on stdin, a file name):
            self.file.write(json.dumps(record, default=repr) + "\n")  # escaped, kept exactly
        self.file.flush()

    def saved(self) -> None:
        """Mark the file a copy of a conversation that goes on (the chat's ``/save``): a
        reader tells it from a run that was killed (``Transcript.saved_at``)."""
        self._write({"type": "saved", "at": now(), "messages": self._next or 0})

    def close(self) -> None:
        self.file.close()
