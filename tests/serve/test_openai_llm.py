"""Simon Willison's `llm` talks to a served bot as to an extra OpenAI-compatible model
(``extra-openai-models.yaml``, API.md §25): a prompt, then a continued conversation (``llm
-c`` sends the whole history, which the face replays), through its CLI and its library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openai_kit import ANN, Counted, served

llm = pytest.importorskip("llm", reason="the llm tests need `pip install llm` (the test extra)")


def configured(home: Path, url: str) -> dict[str, str]:
    """A fresh LLM_USER_PATH with the bot as model ``convo-bot`` and ann's token as its key."""
    home.mkdir()
    (home / "extra-openai-models.yaml").write_text(
        f'- model_id: convo-bot\n  model_name: Chat\n  api_base: "{url}/v1"\n'
        "  api_key_name: convo\n")
    (home / "keys.json").write_text(json.dumps({"convo": ANN}))
    return {**os.environ, "LLM_USER_PATH": str(home)}


def test_llm_prompts_the_bot_and_continues_the_conversation(tmp_path: Path) -> None:
    counted = Counted()
    with served(model=counted.model) as url:
        env = configured(tmp_path / "llm", url)
        cli = [sys.executable, "-m", "llm"]
        first = subprocess.run([*cli, "-m", "convo-bot", "hi"], env=env, capture_output=True,
                               text=True, timeout=120)
        again = subprocess.run([*cli, "-c", "and more"], env=env, capture_output=True,
                               text=True, timeout=120)
        listed = httpx.get(f"{url}/api/conversations",
                           headers={"Authorization": f"Bearer {ANN}"}).json()
        latest = httpx.get(f"{url}/api/conversations/{listed['conversations'][0]['id']}",
                           headers={"Authorization": f"Bearer {ANN}"}).json()
    assert (first.returncode, first.stdout, first.stderr) == (0, "You said 'hi'\n", "")
    assert (again.returncode, again.stdout, again.stderr) == (0, "You said 'and more'\n", "")
    # llm sent the whole history: replayed into a conversation, one model call made for it.
    assert [(m["role"], m["content"]) for m in latest["messages"]][1:] == [
        ("user", "hi"), ("assistant", "You said 'hi'"), ("user", "and more"),
        ("assistant", "You said 'and more'")]
    assert counted.calls == 2


def test_the_llm_library_keeps_a_conversation_with_the_bot(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    with served() as url:
        env = configured(tmp_path / "llm", url)
        monkeypatch.setenv("LLM_USER_PATH", env["LLM_USER_PATH"])
        model = llm.get_model("convo-bot")
        conversation = model.conversation()
        replies = [conversation.prompt(text).text() for text in ("one", "two")]
        unstreamed = model.prompt("three", stream=False).text()
    assert replies == ["You said 'one'", "You said 'two'"]
    assert unstreamed == "You said 'three'"
