"""`convo chat` and the terminal chat's features, end to end: the real command in a
pseudo-terminal (pexpect, the screen read with pyte) or a pipe.

Slash commands, multi-line input, Ctrl-C that cancels a reply, the local history and
`-c`/`--continue`, Markdown, and every error path without a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest
from terminal_harness import TIMEOUT, Spawn, convo_cmd, env, terminal

from convo import Message, RunStatus
from convo._transcript import load_transcript
from convo.testing import OpenAIServer
from convo.testing._server import SlowReply

__all__ = ["env", "terminal"]  # fixtures

FIXTURES = Path(__file__).resolve().parents[1] / "cli_fixtures"
STREAM = str(FIXTURES / "stream.py")
OFFLINE = ("convo: no OPENAI_API_KEY or --base-url: chatting offline with a mock model that "
           "echoes you (set OPENAI_API_KEY, or pass --base-url URL of a local server)\n")
STARTED = "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"
STOPPED = "--- conversation stopped: the user quit or the run was cancelled"
KEPT = "convo: kept in the history: convo chat -c continues it\n"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def history(env: dict[str, str]) -> list[Message]:
    """The messages of the last chat in the history kept under env's CONVO_HOME."""
    from convo._terminal.history import History

    db = History(Path(env["CONVO_HOME"]) / "history.db")
    try:
        last = db.last("chat")
    finally:
        db.close()
    assert last is not None
    return last[1].messages


# --- piped: plain text, exact --------------------------------------------------------------


def test_an_offline_chat_says_so_and_echoes(env: dict[str, str]) -> None:
    result = convo_cmd("chat", "-s", "Be brief.", env=env, stdin="hello\n")
    assert (result.returncode, result.stderr) == (0, OFFLINE + KEPT)
    assert result.stdout == (
        "System: Be brief.\n" + STARTED
        + "You: hello\nAssistant: (offline mock model) You said: hello\n"
        + STOPPED + " (3 messages, 1 model call) ---\n")
    assert history(env) == [Message("system", "Be brief."), Message("user", "hello"),
                            Message("assistant", "(offline mock model) You said: hello")]


def test_slash_commands_never_reach_the_model(env: dict[str, str], tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    lines = ["one", "two", "/undo", "/retry", "/usage", "/model", "/model gpt-4o",
             "/nonsense", "//not a command", f"/save {saved}", f"/save {saved}", "/clear",
             "/undo", "/help", "/exit", "never read"]
    result = convo_cmd("chat", "-s", "Be brief.", env=env, stdin="\n".join(lines) + "\n")
    assert result.returncode == 0
    echo = "Assistant: (offline mock model) You said: "
    out = result.stdout
    assert out.startswith("System: Be brief.\n" + STARTED + "You: one\n" + echo + "one\n"
                          "You: two\n" + echo + "two\n"
                          "dropped the last exchange (2 messages)\n"
                          + STOPPED + " (3 messages, 2 model calls) ---\n"
                          "--- a branch of the conversation, before message 2 (the original "
                          "stays in the history) ---\n" + STARTED + "You: one\n"
                          "--- resumed after 1 saved messages; live from here ---\n"
                          + echo + "one\n"
                          "no token usage reported so far\n"
                          "model: OfflineModel (/model NAME switches)\n"
                          "this chat runs on OfflineModel, which has no model names to switch "
                          "between\n"
                          "unknown command /nonsense: the commands are /help, /exit, /save, "
                          "/retry, /edit, /branch, /history, /undo, /clear, /model, /usage, "
                          "/tools, /attach, /detach "
                          "(start the line with // to send it as it is)\n"
                          "You: /not a command\n" + echo + "/not a command\n"
                          f"saved 5 messages to {saved} (convo replay {saved} shows it)\n"
                          f"not saved: {saved} already exists (give another PATH)\n"
                          "cleared 4 messages: the model starts afresh (the system prompt "
                          "stays)\n"
                          "nothing to undo\n"
                          "commands:\n  /help           show the commands and keys\n")
    assert out.endswith("  Ctrl-D                leave the chat\n"
                        + STOPPED + " (1 message, 2 model calls) ---\n")  # the branch's
    assert load_transcript(saved).messages[1:] == [
        Message("user", "one"), Message("assistant", echo[11:] + "one"),
        Message("user", "/not a command"), Message("assistant", echo[11:] + "/not a command")]
    assert history(env) == [Message("system", "Be brief.")]


def test_a_saved_transcript_follows_undo_and_retry(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    result = convo_cmd("run", str(FIXTURES / "chat.py"), "--save", str(path), env=env,
                       stdin="one\n/undo\ntwo\n/retry\n")
    assert result.returncode == 0
    assert [m.content for m in load_transcript(path).messages] == [
        "You are a math tutor.", "two", "You said 'two' (message 1)"]


def test_a_quoted_block_is_one_message(env: dict[str, str]) -> None:
    result = convo_cmd("chat", env=env, stdin='"""\nfirst line\n\nthird line\n"""\n')
    assert "You: first line\n\nthird line\n" in result.stdout
    assert history(env)[0] == Message("user", "first line\n\nthird line")


def test_continue_picks_up_the_last_chat(env: dict[str, str]) -> None:
    convo_cmd("chat", "-s", "Be brief.", env=env, stdin="first\n")
    result = convo_cmd("chat", "-c", env=env, stdin="second\n")
    assert result.returncode == 0
    assert result.stdout == (
        "--- continuing the last chat: 3 messages ---\n"
        "System: Be brief.\nYou: first\nAssistant: (offline mock model) You said: first\n"
        + STARTED + "You: second\nAssistant: (offline mock model) You said: second\n"
        + STOPPED + " (5 messages, 2 model calls) ---\n")  # the whole chat's (API §14)
    assert [m.content for m in history(env)] == [
        "Be brief.", "first", "(offline mock model) You said: first", "second",
        "(offline mock model) You said: second"]


def test_no_log_keeps_the_chat_out_of_the_history(env: dict[str, str]) -> None:
    result = convo_cmd("chat", "--no-log", env=env, stdin="secret\n")
    assert (result.returncode, result.stderr) == (0, OFFLINE)
    assert not (Path(env["CONVO_HOME"]) / "history.db").exists()


# --- against an OpenAI-compatible server --------------------------------------------------


def test_a_chat_with_a_server_shows_usage_and_sends_the_whole_conversation(
        env: dict[str, str]) -> None:
    with OpenAIServer(["Hello there!", "Fine, thanks.", "Switched."]) as server:
        result = convo_cmd("chat", "--base-url", server.base_url, "-m", "test-model", env=env,
                           stdin="hi\nhow are you?\n/usage\n/model other-model\nand?\n")
        requests = server.requests
    assert [r["model"] for r in requests] == ["test-model", "test-model", "other-model"]
    assert "model: other-model from now on\n" in result.stdout
    assert result.returncode == 0
    assert result.stderr == f"convo: model test-model at {server.base_url}\n" + KEPT
    assert "Assistant: Fine, thanks.\n  (9 tokens in, 2 out)\n" in result.stdout
    assert ("11 tokens in, 4 out, 15 in all, over 2 replies; under a cent at test-model's "
            "list price\n") not in result.stdout  # no price known for test-model
    assert "11 tokens in, 4 out, 15 in all, over 2 replies\n" in result.stdout
    assert requests[1]["messages"] == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello there!"},
        {"role": "user", "content": "how are you?"}]


def test_tools_from_a_file(env: dict[str, str], tmp_path: Path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text("from convo import tool\n\n@tool\ndef add(a: int, b: int) -> int:\n"
                     '    """Add two numbers."""\n    return a + b\n')
    with OpenAIServer(["{add(a=2, b=3)}", "It is 5."]) as server:
        result = convo_cmd("chat", "--base-url", server.base_url, "--tools", str(tools),
                           env=env, stdin="2+3?\n")
        [tool] = server.requests[0]["tools"]
    assert tool["function"]["name"] == "add"
    assert 'You: 2+3?\n  → add({"a": 2, "b": 3})\n' in result.stdout
    assert "  ↳ add: 5\nAssistant: It is 5.\n" in result.stdout


# --- the terminal ---------------------------------------------------------------------------


def test_a_paste_of_several_lines_is_one_message(terminal: Spawn, env: dict[str, str]) -> None:
    t = terminal("chat")
    t.expect("You:")
    t.child.send(f"{PASTE_START}line one\nline two\nline three{PASTE_END}")
    t.child.send("\r")
    t.expect("You said: line one")
    t.type("first\x1b\rsecond")  # Esc Enter: a new line
    t.expect("You said: first")
    t.type('"""')  # Enter does not send an open block
    t.child.send('a block\r"""\r')
    t.expect("You said: a block")
    assert t.exit() == 0
    assert [m.content for m in history(env) if m.role == "user"] == [
        "line one\nline two\nline three", "first\nsecond", "a block"]
    assert "You: line one\n.... line two\n.... line three\n" in t.screen()


def test_slash_commands_in_the_terminal(terminal: Spawn, env: dict[str, str],
                                        tmp_path: Path) -> None:
    t = terminal("chat", "-s", "Be brief.")
    t.say("hello", "You said: hello")
    t.expect("You:")
    t.child.send("/he")
    t.expect("show the commands and keys")  # the menu of completions
    t.child.send("\t\r")  # Tab completes /help, Enter sends it
    t.expect("Ctrl-D                leave the chat")
    t.say("/retry", "before message 2 (the original stays in the history)")
    t.expect("You said: hello")
    t.say("/usage", "no token usage reported so far")
    t.say("/model", "model: OfflineModel")
    t.say("/save " + str(tmp_path / "s.jsonl"), "saved 3 messages")
    t.say("/undo", "dropped the last exchange (2 messages)")
    t.say("again", "You said: again")
    t.say("/clear", "cleared 2 messages")
    t.say("/what", "unknown command /what")
    assert t.exit() == 0
    assert history(env) == [Message("system", "Be brief.")]
    assert "You: /help\ncommands:\n" in t.screen()


def test_ctrl_c_cancels_a_streamed_reply_and_keeps_what_came(terminal: Spawn,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", STREAM, "--save", str(path))
    t.cancel_then_go_on("hang", "Partial answer",
                        "(reply cancelled with Ctrl-C; the partial reply is kept)",
                        "You said: hello")
    assert ("You: hang\nAssistant: Partial answer\n"
            "  (reply cancelled with Ctrl-C; the partial reply is kept)\n"
            "You: hello\nAssistant: You said: hello\n  (12 tokens in, 5 out)\n") in t.screen()
    messages = load_transcript(path).messages
    assert messages[:2] == [Message("user", "hang"), Message(
        "assistant", "Partial answer", metadata={"cancelled": True})]
    assert [m.content for m in messages[2:]] == ["hello", "You said: hello"]


def test_ctrl_c_cancels_a_slow_tool(terminal: Spawn, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    t = terminal("run", STREAM, "--save", str(path))
    t.cancel_then_go_on("tool", "(the tool is waiting)",
                        "↳ wait: Cancelled by the user (Ctrl-C)", "You said: hello")
    session = load_transcript(path)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "user",
                                                  "assistant"]
    assert session.messages[2].content == "Cancelled by the user (Ctrl-C)"
    assert session.turns[0].status is RunStatus.STOPPED


def test_ctrl_c_while_a_server_is_slow(terminal: Spawn, env: dict[str, str]) -> None:
    with OpenAIServer([SlowReply("never seen", 30), "Back again."]) as server:
        t = terminal("chat", "--base-url", server.base_url)
        t.say("slow", "thinking… ")
        deadline = time.monotonic() + TIMEOUT
        while not server.requests and time.monotonic() < deadline:
            t.expect("thinking… ")  # until the request is at the server
        t.child.sendintr()
        t.expect("(reply cancelled with Ctrl-C)")
        t.say("hello", "Assistant: Back again.")
        assert t.exit() == 0
    assert [m.content for m in history(env)] == ["hello", "Back again."]


def test_typing_while_a_reply_streams_waits_for_the_next_prompt(
        terminal: Spawn, env: dict[str, str], tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    env["CONVO_GATE"] = str(gate)
    t = terminal("run", STREAM)
    t.say("gated", "Half")
    t.child.send("typed ahead")  # while the reply is still coming
    with open(gate, "w") as release:
        release.write("go")
    t.expect("and the rest.")
    t.expect("You:")
    t.child.send("\r")
    t.expect("You said: typed ahead")
    assert t.exit() == 0
    screen = t.screen()
    assert ("You: gated\nAssistant: Half and the rest.\n  (12 tokens in, 5 out)\n"
            "You: typed ahead\nAssistant: You said: typed ahead\n") in screen, screen


def test_markdown_is_rendered_and_plain_is_raw(terminal: Spawn) -> None:
    t = terminal("run", STREAM)
    t.say("markdown", "eggs")
    assert t.exit() == 0
    assert "You: markdown\nAssistant:\n" in t.screen()
    assert "\n • milk, two litres\n • eggs\n" in t.screen()
    assert "**" not in t.screen()
    t = terminal("run", STREAM, "--plain")
    t.say("markdown", "eggs")
    assert t.exit() == 0
    assert "Assistant: # Shopping\n\n- **milk**, two litres\n- `eggs`\n" in t.screen()


def test_finish_calls_are_not_shown(terminal: Spawn) -> None:
    t = terminal("run", STREAM)
    t.type("done")
    assert t.exit() == 0
    assert "finish" not in t.screen()


def test_chat_continues_after_a_killed_process(terminal: Spawn, env: dict[str, str]) -> None:
    t = terminal("chat")
    t.say("remember this", "You said: remember this")
    t.expect("You:")
    t.child.kill(signal.SIGKILL)
    t.child.expect(pexpect.EOF)
    t.child.close()
    t = terminal("chat", "-c")
    t.expect("--- continuing the last chat: 2 messages ---")
    t.say("and now?", "You said: and now?")
    assert t.exit() == 0
    assert [m.content for m in history(env) if m.role == "user"] == ["remember this",
                                                                      "and now?"]


def test_run_continue_after_a_killed_process(terminal: Spawn, env: dict[str, str]) -> None:
    t = terminal("run", STREAM)
    t.say("hello", "You said: hello")
    t.expect("You:")
    t.child.kill(signal.SIGKILL)
    t.child.expect(pexpect.EOF)
    t.child.close()
    result = convo_cmd("run", STREAM, "--continue", env=env, stdin="again\n")
    assert result.returncode == 0
    assert result.stdout.startswith("--- resuming the history: replaying 2 saved messages ---\n")
    assert "You: again\nAssistant: You said: again\n" in result.stdout


# --- errors: one line, no traceback --------------------------------------------------------


@pytest.mark.parametrize(("args", "error"), [
    (("chat", "--max-messages", "-3"),
     "convo chat: error: argument --max-messages: must be at least 1, got -3\n"),
    (("run", "x.py", "--max-messages", "many"),
     "convo run: error: argument --max-messages: expected a whole number, got 'many'\n"),
    (("chat", "--base-url", "localhost:8000"),
     "convo chat: error: argument --base-url: expected an http:// or https:// URL such as "
     "http://localhost:8000/v1, got 'localhost:8000'\n"),
    (("chat", "-m", " "), "convo chat: error: argument -m/--model: must not be empty\n"),
])
def test_the_parser_refuses_bad_flags(env: dict[str, str], args: tuple[str, ...],
                                      error: str) -> None:
    result = convo_cmd(*args, env=env)
    assert result.returncode == 2
    assert result.stderr.endswith(error)
    assert "Traceback" not in result.stderr


def test_usage_mistakes_are_one_line(env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    home = env["CONVO_HOME"]
    cases = [
        (("chat", "-c"), f"convo: error: -c: no chat in the history yet ({home}): start one "
                         "with convo chat\n"),
        (("chat", "-c", "-s", "x"), "convo: error: -s/--system starts a new chat; -c "
                                    "continues the last one with its own system prompt: give "
                                    "one or the other\n"),
        (("chat", "-c", "--no-log"), "convo: error: -c continues a chat of the local history, "
                                     "which --no-log turns off: give one or the other\n"),
        (("chat", "--tools", "nope.py"), "convo: error: nope.py does not exist: give a Python "
                                         "file that defines a template\n"),
        (("chat", "--tools", str(empty)), f"convo: error: --tools: {empty} defines no tools: "
                                          "decorate a function with @convo.tool, or list them "
                                          "in tools = [...]\n"),
        (("run", STREAM, "--continue"), f"convo: error: --continue: no conversation with "
                                        f"{STREAM} in the history yet ({home})\n"),
    ]
    for args, error in cases:
        result = convo_cmd(*args, env=env)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", error), args


def test_a_refused_connection_is_one_line(env: dict[str, str]) -> None:
    result = convo_cmd("chat", "--base-url", "http://127.0.0.1:9/v1", env=env, stdin="hi\n")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    last = result.stdout.splitlines()[-1]
    assert last.startswith("--- conversation error: an error: ModelError: ")
    assert "127.0.0.1:9" in last


def test_the_readme_chat_fails_in_one_line(env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "chat.py"
    script.write_text(
        "from convo import (AssistantTemplate, CommandLineRunner, LinearTemplate, "
        "LoopTemplate, OpenAIModel, Session, SystemTemplate, UserTemplate)\n"
        "template = LinearTemplate([SystemTemplate('You teach {{ subject }}.'), "
        "LoopTemplate([UserTemplate(), AssistantTemplate()])])\n"
        "CommandLineRunner(OpenAIModel(base_url='http://127.0.0.1:9/v1', api_key='x'), "
        "template).run(Session(state={'subject': 'math'}))\n")
    result = pexpect.run(f"{sys.executable} {script}", env=env, withexitstatus=True,
                         events={"You:": "hi\r"}, timeout=TIMEOUT, encoding="utf-8")
    output, status = result
    assert status == 1
    assert "Traceback" not in output
    assert output.count("ModelError") == 1
