"""Ctrl-C under ``asyncio.run(CommandLineRunner(...).arun())``, a user's own script, in a real
pseudo-terminal: it cancels the reply or the tools only, exactly as under ``run()``.

The script is ``tests/cli_fixtures/arun_chat.py``; it writes the session it got back to a
file. Every Ctrl-C is pressed once the screen shows that the model or the tool is inside its
call (its own output, to the end of its line: the terminal drops output not yet read when
Ctrl-C is pressed), never after a delay.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from terminal_harness import Terminal, child, close_all, user_env

from convo import CommandLineRunner, Message, RunStatus, ScriptedInterface, Session
from convo._terminal.printer import ConsolePrinter
from convo.models import EchoModel
from convo.templates import AssistantTemplate, LoopTemplate, UserTemplate

SCRIPT = str(Path(__file__).resolve().parents[1] / "cli_fixtures" / "arun_chat.py")
STARTED = "--- conversation started (/help for commands, /exit or Ctrl-D to quit) ---\n"
STOPPED = "--- conversation stopped: the user quit or the run was cancelled"
RETURNED = "(arun returned)\n"


class Chat(Terminal):
    """The script in a pseudo-terminal, and the session its ``arun()`` returned."""

    def __init__(self, child: pexpect.spawn, saved: Path) -> None:
        super().__init__(child)
        self.saved = saved

    def session(self) -> Session:
        return Session.from_json(self.saved.read_text())


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Callable[[], Chat]]:
    chats: list[Chat] = []

    def spawn() -> Chat:
        saved = tmp_path / f"session{len(chats)}.json"
        chats.append(Chat(child([SCRIPT, str(saved)], user_env(tmp_path)), saved))
        return chats[-1]

    yield spawn
    close_all(chats)


def test_ctrl_c_cancels_a_streamed_reply_and_keeps_what_came(chat: Callable[[], Chat]) -> None:
    t = chat()
    # streamed: the model awaits inside its call
    t.cancel_then_go_on("hang", "Partial answer",
                        "(reply cancelled with Ctrl-C; the partial reply is kept)",
                        "Assistant: You said: hello")
    assert t.screen() == (
        STARTED + "You: hang\nAssistant: Partial answer\n"
        "  (reply cancelled with Ctrl-C; the partial reply is kept)\n"
        "You: hello\nAssistant: You said: hello\nYou: /exit\n"
        f"{STOPPED} (4 messages, 2 model calls) ---\n" + RETURNED)
    session = t.session()
    assert session.messages == [
        Message("user", "hang"),
        Message("assistant", "Partial answer", metadata={"cancelled": True}),
        Message("user", "hello"), Message("assistant", "You said: hello")]
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    assert session.outcome.model_calls == 2


def test_ctrl_c_cancels_a_model_that_blocks_the_loop(chat: Callable[[], Chat]) -> None:
    t = chat()
    t.type("block")
    # streamed: the model blocks the loop's thread inside its call
    t.interrupt("Half", "(reply cancelled with Ctrl-C; the partial reply is kept)")
    assert t.exit() == 0
    assert t.session().messages == [
        Message("user", "block"), Message("assistant", "Half", metadata={"cancelled": True})]


def test_an_empty_cancelled_reply_is_dropped_before_the_next_prompt(
        chat: Callable[[], Chat]) -> None:
    t = chat()
    t.say("think", "(the model is thinking)\n")
    # the spinner, which clears its line (and the ^C) when it stops
    t.interrupt("thinking… ", "(reply cancelled with Ctrl-C)")
    t.say("hello", "Assistant: You said: hello")
    assert t.exit() == 0
    assert t.screen() == (
        STARTED + "You: think\n(the model is thinking)\n  (reply cancelled with Ctrl-C)\n"
        "You: hello\nAssistant: You said: hello\nYou: /exit\n"
        f"{STOPPED} (2 messages, 2 model calls) ---\n" + RETURNED)
    assert t.session().messages == [Message("user", "hello"),
                                    Message("assistant", "You said: hello")]


def test_ctrl_c_cancels_the_unfinished_tools_of_a_batch(chat: Callable[[], Chat]) -> None:
    t = chat()
    # `quick` is done, `wait` awaits inside its call
    t.cancel_then_go_on("tool", "(the tool is waiting)\n",
                        "↳ wait: Cancelled by the user (Ctrl-C)", "Assistant: You said: hello")
    assert ("You: tool\n  → quick({})\n  → wait({})\n(the tool is waiting)\n"
            "  ↳ quick: done\n  ↳ wait: Cancelled by the user (Ctrl-C)\n"
            "You: hello\n") in t.screen()
    session = t.session()
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "tool"), ("assistant", ""), ("tool", "done"),
        ("tool", "Cancelled by the user (Ctrl-C)"), ("user", "hello"),
        ("assistant", "You said: hello")]
    assert [turn.status for turn in session.turns] == [RunStatus.STOPPED, RunStatus.COMPLETED]
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED


def test_ctrl_c_cancels_a_tool_that_blocks_the_loop(chat: Callable[[], Chat]) -> None:
    t = chat()
    t.type("block tool")
    t.interrupt("(the tool is blocking)\n", "↳ block: Cancelled by the user (Ctrl-C)")
    assert t.exit() == 0
    session = t.session()
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "block tool"), ("assistant", ""), ("tool", "Cancelled by the user (Ctrl-C)")]
    assert session.turns[0].status is RunStatus.STOPPED


def test_a_second_ctrl_c_quits_at_once(chat: Callable[[], Chat]) -> None:
    t = chat()
    t.type("stubborn")
    t.interrupt("(the model is thinking)\n", "(the model ignores Ctrl-C)")
    t.child.sendintr()
    assert t.finish() == 130
    assert t.seen.endswith("\nconvo: interrupted twice, quitting\n")  # and nothing after
    assert not t.saved.exists()  # arun never returned


def test_ctrl_c_at_the_prompt_asks_then_leaves(chat: Callable[[], Chat]) -> None:
    t = chat()
    t.clear_then_ask_to_leave()
    t.expect("You:")
    t.child.sendintr()
    assert t.finish() == 0
    assert t.screen() == (
        STARTED + "You:\n(press Ctrl-C again or Ctrl-D to leave)\nYou:\n"
        f"{STOPPED} (0 messages, 0 model calls) ---\n" + RETURNED)
    session = t.session()
    assert session.messages == []
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED


# --- in this process: the SIGINT comes from os.kill, at a known point --------------------


class AwaitingUser:
    """A user interface whose ``aask`` awaits; the first time, Ctrl-C is pressed meanwhile,
    while the event loop waits (a callback sends SIGINT)."""

    def __init__(self) -> None:
        self.asked = 0

    def ask(self, session: Session, instruction: str | None, default: str | None) -> str:
        raise AssertionError("arun() calls aask")

    async def aask(self, session: Session, instruction: str | None, default: str | None
                   ) -> str:
        self.asked += 1
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
        await asyncio.Event().wait()
        return "never"


def test_ctrl_c_while_an_interface_of_its_own_awaits_stops_the_run() -> None:
    before = signal.getsignal(signal.SIGINT)
    user = AwaitingUser()
    out = io.StringIO()
    runner = CommandLineRunner(EchoModel(), LoopTemplate([UserTemplate(), AssistantTemplate()]),
                               user, printer=ConsolePrinter(out))
    session = asyncio.run(runner.arun())
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    assert (user.asked, session.messages) == (1, [])
    assert out.getvalue().endswith(f"{STOPPED} (0 messages, 0 model calls) ---\n")
    assert signal.getsignal(signal.SIGINT) is before  # put back


def test_ctrl_c_during_a_model_call_under_arun_in_this_process() -> None:
    class Model(EchoModel):
        async def acomplete(self, messages: Any, tools: Any = (), *,
                            on_delta: Any = None) -> Message:
            if messages[-1].content == "wait":
                on_delta("So far")
                asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
                await asyncio.Event().wait()  # the loop waits: Ctrl-C cancels the task
            if messages[-1].content == "block":
                os.kill(os.getpid(), signal.SIGINT)  # in the call's code: KeyboardInterrupt
            return await super().acomplete(messages, tools, on_delta=on_delta)

    out = io.StringIO()
    runner = CommandLineRunner(Model(), LoopTemplate([UserTemplate(), AssistantTemplate()]),
                               ScriptedInterface(["wait", "block", "hi"]),
                               printer=ConsolePrinter(out))
    session = asyncio.run(runner.arun())
    assert [(m.content, m.metadata) for m in session.messages] == [
        ("wait", {}), ("So far", {"cancelled": True}), ("block", {}), ("", {"cancelled": True}),
        ("hi", {}), ("hi", {})]  # (only the terminal's prompt drops an empty cancelled reply)
    assert session.outcome is not None and session.outcome.status is RunStatus.STOPPED
    assert out.getvalue().count("  (reply cancelled with Ctrl-C") == 2
