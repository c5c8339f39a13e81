"""``/save`` writes a transcript that names where the conversation came from (``convo chat``,
or the bot file of ``convo run``, as ``--save`` does), and marks itself a copy of a
conversation that went on, which ``convo replay`` says (not "killed, or still going")."""

from __future__ import annotations

import json
import re
from pathlib import Path

from terminal_harness import convo_cmd, env

from convo._transcript import read_transcript

__all__ = ["env"]  # the fixture

ECHO = str(Path(__file__).resolve().parents[2] / "examples" / "echo_chat.py")
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_save_in_convo_run_names_the_bot_file(env: dict[str, str], tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    result = convo_cmd("run", ECHO, "--no-log", env=env, stdin=f"hello\n/save {saved}\nmore\n")
    assert result.returncode == 0
    assert f"saved 3 messages to {saved} (convo replay {saved} shows it)\n" in result.stdout
    lines = _lines(saved)
    assert lines[0]["source"] == ECHO
    assert [line["type"] for line in lines] == ["header", "message", "message", "message",
                                                "saved"]
    assert lines[-1]["messages"] == 3
    assert re.fullmatch(STAMP, str(lines[-1]["at"]))


def test_a_save_in_convo_chat_names_convo_chat(env: dict[str, str], tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    result = convo_cmd("chat", "--no-log", env=env, stdin=f"hello\n/save {saved}\n")
    assert result.returncode == 0
    assert _lines(saved)[0]["source"] == "convo chat"


def test_replay_tells_a_save_from_a_killed_run(env: dict[str, str], tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    convo_cmd("run", ECHO, "--no-log", env=env, stdin=f"hello\n/save {saved}\nmore\n")
    shown = convo_cmd("replay", str(saved), env=env)
    assert shown.returncode == 0
    assert re.fullmatch(
        rf"--- transcript of {re.escape(ECHO)}, started {STAMP} \(convo [^)]+\) ---\n"
        r"System: You are an echo\.\nYou: hello\n"
        r"Assistant: You said 'hello'\. That is 1 message\(s\) from you so far\.\n"
        rf"--- saved with /save at {STAMP} while the conversation went on: what came after "
        r"is not in this file ---\n", shown.stdout)
    # the same file without its mark reads as a run that stopped writing
    killed = tmp_path / "killed.jsonl"
    killed.write_text("".join(line + "\n" for line in saved.read_text().splitlines()[:-1]))
    assert convo_cmd("replay", str(killed), env=env).stdout.endswith(
        "--- no outcome recorded: the run was killed, or is still going ---\n")


def test_a_saved_copy_continued_is_no_longer_a_copy(env: dict[str, str],
                                                     tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    convo_cmd("run", ECHO, "--no-log", env=env, stdin=f"hello\n/save {saved}\n")
    assert read_transcript(saved).saved_at is not None
    result = convo_cmd("run", ECHO, "--no-log", "--resume", str(saved), "--save", str(saved),
                       env=env, stdin="again\n")
    assert result.returncode == 0
    transcript = read_transcript(saved)
    assert transcript.saved_at is None
    assert transcript.session.outcome is not None
    assert [m.content for m in transcript.session.messages][1:] == [
        "hello", "You said 'hello'. That is 1 message(s) from you so far.",
        "again", "You said 'again'. That is 2 message(s) from you so far."]
