"""The notification channel of each store (``convo._temporal.deltas``): what a model activity
publishes in one process is heard, in order, by a listener of the conversation in another
(SQLite: a second connection to the file; Postgres: a second pool, LISTEN/NOTIFY; memory:
within one process); other conversations' notes are not heard, and a long text that does not
fit one NOTIFY comes whole."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from convo._temporal.deltas import Note, channel
from convo.serve._stores import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from serve_kit import postgres  # noqa: F401  (the throwaway Postgres fixture)

NOTES = [Note("text", "Hel", "msg_1"), Note("reasoning", "thinking", "msg_1"),
         Note("text", "lo " + "é" * 20_000, "msg_1")]


def _joined(notes: list[Note]) -> list[tuple[str, str, str | None]]:
    """Consecutive pieces of one kind of text joined (Postgres splits a long one)."""
    joined: list[tuple[str, str, str | None]] = []
    for note in notes:
        if joined and joined[-1][0] == note.kind and joined[-1][2] == note.message_id:
            joined[-1] = (note.kind, joined[-1][1] + note.text, note.message_id)
        else:
            joined.append((note.kind, note.text, note.message_id))
    return joined


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_notes_published_by_one_store_are_heard_through_another(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = {"memory": "memory", "sqlite": f"sqlite:///{tmp_path / 'convo.db'}"}.get(kind) \
        or request.getfixturevalue("postgres").fresh()

    async def go() -> list[Note]:
        listening = open_store(url)
        publishing = listening if kind == "memory" else open_store(url)
        await listening.open()
        if publishing is not listening:
            await publishing.open()
        heard_by, said_by = channel(listening), channel(publishing)
        try:
            async with heard_by.listen("c1") as heard:
                await said_by.publish("c2", [Note("text", "not for c1", "msg_9")])
                await said_by.publish("c1", NOTES[:2])
                await said_by.publish("c1", NOTES[2:])
                await heard.caught_up()
                return heard.ready()
        finally:
            await heard_by.close()
            await listening.close()
            if publishing is not listening:
                await publishing.close()

    assert _joined(asyncio.run(go())) == _joined(NOTES)
