"""Slash commands: ``/usage`` prices each reply at the list price of the model that made it
(not all of them at the model chosen last with ``/model``), and an unknown command that looks
like a known one asks "did you mean"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_harness import TIMEOUT, convo_cmd, env

from convo import Message, Session
from convo._terminal.slash_commands import Commands
from convo.testing import OpenAIServer

__all__ = ["env"]  # the fixture

MILLION = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}


class Named:
    """A model with a name that /model switches, as OpenAIModel has."""

    def __init__(self, model: str) -> None:
        self.model = model


def _reply(text: str, usage: dict[str, int] = MILLION) -> Message:
    return Message("assistant", text, metadata={"usage": usage})


def test_each_reply_is_priced_at_its_own_models_price() -> None:
    said: list[str] = []
    commands = Commands(say=said.append)
    commands.model = Named("gpt-4o-mini")
    session = Session([Message("user", "hi")])
    assert commands.handle("hi", session) == "hi"
    session.messages.append(_reply("by the mini"))
    commands.handle("/usage", session)
    assert said[-1] == ("1000000 tokens in, 0 out, 1000000 in all, over 1 reply; about $0.15 at "
                        "gpt-4o-mini's list price")
    commands.handle("/model gpt-4o", session)
    session.messages += [Message("user", "and?"), _reply("by gpt-4o")]
    commands.handle("/usage", session)
    assert said[-1] == ("2000000 tokens in, 0 out, 2000000 in all, over 2 replies; about $2.65 "
                        "at list prices (1 reply of gpt-4o-mini, 1 reply of gpt-4o)")
    commands.handle("/model my-llama", session)
    session.messages += [Message("user", "more"), _reply("by llama")]
    commands.handle("/usage", session)
    assert said[-1] == ("3000000 tokens in, 0 out, 3000000 in all, over 3 replies; about $2.65 "
                        "at list prices (1 reply of gpt-4o-mini, 1 reply of gpt-4o); 1 reply of "
                        "models without a known price not counted")


def test_a_reply_dropped_and_asked_again_is_priced_at_the_new_model() -> None:
    said: list[str] = []
    commands = Commands(say=said.append)
    commands.model = Named("gpt-4o")
    session = Session([Message("user", "hi"), _reply("by gpt-4o")])
    commands.handle("/model gpt-4o-mini", session)
    assert commands.handle("/retry", session) == "hi"
    session.messages += [Message("user", "hi"), _reply("by the mini")]
    commands.handle("/usage", session)
    assert said[-1] == ("1000000 tokens in, 0 out, 1000000 in all, over 1 reply; about $0.15 at "
                        "gpt-4o-mini's list price")


def test_usage_in_a_chat_after_model(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    environment.update(CONVO_HOME=str(tmp_path), CONVO_HISTORY="", NO_COLOR="1")
    with OpenAIServer(["Hello there!", "Fine, thanks."]) as server:
        result = subprocess.run(
            [sys.executable, "-m", "convo", "chat", "--no-log", "--base-url", server.base_url,
             "-m", "gpt-4o-mini"], input="hi\n/model gpt-4o\nand?\n/usage\n",
            capture_output=True, text=True, env=environment, timeout=TIMEOUT, check=False)
    assert result.returncode == 0
    assert ("9 tokens in, 4 out, 13 in all, over 2 replies; under a cent at list prices "
            "(1 reply of gpt-4o-mini, 1 reply of gpt-4o)\n") in result.stdout


@pytest.mark.parametrize(("typed", "meant"), [("hlep", "help"), ("sav", "save"),
                                              ("qiut", "quit"), ("usgae", "usage")])
def test_a_typo_asks_did_you_mean(typed: str, meant: str) -> None:
    said: list[str] = []
    assert Commands(say=said.append).handle(f"/{typed}", Session()) is None
    assert said == [f"unknown command /{typed} (did you mean /{meant}?): the commands are "
                    "/help, /exit, /save, /retry, /edit, /branch, /history, /undo, /clear, "
                    "/model, /usage, /tools, /attach, /detach (start the line with // to send "
                    "it as it is)"]


def test_a_typo_in_the_chat(env: dict[str, str]) -> None:
    result = convo_cmd("chat", "--no-log", env=env, stdin="/hlep\n/nonsense\n")
    assert result.returncode == 0
    assert "unknown command /hlep (did you mean /help?): the commands are" in result.stdout
    assert "unknown command /nonsense: the commands are" in result.stdout
