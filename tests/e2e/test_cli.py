"""The `convo` command, end to end: the real command in a pseudo-terminal (pexpect) or a pipe."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from terminal_harness import TIMEOUT, Spawn, convo_cmd, env, terminal

import convo
from convo import Message, RunStatus
from convo._transcript import load_transcript, read_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "cli_fixtures"
CHAT = str(FIXTURES / "chat.py")
OFFLINE = ("convo: no OPENAI_API_KEY or --base-url: running offline on "
           f"{CHAT}'s mock_model\n")
STARTED = "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"

__all__ = ["env", "terminal"]  # fixtures


# --- version, help, python -m convo -----------------------------------------------------------


def test_version(env: dict[str, str]) -> None:
    result = convo_cmd("--version", env=env)
    assert (result.returncode, result.stdout, result.stderr) == (
        0, f"convo {convo.__version__}\n", "")


def test_the_console_script_is_the_same_command(env: dict[str, str]) -> None:
    script = Path(sys.executable).parent / "convo"
    if not script.exists():
        pytest.skip("convo is not installed as a console script next to this Python")
    result = subprocess.run([str(script), "--version"], env=env, capture_output=True,
                            text=True, timeout=TIMEOUT, check=False)
    assert (result.returncode, result.stdout) == (0, f"convo {convo.__version__}\n")


def test_help_names_the_commands(env: dict[str, str]) -> None:
    result = convo_cmd("--help", env=env)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: convo [-h] [--debug] [--version] COMMAND ...\n")
    assert re.search(r"\n +run +chat with a template defined in a Python file\n", result.stdout)
    assert re.search(r"\n +replay +show a saved transcript\n", result.stdout)
    run_help = convo_cmd("run", "--help", env=env)
    assert run_help.returncode == 0
    assert "--save PATH" in run_help.stdout and "--resume PATH" in run_help.stdout


def test_no_command_shows_the_help_and_fails(env: dict[str, str]) -> None:
    result = convo_cmd(env=env)
    assert result.returncode == 2
    assert result.stdout.startswith("usage: convo")


# --- an offline run, piped: plain output --------------------------------------------------


def test_offline_run_with_piped_input_is_plain_text(env: dict[str, str]) -> None:
    result = convo_cmd("run", CHAT, env=env, stdin="2+2?\nbye\n")
    assert result.returncode == 0
    assert result.stderr == OFFLINE
    assert result.stdout == (
        STARTED
        + "System: You are a math tutor.\n"
        "You: 2+2?\n"
        "Assistant: You said '2+2?' (message 1)\n"
        "You: bye\n"
        "Assistant: Goodbye!\n"
        "--- conversation ended: the conversation was ended ('Goodbye!') "
        "(5 messages, 1 model call) ---\n"
    )


def test_end_of_piped_input_stops_the_run(env: dict[str, str]) -> None:
    result = convo_cmd("run", CHAT, env=env, stdin="hi\n")
    assert result.returncode == 0
    assert result.stdout.endswith(
        "Assistant: You said 'hi' (message 1)\n"
        "--- conversation stopped: the user quit or the run was cancelled "
        "(3 messages, 1 model call) ---\n")


def test_demo_answers_with_the_files_demo_input(env: dict[str, str]) -> None:
    result = convo_cmd("run", CHAT, "--demo", env=env)
    assert result.returncode == 0
    assert "You: 2+2?\nAssistant: You said '2+2?' (message 1)\nYou: bye\n" in result.stdout


def test_another_template_in_the_file_by_name(env: dict[str, str]) -> None:
    result = convo_cmd("run", f"{CHAT}:other", env=env)
    assert result.returncode == 0
    assert result.stdout == (STARTED + "You: hi\n--- conversation completed: the conversation "
                             "ran to its end (1 message, 0 model calls) ---\n")


def test_a_run_that_ends_in_error_exits_1(env: dict[str, str]) -> None:
    result = convo_cmd("run", CHAT, env=env, stdin="boom\n")
    assert result.returncode == 1
    assert result.stdout.endswith(
        "--- conversation error: an error: RuntimeError: the model broke "
        "(2 messages, 1 model call) ---\n")
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback_of_a_failed_run(env: dict[str, str]) -> None:
    result = convo_cmd("run", CHAT, "--debug", env=env, stdin="boom\n")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.endswith("RuntimeError: the model broke\n")


# --- user mistakes: one line, exit 2 ------------------------------------------------------


@pytest.mark.parametrize(("target", "error"), [
    ("nope.py", "convo: error: nope.py does not exist: give a Python file that defines a "
                "template\n"),
    (f"{CHAT}:missing", f"convo: error: {CHAT} has no template named 'missing': it defines "
                        f"other, template; run one with {CHAT}:other\n"),
    (f"{CHAT}:not_a_template", f"convo: error: {CHAT}:not_a_template is a int, not a convo "
                               "Template (templates in it: other, template)\n"),
    (f"{CHAT}:mock_model", f"convo: error: {CHAT}:mock_model is a FunctionModel, not a convo "
                           "Template (templates in it: other, template)\n"),
    (str(FIXTURES / "broken.py"),
     f"convo: error: {FIXTURES / 'broken.py'}, line 4 raised ZeroDivisionError: the file is "
     "broken on purpose while loading (--debug shows the traceback)\n"),
    (str(FIXTURES / "no_mock.py"),
     f"convo: error: no OPENAI_API_KEY or --base-url, and {FIXTURES / 'no_mock.py'} defines no "
     "mock_model to run offline: set OPENAI_API_KEY, pass --base-url URL, or define mock_model "
     f"= MockModel([...]) in {FIXTURES / 'no_mock.py'}\n"),
])
def test_mistakes_are_one_line_errors(env: dict[str, str], target: str, error: str) -> None:
    result = convo_cmd("run", target, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", error)


def test_debug_shows_the_traceback_of_a_file_that_fails_to_load(env: dict[str, str]) -> None:
    result = convo_cmd("run", str(FIXTURES / "broken.py"), "--debug", env=env)
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert 'raise ZeroDivisionError("the file is broken on purpose")' in result.stderr


def test_save_never_overwrites(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("precious\n")
    result = convo_cmd("run", CHAT, "--save", str(path), env=env)
    assert result.returncode == 2
    assert result.stderr == (f"convo: error: {path} already exists: continue it with --resume "
                             f"{path} --save {path}, or choose another path\n")
    assert path.read_text() == "precious\n"


def test_resume_and_replay_of_a_file_that_is_not_a_transcript(env: dict[str, str],
                                                              tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("hello\n")
    message = (f'convo: error: {path} is not a convo transcript: its first line should be a '
               'header with "format": "convo.transcript"\n')
    assert convo_cmd("replay", str(path), env=env).stderr == message
    result = convo_cmd("run", CHAT, "--resume", str(path), env=env)
    assert (result.returncode, result.stderr) == (2, message)


# --- the terminal: typing, /exit, Ctrl-D, Ctrl-C ------------------------------------------


def test_typed_input_and_exit(terminal: Spawn) -> None:
    t = terminal("run", CHAT)
    t.say("hello", "Assistant: You said 'hello' (message 1)")
    assert t.exit() == 0
    assert t.screen() == (
        OFFLINE + STARTED + "System: You are a math tutor.\n"
        "You: hello\nAssistant: You said 'hello' (message 1)\nYou: /exit\n"
        "--- conversation stopped: the user quit or the run was cancelled "
        "(3 messages, 1 model call) ---\n"
        f"convo: kept in the history: convo run {CHAT} -c continues it\n")


def test_quit_and_ctrl_d_end_the_run(terminal: Spawn) -> None:
    t = terminal("run", CHAT)
    t.type("/quit")
    assert t.finish() == 0
    t = terminal("run", CHAT)
    t.expect("You:")
    t.end_of_input()
    assert t.finish() == 0
    assert "--- conversation stopped: the user quit or the run was cancelled " in t.seen


def test_history_recalls_earlier_lines(terminal: Spawn) -> None:
    t = terminal("run", CHAT)
    t.say("hello", "Assistant: You said 'hello' (message 1)")
    t.type("\x1b[A")  # arrow up, then Enter
    t.expect("Assistant: You said 'hello' (message 2)")
    assert t.exit() == 0
    t = terminal("run", CHAT)  # and in the next session, before /exit
    t.say("\x1b[A\x1b[A", "Assistant: You said 'hello' (message 1)")
    assert t.exit() == 0


def test_ctrl_c_cancels_a_slow_model_call_and_the_chat_goes_on(terminal: Spawn,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", CHAT, "--save", str(path))
    t.say("slow", "(the model is thinking)")
    t.interrupt("thinking… ", "(reply cancelled with Ctrl-C)")  # the spinner: stdout is a terminal
    t.say("hello", "Assistant: You said 'hello' (message 1)")  # the unanswered message is dropped
    assert t.exit() == 0
    assert "You: slow\n(the model is thinking)\n  (reply cancelled with Ctrl-C)\nYou: hello\n" \
        in t.screen()
    session = load_transcript(path)
    assert session.messages[-2:] == [Message("user", "hello"),
                                     Message("assistant", "You said 'hello' (message 1)")]
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED


def test_a_second_ctrl_c_quits_at_once(terminal: Spawn, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", CHAT, "--save", str(path))
    t.type("stubborn")
    t.interrupt("(the model is thinking)", "(the model ignores Ctrl-C)")
    t.child.sendintr()
    assert t.finish() == 130
    assert "convo: interrupted twice, quitting" in t.seen
    session = load_transcript(path)
    assert session.messages[-1] == Message("user", "stubborn")
    assert session.outcome is None


def test_a_killed_process_leaves_a_readable_transcript(terminal: Spawn, env: dict[str, str],
                                                      tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", CHAT, "--save", str(path))
    t.say("hello", "Assistant: You said 'hello' (message 1)")
    t.say("slow", "(the model is thinking)")
    t.child.kill(signal.SIGKILL)
    t.child.expect(pexpect.EOF)
    t.child.close()
    assert t.child.signalstatus == signal.SIGKILL
    assert load_transcript(path).messages == [
        Message("system", "You are a math tutor."), Message("user", "hello"),
        Message("assistant", "You said 'hello' (message 1)"), Message("user", "slow"),
    ]
    result = convo_cmd("replay", str(path), env=env)
    assert result.returncode == 0
    assert result.stdout.endswith(
        "You: slow\n--- no outcome recorded: the run was killed, or is still going ---\n")


def test_piped_output_has_no_terminal_escapes_even_from_a_terminal(env: dict[str, str]) -> None:
    # stdin is a terminal, stdout is a pipe: plain output, no spinner, no colour.
    child = pexpect.spawn("/bin/sh", ["-c", f"{sys.executable} -m convo run {CHAT} | cat"],
                          env=env, encoding="utf-8", timeout=TIMEOUT)
    child.expect_exact("You: ")
    child.sendline("hello")
    child.expect_exact("You: ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert "\x1b" not in child.before.replace("\x1b[?2004h", "").replace("\x1b[?2004l", "")


# --- transcripts: --save, replay, --resume ------------------------------------------------


def test_save_then_replay(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    result = convo_cmd("run", CHAT, "--save", str(path), env=env, stdin="hi\nbye\n")
    assert result.returncode == 0
    assert result.stderr == OFFLINE + f"convo: transcript saved to {path}\n"
    header = read_transcript(path).header
    replay = convo_cmd("replay", str(path), env=env)
    assert replay.returncode == 0
    assert replay.stdout == (
        f"--- transcript of {CHAT}, started {header['started']} (convo {convo.__version__}) ---\n"
        "System: You are a math tutor.\n"
        "You: hi\n"
        "Assistant: You said 'hi' (message 1)\n"
        "You: bye\n"
        "Assistant: Goodbye!\n"
        "--- conversation ended: the conversation was ended ('Goodbye!') "
        "(5 messages, 1 model call) ---\n"
    )
    as_json = convo_cmd("replay", str(path), "--json", env=env)
    from convo import Session

    assert Session.from_json(as_json.stdout) == load_transcript(path)


def test_resume_continues_the_conversation(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = convo_cmd("run", CHAT, "--save", str(path), env=env, stdin="hi\n")
    assert first.stderr.endswith(
        f"convo: transcript saved to {path} (continue it with --resume {path})\n")
    result = convo_cmd("run", CHAT, "--resume", str(path), "--save", str(path), env=env,
                       stdin="again\n")
    assert result.returncode == 0
    assert result.stdout == (
        f"--- resuming {path}: replaying 3 saved messages ---\n"
        + STARTED
        + "System: You are a math tutor.\n"
        "You: hi\n"
        "Assistant: You said 'hi' (message 1)\n"
        "--- resumed after 3 saved messages; live from here ---\n"
        "You: again\n"
        "Assistant: You said 'again' (message 2)\n"
        "--- conversation stopped: the user quit or the run was cancelled "
        "(5 messages, 2 model calls) ---\n"  # counts cover the whole conversation
    )
    assert [m.content for m in load_transcript(path).messages] == [
        "You are a math tutor.", "hi", "You said 'hi' (message 1)", "again",
        "You said 'again' (message 2)"]


def test_resume_into_a_new_file_copies_the_conversation(env: dict[str, str],
                                                        tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    convo_cmd("run", CHAT, "--save", str(old), env=env, stdin="hi\n")
    convo_cmd("run", CHAT, "--resume", str(old), "--save", str(new), env=env, stdin="more\n")
    assert len(load_transcript(old).messages) == 3
    assert [m.content for m in load_transcript(new).messages][1:] == [
        "hi", "You said 'hi' (message 1)", "more", "You said 'more' (message 2)"]


# --- models: --record, an OpenAI-compatible server --------------------------------------------


def test_record_writes_the_exchanges(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    result = convo_cmd("run", CHAT, "--record", str(path), env=env, stdin="hi\n")
    assert result.returncode == 0
    from convo.testing._replay import load_recording

    [exchange] = load_recording(path)
    assert exchange["reply"] == {"role": "assistant", "content": "You said 'hi' (message 1)"}


def test_base_url_runs_on_an_openai_compatible_server(terminal: Spawn) -> None:
    from convo.testing import OpenAIServer

    with OpenAIServer(["Hello from the server!"]) as server:
        t = terminal("run", CHAT, "--base-url", server.base_url, "--model", "test-model")
        t.expect(f"convo: model test-model at {server.base_url}")
        t.say("hi", "Assistant: Hello from the server!")
        assert t.exit() == 0
        [request] = server.requests
    assert request["model"] == "test-model"
    assert request["stream"] is True
    assert request["messages"][-1] == {"role": "user", "content": "hi"}


def test_ctrl_c_at_an_empty_prompt_asks_again(terminal: Spawn) -> None:
    t = terminal("run", CHAT)
    t.clear_then_ask_to_leave()
    t.type("hello")  # anything else, and it asks again next time
    t.expect("Assistant: You said 'hello' (message 1)")
    t.interrupt("You:", "(press Ctrl-C again or Ctrl-D to leave)")
    t.expect("You:")
    t.child.sendintr()
    assert t.finish() == 0
    assert t.screen().endswith(
        "(press Ctrl-C again or Ctrl-D to leave)\nYou:\n--- conversation stopped: the user "
        "quit or the run was cancelled (3 messages, 1 model call) ---\n"
        f"convo: kept in the history: convo run {CHAT} -c continues it\n")
