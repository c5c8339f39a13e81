"""`convo test` does not show convo's own turn-ending tools (``finish``), as the terminal
and the chat page do not: their effect is shown."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BOT = """
from convo import (FinishTool, FunctionModel, LinearTemplate, LoopTemplate, Message,
                   ToolCall, ToolingTemplate, UserTemplate)

def reply(messages, tools):
    if messages[-1].role == "tool":
        return Message("assistant", "")
    return Message("assistant", "Here you are.", tool_calls=[ToolCall("c1", "finish", {})])

template = LinearTemplate([LoopTemplate([UserTemplate(), ToolingTemplate([FinishTool()])])])
mock_model = FunctionModel(reply)
demo_input = ["A latte, please."]
"""


def test_convo_test_hides_finish(tmp_path: Path) -> None:
    path = tmp_path / "bot.py"
    path.write_text(BOT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(NO_COLOR="1", PYTHONIOENCODING="utf-8")
    result = subprocess.run([sys.executable, "-m", "convo", "test", str(path), "--turns", "1"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert "Assistant: Here you are." in result.stdout, result.stdout + result.stderr
    assert "finish" not in result.stdout
