"""Transcript snapshots: readable files, normalisers, the update mode and the diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from testing_kit import fails_saying

from convo import Message, Runner, Session
from convo.models import MockModel
from convo.templates import EndTemplate, LinearTemplate, ToolingTemplate, UserTemplate
from convo.testing import assert_matches_snapshot
from convo.testing._snapshots import render, snapshot_path, snapshot_text
from convo.tools import tool


@tool
def order(drink: str) -> str:
    """Place an order.

    Args:
        drink: what to make.
    """
    return f"Order ORD-{len(drink) * 111} placed at 2026-11-23T12:00:05Z"


def _ordered() -> Session:
    model = MockModel([Message("assistant", "Sure.\nOne moment.", tool_calls=[
        # provider-style ids: they never reach the snapshot
        __import__("convo").ToolCall("call_Xy12", "order", {"drink": "latte"})]),
        "Done: ORD-555."])
    tree = LinearTemplate([UserTemplate("A latte"), ToolingTemplate([order]),
                           EndTemplate("Bye!")])
    return Runner(model, tree).run()


EXPECTED = """\
# convo conversation snapshot: barista/latte
# pytest --convo-update-snapshots rewrites this file

user: A latte
assistant: Sure.
  | One moment.
  -> call 1: order({"drink": "latte"})
tool (call 1, order): Order <order> placed at <timestamp>
assistant: Done: <order>.
assistant: Bye!

outcome: ended, farewell 'Bye!'
"""


def test_the_file_is_readable_text(tmp_path: Path) -> None:
    session = _ordered()
    assert_matches_snapshot(session, "barista/latte", normalize={"order": r"ORD-\d+"},
                            directory=tmp_path, update=True)
    assert (tmp_path / "barista" / "latte.txt").read_text(encoding="utf-8") == EXPECTED
    # the same conversation matches it
    assert_matches_snapshot(session, "barista/latte", normalize={"order": r"ORD-\d+"},
                            directory=tmp_path)


def test_a_mismatch_is_a_diff_of_the_conversation(tmp_path: Path) -> None:
    (tmp_path / "barista").mkdir()
    (tmp_path / "barista" / "latte.txt").write_text(
        EXPECTED.replace("Done: <order>.", "Done, order <order>."), encoding="utf-8")
    with pytest.raises(AssertionError) as failed:
        assert_matches_snapshot(_ordered(), "barista/latte",
                                normalize={"order": r"ORD-\d+"}, directory=tmp_path)
    lines = str(failed.value).splitlines()
    assert lines[0].startswith("the conversation differs from the snapshot ")
    assert lines[0].endswith("barista/latte.txt (- snapshot, + this run):")
    assert lines[3:] == [
        "@@ -6,7 +6,7 @@",
        "   | One moment.",
        '   -> call 1: order({"drink": "latte"})',
        " tool (call 1, order): Order <order> placed at <timestamp>",
        "-assistant: Done, order <order>.",
        "+assistant: Done: <order>.",
        " assistant: Bye!",
        " ",
        " outcome: ended, farewell 'Bye!'",
        "run pytest --convo-update-snapshots to accept this run's conversation",
    ]


def test_a_missing_snapshot_fails_and_shows_the_conversation(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"there is no snapshot .*new.txt yet: run pytest "
                       r"--convo-update-snapshots to accept this run.s conversation"):
        assert_matches_snapshot(_ordered(), "new", directory=tmp_path)
    assert not (tmp_path / "new.txt").exists()


def test_normalisers_pairs_functions_and_no_defaults() -> None:
    session = Session([Message("user", "id 123e4567-e89b-12d3-a456-426614174000 at "
                                       "2026-11-23 12:00, took 41 ms")])
    assert "user: id <uuid> at <timestamp>, took 41 ms" in snapshot_text(session, "x")
    text = snapshot_text(session, "x", [(r"\d+ ms", "<ms>"), str.upper], defaults=False)
    assert "USER: ID 123E4567-E89B-12D3-A456-426614174000 AT 2026-11-23 12:00, TOOK <MS>" in text


def test_render_a_list_of_messages_and_unknown_call_ids() -> None:
    assert render([Message("tool", "ok", tool_call_id="c9"), Message("assistant", "")]) == (
        "tool (id c9): ok\nassistant:\n")


@pytest.mark.parametrize("name", ["", "a b", "../up", "a//b", "/abs"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="use letters, digits"):
        snapshot_path(name, "snapshots")


# -- in a user's project ------------------------------------------------------------------------

CHAT = """
from convo import AssistantTemplate, LinearTemplate, Runner, UserTemplate
from convo.testing import assert_matches_snapshot

chat = LinearTemplate([UserTemplate(), AssistantTemplate()])

def test_hello(mock_model, scripted_user, conversation_snapshot):
    session = Runner(mock_model([REPLY]), chat, scripted_user(["hi"])).run()
    conversation_snapshot(session)
    assert_matches_snapshot(session, "named/hello")
"""


def test_update_writes_then_a_change_fails_with_a_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_barista_chat=CHAT.replace("REPLY", "'Hello!'"))
    result = pytester.runpytest("--convo-update-snapshots")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["convo: 2 conversation snapshots written:",
                                 "*tests/snapshots/test_barista_chat/test_hello.txt",
                                 "*tests/snapshots/named/hello.txt"])
    written = pytester.path / "tests" / "snapshots" / "test_barista_chat" / "test_hello.txt"
    assert written.read_text(encoding="utf-8").endswith(
        "user: hi\nassistant: Hello!\n\noutcome: completed\n")

    pytester.runpytest().assert_outcomes(passed=1)

    pytester.makepyfile(test_barista_chat=CHAT.replace("REPLY", "'Hello there!'"))
    fails_saying(pytester, [
        "E *AssertionError: the conversation differs from the snapshot "
        "tests/snapshots/test_barista_chat/test_hello.txt (- snapshot, + this run):",
        "E *--- snapshot tests/snapshots/test_barista_chat/test_hello.txt",
        "E *+++ this run",
        "E *@@ -2,6 +2,6 @@",
        "E *-assistant: Hello!",
        "E *+assistant: Hello there!",
        "E *run pytest --convo-update-snapshots to accept this run's conversation",
    ])


def test_the_snapshot_directory_is_an_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nconvo_snapshot_dir = golden\n")
    pytester.makepyfile(test_barista_chat=CHAT.replace("REPLY", "'Hello!'"))
    pytester.runpytest("--convo-update-snapshots").assert_outcomes(passed=1)
    assert (pytester.path / "golden" / "named" / "hello.txt").exists()


def test_the_update_environment_variable(pytester: pytest.Pytester,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_barista_chat=CHAT.replace("REPLY", "'Hello!'"))
    monkeypatch.setenv("CONVO_UPDATE_SNAPSHOTS", "1")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["convo: 2 conversation snapshots written:"])
    monkeypatch.setenv("CONVO_UPDATE_SNAPSHOTS", "0")
    pytester.makepyfile(test_barista_chat=CHAT.replace("REPLY", "'Changed!'"))
    pytester.runpytest().assert_outcomes(failed=1)
