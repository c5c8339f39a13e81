"""A bot file's ``context = ContextWindow(...)`` in every command that runs one: ``convo run``
(and ``--resume``), ``convo chat --tools FILE``, ``convo serve`` and ``create_app(context=)``,
checked by what the model was actually sent; a wrong type is one line naming the file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serve_process_kit import Server
from starlette.testclient import TestClient
from terminal_harness import convo_cmd, env

from convo import ContextWindow, Message
from convo._transcript import read_transcript
from convo.models import FunctionModel
from convo.serve import create_app
from convo.templates import (
    AssistantTemplate,
    LinearTemplate,
    LoopTemplate,
    SystemTemplate,
    UserTemplate,
)
from convo.testing import OpenAIServer

__all__ = ["env"]  # fixtures

# keep_last=2 makes the choice exact whatever the token estimate: the system prompt, then the
# two newest messages (max_tokens is far from reached).
BOT = '''
from convo import (AssistantTemplate, ContextWindow, FunctionModel, LinearTemplate,
                   LoopTemplate, SystemTemplate, UserTemplate)

def sent(messages, tools):
    """Says what it was sent: the roles, and the last message."""
    return f"saw {', '.join(m.role for m in messages)}; last: {messages[-1].content}"

template = LinearTemplate([SystemTemplate("Be brief."),
                           LoopTemplate([UserTemplate(), AssistantTemplate()])])
mock_model = FunctionModel(sent)
context = ContextWindow(1000, keep_last=2)
'''
STARTED = "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"


def _bot(tmp_path: Path, text: str = BOT) -> str:
    path = tmp_path / "bot.py"
    path.write_text(text)
    return str(path)


def test_convo_run_sends_within_the_files_context(env: dict[str, str], tmp_path: Path) -> None:
    bot = _bot(tmp_path)
    save = str(tmp_path / "chat.jsonl")
    result = convo_cmd("run", bot, "--save", save, env=env, stdin="one\ntwo\nthree\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        STARTED
        + "System: Be brief.\n"
        "You: one\n"
        "Assistant: saw system, user; last: one\n"
        "You: two\n"
        "--- context: 1 earlier messages not sent ---\n"
        "Assistant: saw system, assistant, user; last: two\n"
        "You: three\n"
        "--- context: 3 earlier messages not sent ---\n"
        "Assistant: saw system, assistant, user; last: three\n"
        "--- conversation stopped: the user quit or the run was cancelled "
        "(7 messages, 3 model calls) ---\n"
    )
    # The history is whole: only what was sent was bounded.
    saved = read_transcript(save).session
    assert [m.content for m in saved.messages if m.role == "user"] == ["one", "two", "three"]
    assert len(saved.messages) == 7

    resumed = convo_cmd("run", bot, "--resume", save, "--save", save, env=env, stdin="four\n")
    assert resumed.returncode == 0, resumed.stderr
    assert ("You: four\n"
            "--- context: 5 earlier messages not sent ---\n"
            "Assistant: saw system, assistant, user; last: four\n"
            ) in resumed.stdout


def test_convo_run_through_the_sdk_sends_the_window(env: dict[str, str],
                                                    tmp_path: Path) -> None:
    bot = _bot(tmp_path)
    with OpenAIServer(["A1", "A2", "A3"]) as server:
        result = convo_cmd("run", bot, "--base-url", server.base_url, "--no-log", env=env,
                           stdin="one\ntwo\nthree\n")
        sent = [r["messages"] for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert sent == [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"}],
        [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "A1"},
         {"role": "user", "content": "two"}],
        [{"role": "system", "content": "Be brief."}, {"role": "assistant", "content": "A2"},
         {"role": "user", "content": "three"}],
    ]
    assert "--- context: 3 earlier messages not sent ---\n" in result.stdout


def test_convo_chat_takes_the_context_of_its_tools_file(env: dict[str, str],
                                                        tmp_path: Path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text("from convo import ContextWindow, tool\n\n@tool\n"
                     "def add(a: int, b: int) -> int:\n    \"\"\"Add two numbers.\"\"\"\n"
                     "    return a + b\n\ncontext = ContextWindow(4000, keep_last=2)\n")
    with OpenAIServer(["A1", "A2", "A3"]) as server:
        result = convo_cmd("chat", "--base-url", server.base_url, "-s", "Be brief.",
                           "--tools", str(tools), "--no-log", env=env,
                           stdin="one\ntwo\nthree\n")
        sent = [r["messages"] for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert sent[2] == [{"role": "system", "content": "Be brief."},
                       {"role": "assistant", "content": "A2"},
                       {"role": "user", "content": "three"}]
    assert [len(s) for s in sent] == [2, 3, 3]
    assert ("You: three\n--- context: 3 earlier messages not sent ---\nAssistant: A3\n"
            in result.stdout)


def test_a_tools_file_may_bring_only_a_context(env: dict[str, str], tmp_path: Path) -> None:
    window = tmp_path / "window.py"
    window.write_text("from convo import ContextWindow\n\ncontext = ContextWindow(4000, "
                      "keep_last=1)\n")
    with OpenAIServer(["A1", "A2"]) as server:
        result = convo_cmd("chat", "--base-url", server.base_url, "--tools", str(window),
                           "--no-log", env=env, stdin="one\ntwo\n")
        sent = [r["messages"] for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert sent == [[{"role": "user", "content": "one"}], [{"role": "user", "content": "two"}]]
    assert all("tools" not in r for r in server.requests)


def test_convo_serve_sends_within_the_files_context(tmp_path: Path) -> None:
    server = Server("memory", tmp_path, bot=_bot(tmp_path))
    try:
        cid = server.post("/api/conversations").json()["id"]
        for text in ("one", "two"):
            assert server.post(f"/api/conversations/{cid}/messages",
                               {"content": text}).status_code == 200
        last = server.post(f"/api/conversations/{cid}/messages", {"content": "three"}).json()
    finally:
        server.stop()
    assert [m["content"] for m in last["messages"]] == [
        "Be brief.",
        "one", "saw system, user; last: one",
        "two", "saw system, assistant, user; last: two",
        "three", "saw system, assistant, user; last: three",
    ]


def _seen(calls: list[list[Message]]) -> Any:
    def model(messages: Sequence[Message], tools: Any) -> str:
        calls.append(list(messages))
        return f"reply {len(calls)}"
    return FunctionModel(model)


def test_create_app_takes_a_context(tmp_path: Path) -> None:
    calls: list[list[Message]] = []
    template = LinearTemplate([SystemTemplate("Be brief."),
                               LoopTemplate([UserTemplate(), AssistantTemplate()])])
    store = f"sqlite:///{tmp_path / 'c.db'}"
    apps = [create_app(template, _seen(calls), store=store,
                       context=ContextWindow(1000, keep_last=2)) for _ in range(2)]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        cid = one.post("/api/conversations", json={}).json()["id"]
        one.post(f"/api/conversations/{cid}/messages", json={"content": "one"})
        two.post(f"/api/conversations/{cid}/messages", json={"content": "two"})  # rebuilt
        body = one.post(f"/api/conversations/{cid}/messages", json={"content": "three"}).json()
    assert [[m.content for m in call] for call in calls] == [
        ["Be brief.", "one"],
        ["Be brief.", "reply 1", "two"],
        ["Be brief.", "reply 2", "three"],
    ]
    assert len(body["messages"]) == 7  # the stored conversation is whole


def test_a_context_that_is_not_a_window_is_one_line(env: dict[str, str],
                                                    tmp_path: Path) -> None:
    bot = _bot(tmp_path, BOT.replace("context = ContextWindow(1000, keep_last=2)",
                                     "context = 1000"))
    error = (f"convo: error: {bot}: context must be a ContextWindow (context = "
             "ContextWindow(max_tokens=...)), got int\n")
    for command in (("run", bot), ("serve", bot, "--store", "memory"), ("test", bot),
                    ("chat", "--tools", bot)):
        result = convo_cmd(*command, env=env, stdin="hi\n")
        expected = error.replace(f"{bot}:", f"--tools: {bot}:") if command[0] == "chat" \
            else error
        assert (result.returncode, result.stdout, result.stderr) == (2, "", expected), command
