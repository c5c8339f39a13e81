"""convo's own records in ``Session.internal`` (convo/_internal.py): apart from ``state``, carried
by sessions, transcripts and the chat history, and moved out of the state of what an earlier
convo wrote. The files in tests/data/legacy/ were made by convo before the move (schema 3,
transcript and session format 1): a long chat with a context summary, the support bot stopped
in its billing state, the same in a chat history, and a served conversation's SQLite store.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from example_kit import load_example, resume_saved

from convo import Message, MockModel, Runner, ScriptedInterface, Session
from convo._internal import CONTEXT, MACHINE, checked, reserved_keys
from convo._record.transcript import records_session
from convo._terminal.history import History
from convo._transcript import load_transcript
from convo.events import StateEntered

ROOT = Path(__file__).resolve().parents[2]
LEGACY = ROOT / "tests" / "data" / "legacy"
SUMMARY = {"summary": "The customer asked about prices, 6 more questions; all were answered.",
           "upto": 24, "check": "tool:20:2077670482", "calls": 1,
           "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                     "unreported": 0}}


def copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copyfile(LEGACY / name, target)
    return target


# --- sessions --------------------------------------------------------------------------------


def test_a_version_1_session_has_its_records_moved_out_of_its_state() -> None:
    old = {"format": "convo.session", "version": 1, "messages": [], "turns": [],
           "state": {"name": "Ann", "convo.context": SUMMARY, "_convo_state": "billing"}}
    session = Session.from_dict(old)
    assert session.state == {"name": "Ann"}
    assert session.internal == {CONTEXT: SUMMARY, MACHINE: "billing"}
    again = Session.from_dict(session.to_dict())
    assert again == session and session.to_dict()["internal"] == session.internal


def test_in_a_version_2_session_such_keys_are_plain_data() -> None:
    d = Session(state={"convo.context": {"calls": -5}, "_convo_state": "x"}).to_dict()
    session = Session.from_dict(d)
    assert session.state == {"convo.context": {"calls": -5}, "_convo_state": "x"}
    assert session.internal == {}


@pytest.mark.parametrize(("record", "problem"), [
    ({**SUMMARY, "calls": -5}, "'calls' is -5, expected a count of calls (0 or more)"),
    ({**SUMMARY, "usage": {"total_tokens": -10**6}},
     "'usage.total_tokens' is -1000000, expected a count (0 or more)"),
    ({**SUMMARY, "usage": "lots"}, "'usage' is 'lots', expected an object of token counts"),
    ({**SUMMARY, "upto": 0}, "'upto' is 0, expected a count of messages above 0"),
    ({**SUMMARY, "summary": None}, "'summary' is None, expected text"),
    ("text", "expected an object, got str"),
])
def test_a_malformed_summary_record_is_dropped_with_a_warning(record: Any, problem: str
                                                              ) -> None:
    d = Session().to_dict() | {"internal": {CONTEXT: record, MACHINE: "billing", "later": 1}}
    with pytest.warns(UserWarning) as caught:
        session = Session.from_dict(d)
    assert [str(w.message) for w in caught] == [
        f"a session: convo ignored the 'context' record it keeps for itself ({problem}); a "
        "summary is made again when one is needed"]
    assert session.internal == {MACHINE: "billing", "later": 1}  # the rest is kept


def test_a_machine_state_that_is_not_a_name_is_dropped() -> None:
    with pytest.warns(UserWarning, match=re.escape(
            "here: convo ignored the 'machine' record it keeps for itself (expected a state's "
            "name (a non-empty string), got 7)")):
        assert checked({MACHINE: 7}, "here") == {}
    with pytest.warns(UserWarning, match="expected an object, got list"):
        assert checked([], "there") == {}


def test_the_keys_a_served_client_may_not_send() -> None:
    assert reserved_keys({"name": 1, "convo.context": 2, "convo.x": 3, "_convo_state": 4,
                          "_convo": 5, "convo": 6}) == ["convo.context", "convo.x",
                                                        "_convo_state"]


# --- transcripts -----------------------------------------------------------------------------


def test_an_old_transcript_of_a_long_chat_keeps_its_summary_and_counts(tmp_path: Path) -> None:
    saved = load_transcript(LEGACY / "long_chat.jsonl")
    assert saved.state == {}
    assert saved.internal == {CONTEXT: SUMMARY}
    chat = load_example("long_chat")
    # Resumed with nothing more to say: the replay catches up and stops at the next question;
    # the saved summary call is counted with the 22 replies, and no summary is made again.
    session = Runner(chat.mock_model, chat.template, ScriptedInterface([]),
                     context=chat.context).resume(copy("long_chat.jsonl", tmp_path))
    assert session.outcome is not None and session.outcome.model_calls == 23
    assert session.internal == {CONTEXT: SUMMARY} and session.state == {}
    assert chat.mock_model.calls == 0


def test_an_old_transcript_goes_on_in_its_state_and_is_continued(tmp_path: Path) -> None:
    path = copy("support_bot.jsonl", tmp_path)
    saved = load_transcript(path)
    assert (saved.state, saved.internal) == ({}, {MACHINE: "billing"})
    bot = load_example("support_bot")
    model = MockModel(list(bot.mock_model.replies)[4:])
    session, events = resume_saved(bot, saved, path, model)
    model.assert_complete()  # no saved call made again; the live ones in billing, then returns
    assert [e.name for e in events if isinstance(e, StateEntered)] == [
        "triage", "billing", "returns"]
    assert (session.state, session.internal) == ({}, {MACHINE: "returns"})
    # The old file, continued with "internal" lines, reads back as the session that ran.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["version"] == 1 and {"type": "internal", "internal": {
        MACHINE: "returns"}} in lines
    assert load_transcript(path) == session


def test_a_malformed_record_in_an_old_transcript_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"type": "header", "format": "convo.transcript", "version": 1, "state": {}}\n'
        '{"type": "message", "index": 0, "message": {"role": "user", "content": "hi"}}\n'
        '{"type": "state", "state": {"a": 1, "convo.context": {"summary": "s", "upto": 1, '
        '"check": "c", "calls": 2, "usage": {"total_tokens": -9}}}}\n')
    with pytest.warns(UserWarning, match=re.escape(
            f"{path}, line 3: convo ignored the 'context' record it keeps for itself "
            "('usage.total_tokens' is -9, expected a count (0 or more))")):
        session = load_transcript(path)
    assert (session.state, session.internal) == ({"a": 1}, {})
    assert session.messages == [Message("user", "hi")]


# --- the chat history ------------------------------------------------------------------------


def test_an_old_chat_history_has_its_records_moved(tmp_path: Path) -> None:
    history = History(copy("history.db", tmp_path))
    try:
        session = history.load(1)
    finally:
        history.close()
    assert (session.state, session.internal) == ({}, {MACHINE: "billing"})
    assert len(session.messages) == 12


def test_an_old_file_continued_by_this_version_is_read_as_it_was_written() -> None:
    """After the ``resumed`` line of a run of this version, a ``state`` line is the state
    alone: it does not take away the records the old lines had in their state."""
    records = [
        {"type": "header", "format": "convo.transcript", "version": 1, "state": {}},
        {"type": "message", "index": 0, "message": {"role": "user", "content": "hi"}},
        {"type": "state", "state": {"convo.context": SUMMARY, "_convo_state": "billing"}},
        {"type": "resumed", "messages": 1, "turns": 0, "subroutines": 0,
         "internal": {CONTEXT: SUMMARY, MACHINE: "billing"}},
        {"type": "state", "state": {"x": 1}},
    ]
    session = records_session(enumerate(records, 1))
    assert (session.state, session.internal) == ({"x": 1}, {CONTEXT: SUMMARY,
                                                            MACHINE: "billing"})
    # without the new resumed line, the last state line is an old one: the machine had ended
    old = records_session(enumerate([*records[:3], records[4]], 1))
    assert (old.state, old.internal) == ({"x": 1}, {})
