"""The local chat history: every terminal conversation, kept in SQLite as it happens.

``convo chat`` and ``convo run`` write each message the moment it is added (one committed row
per message, so a crash or a killed process loses nothing), and ``-c`` / ``--continue`` picks
up the last conversation. The database lives in the user's data directory (``data_dir``);
``--no-log`` keeps a conversation out of it.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from ..events import Event, MessageAdded, RunEnded
from ..messages import Message
from ..session import Outcome, Session
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
CREATE TABLE IF NOT EXISTS messages (
    conversation INTEGER NOT NULL REFERENCES conversations(id),
    idx INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (conversation, idx)
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
        row = self.db.execute("SELECT state, outcome FROM conversations WHERE id = ?",
                              (conversation,)).fetchone()
        rows = self.db.execute("SELECT message FROM messages WHERE conversation = ? "
                               "ORDER BY idx", (conversation,)).fetchall()
        messages = [Message.from_dict(json.loads(r[0])) for r in rows]
        outcome = Outcome.from_dict(json.loads(row[1])) if row and row[1] else None
        return Session(messages, json.loads(row[0]) if row else {}, outcome=outcome)

    def put(self, conversation: int, index: int, message: Message, state: Any) -> None:
        """Message ``index`` is ``message``; any after it are gone (an undo, a retry)."""
        self.db.execute("BEGIN")
        try:
            self.db.execute("DELETE FROM messages WHERE conversation = ? AND idx >= ?",
                            (conversation, index))
            self.db.execute("INSERT INTO messages VALUES (?, ?, ?)",
                            (conversation, index, json.dumps(message.to_dict())))
            self.db.execute("UPDATE conversations SET updated = ?, state = ?, outcome = NULL "
                            "WHERE id = ?",
                            (_now(), json.dumps(state, default=repr), conversation))
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def truncate(self, conversation: int, length: int) -> None:
        """Keep the first ``length`` messages."""
        self.db.execute("DELETE FROM messages WHERE conversation = ? AND idx >= ?",
                        (conversation, length))

    def ended(self, conversation: int, outcome: Outcome) -> None:
        self.db.execute("UPDATE conversations SET updated = ?, outcome = ? WHERE id = ?",
                        (_now(), json.dumps(outcome.to_dict()), conversation))


class Recorder:
    """An ``on_event`` handler that writes a conversation to the history as it happens."""

    def __init__(self, history: History, conversation: int, session: Session) -> None:
        self.history = history
        self.conversation = conversation
        self.session = session

    def __call__(self, event: Event) -> None:
        if isinstance(event, MessageAdded) and not event.scope:  # a subroutine's: its record
            self.history.put(self.conversation, event.index, event.message, self.session.state)
        elif isinstance(event, RunEnded):
            self.sync()
            self.history.ended(self.conversation, event.outcome)

    def sync(self) -> None:
        """The session lost messages (/undo, /clear): drop them from the history too."""
        self.history.truncate(self.conversation, len(self.session.messages))
