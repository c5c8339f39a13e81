"""Branches in the terminal (API.md §28), in a real pty: /history numbers the messages,
/retry makes the last reply again, /edit puts the last message in the prompt (Enter sends it
as a branch, Ctrl-C gives up), /edit TEXT and /branch N; each branch is a new conversation of
the local history, the original kept there as it was."""

from __future__ import annotations

from pathlib import Path

from terminal_harness import Spawn, convo_cmd, env, terminal

from convo._terminal.history import History

__all__ = ["env", "terminal"]  # the fixtures

BOT = str(Path(__file__).resolve().parents[1] / "cli_fixtures" / "branch_bot.py")


def test_retry_and_edit_branch_and_the_history_keeps_every_conversation(
        terminal: Spawn, env: dict[str, str]) -> None:
    t = terminal("run", BOT)
    t.type("hello")
    t.expect("You said 'hello' (call 1)")
    t.type("add tea")
    t.expect("Done: added tea (call 3)")
    t.type("/history")
    t.expect("   3  you: add tea\n   4  assistant: [calls add_to_cart()]\n"
             "   5  tool add_to_cart: added tea\n   6  assistant: Done: added tea (call 3)")
    t.type("/retry")
    t.expect("--- a branch of the conversation, before message 6 (the original stays in the "
             "history) ---")
    t.expect("Done: added tea (call 4)")
    t.type("/edit")
    t.expect("Edit: add tea")
    t.child.send("\x7f\x7f\x7fjam\r")  # three backspaces, then the new end of the line
    t.expect("before message 3")
    t.expect("Done: added jam (call 6)")
    t.type("/edit")
    t.expect("Edit: add jam")
    t.child.send("\x03")  # Ctrl-C: nothing is sent
    t.expect("(edit given up)")
    t.type("/branch 5")
    t.expect("before=5 is a tool message (the result of 'add_to_cart'); a branch starts "
             "before a user message or a model's reply")
    t.end_of_input()
    assert t.finish() == 0

    history = History(Path(env["CONVO_HOME"]) / "history.db")
    try:
        rows = history.db.execute("SELECT id FROM conversations ORDER BY id").fetchall()
        sessions = [history.load(row[0]) for row in rows]
    finally:
        history.close()
    assert [s.parent for s in sessions] == [None, {"id": None, "before": 6},
                                            {"id": None, "before": 3}]
    assert [m.content for m in sessions[0].messages[1:]] == [
        "hello", "You said 'hello' (call 1)", "add tea", "", "added tea",
        "Done: added tea (call 3)"]
    assert [m.content for m in sessions[2].messages[1:]] == [
        "hello", "You said 'hello' (call 1)", "add jam", "", "added jam",
        "Done: added jam (call 6)"]
    assert sessions[2].state == {"cart": ["jam"]}


def test_edit_with_text_sends_it_at_once_when_piped(env: dict[str, str]) -> None:
    result = convo_cmd("run", BOT, "--no-log", env=env,
                       stdin="add tea\n/edit add ham\n/history\n")
    assert result.returncode == 0, result.stderr
    assert "Done: added ham (call 4)" in result.stdout
    assert "   1  you: add ham\n" in result.stdout
    assert "   4  assistant: Done: added ham (call 4)\n" in result.stdout
    assert result.stdout.endswith("(5 messages, 2 model calls) ---\n")  # the branch's own
