"""The local chat history: every terminal conversation, kept in SQLite as it happens.

``convo chat`` and ``convo run`` keep each record of the conversation (``convo._record``: its
messages, state, approvals, subroutines, turns and outcome) the moment it is made, one
committed row each, so a crash or a killed process loses nothing; ``-c`` / ``--continue``
replays the last conversation exactly as ``--resume`` replays a transcript (nothing decided is
asked again, nothing done is done again). The database lives in the user's data directory
(``data_dir``); ``--no-log`` keeps a conversation out of it. Conversations kept by a convo
from before records (messages only) are still read, and so are those from before
``Session.internal`` (a header without ``"version": 2``), whose state held convo's own records:
they are moved out as they are read.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from .._internal import from_legacy_state
from .._messages import Message
from .._record.recorder import Record
from .._record.recorder import Recorder as RecordsRecorder
from .._record.transcript import records_session
from .._session import Outcome, Session
from .paths import data_dir

DB_NAME: Final = "history.db"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,          -- 'chat' or 'run'
    source TEXT,                 -- the bot file of a run
    model TEXT,
    started TEXT NOT NULL,
    updated TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT '{}',
    outcome TEXT
);
CREATE TABLE IF NOT EXISTS messages (  -- the conversations kept before records
    conversation INTEGER NOT NULL REFERENCES conversations(id),
    idx INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (conversation, idx)
);
CREATE TABLE IF NOT EXISTS records (
    conversation INTEGER NOT NULL REFERENCES conversations(id),
    seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation, seq)
);
"""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class History:
    """The history database. ``History.open()`` creates it (and its directory) when needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit: every write is on disk when the call returns.
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)

    @classmethod
    def open(cls) -> History:
        return cls(data_dir() / DB_NAME)

    def close(self) -> None:
        self.db.close()

    def start(self, kind: str, source: str | None, model: str | None) -> int:
        """A new conversation; returns its id."""
        now = _now()
        cursor = self.db.execute(
            "INSERT INTO conversations (kind, source, model, started, updated) "
            "VALUES (?, ?, ?, ?, ?)", (kind, source, model, now, now))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def last(self, kind: str, source: str | None = None) -> tuple[int, Session] | None:
        """The most recently updated conversation of this kind (and bot file), if any."""
        query = "SELECT id FROM conversations WHERE kind = ?"
        params: list[Any] = [kind]
        if source is not None:
            query += " AND source = ?"
            params.append(source)
        row = self.db.execute(query + " ORDER BY updated DESC, id DESC LIMIT 1",
                              params).fetchone()
        return None if row is None else (row[0], self.load(row[0]))

    def load(self, conversation: int) -> Session:
        """The conversation as kept: replayed from its records (or, kept before records, its
        messages, state and outcome)."""
        rows = self.db.execute("SELECT seq, record FROM records WHERE conversation = ? "
                               "ORDER BY seq", (conversation,)).fetchall()
        if rows:
            return records_session(((seq, json.loads(text)) for seq, text in rows),
                                   f"{self.path}, conversation {conversation}", "record")
        row = self.db.execute("SELECT state, outcome FROM conversations WHERE id = ?",
                              (conversation,)).fetchone()
        rows = self.db.execute("SELECT message FROM messages WHERE conversation = ? "
                               "ORDER BY idx", (conversation,)).fetchall()
        messages = [Message.from_dict(json.loads(r[0])) for r in rows]
        outcome = Outcome.from_dict(json.loads(row[1])) if row and row[1] else None
        state, internal = from_legacy_state(json.loads(row[0]) if row else {},
                                            f"{self.path}, conversation {conversation}")
        return Session(messages, state, outcome=outcome, internal=internal)

    def add(self, conversation: int, record: Record) -> None:
        """Keep one record of the conversation (committed when this returns)."""
        text = json.dumps(record, default=repr)
        self.db.execute("BEGIN")
        try:
            self.db.execute(
                "INSERT INTO records VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM records "
                "WHERE conversation = ?), ?)", (conversation, conversation, text))
            self.db.execute("UPDATE conversations SET updated = ? WHERE id = ?",
                            (_now(), conversation))
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def kept(self, conversation: int) -> bool:
        """Whether the conversation has records (else it is new, or kept before records)."""
        return self.db.execute("SELECT 1 FROM records WHERE conversation = ? LIMIT 1",
                               (conversation,)).fetchone() is not None


class Recorder(RecordsRecorder):
    """The recorder (``convo._record``) of a conversation of the history: an ``on_event``
    handler. A conversation new to the history starts with a ``header`` record of its state
    and the messages it already has (a system prompt); a continued one (``replaying``)
    records only what is new once the replay has caught up."""

    def __init__(self, history: History, conversation: int, session: Session, *,
                 replaying: bool = False, saved: Session | None = None) -> None:
        self.history = history
        self.conversation = conversation
        replayed = saved if replaying and saved is not None else None
        super().__init__(session, lambda record: history.add(conversation, record),
                         replaying=replaying, state=None if replayed is None else replayed.state,
                         internal=None if replayed is None else replayed.internal,
                         undo_on_state=True)
        if not replaying and not history.kept(conversation):
            # version 2: convo's own records are in session.internal, not in the state
            history.add(conversation, {"type": "header", "version": 2, "state": session.state,
                                       "internal": session.internal}
                        | ({"parent": session.parent} if session.parent is not None else {}))
            for index, message in enumerate(session.messages):
                history.add(conversation, {"type": "message", "index": index,
                                           "message": message.to_dict()})
            for call_id, approval in ({} if saved is None else saved.approvals).items():
                # a conversation resumed from a transcript: its replay decides nothing again
                history.add(conversation, {"type": "approval", "call_id": call_id,
                                           **approval.to_dict()})

    def sync(self) -> None:
        """The session lost messages (/undo, /clear): the history drops them too."""
        self.dropped(len(self.session.messages))
